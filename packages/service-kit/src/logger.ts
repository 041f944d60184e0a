import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger } from 'pino';

/**
 * Paths pino censors in every log line. Secrets are never logged on purpose; this is the second fence for
 * the day someone logs a whole object that happens to carry one.
 */
export const redactedPaths: readonly string[] = [
  'secret',
  'password',
  'token',
  'authorization',
  'contextToken',
  'accessToken',
  'refreshToken',
  'clientSecret',
  'apiKey',
  '*.secret',
  '*.password',
  '*.token',
  '*.authorization',
  '*.contextToken',
  '*.accessToken',
  '*.refreshToken',
  '*.clientSecret',
  '*.apiKey',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
];

/** Creates a service's root logger: JSON lines to stdout, the service name on every line, secrets redacted. */
export function createLogger(options: { service: string; level: LevelWithSilent; instanceId?: string | undefined; extraRedactedPaths?: readonly string[] }): Logger {
  return pino({
    level: options.level,
    base: { service: options.service, ...(options.instanceId ? { instance: options.instanceId } : {}), pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: [...redactedPaths, ...(options.extraRedactedPaths ?? [])], censor: '[redacted]' },
    formatters: { level: (label) => ({ level: label }) },
  });
}
