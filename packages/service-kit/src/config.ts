import { z } from 'zod';
import { inboxPrefixPattern } from '@toolplane/messaging';

/** A configuration problem, reported by a service as one line naming the setting. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const natsSchemes = new Set(['nats:', 'tls:', 'ws:', 'wss:']);
const mongoSchemes = new Set(['mongodb:', 'mongodb+srv:']);

function urlList(schemes: Set<string>, example: string) {
  return z
    .string({ error: (issue) => (issue.input === undefined ? `is missing (e.g. ${example})` : `must be a string`) })
    .trim()
    .min(1, `is empty (e.g. ${example})`)
    .refine(
      (value) =>
        value.split(',').every((part) => {
          try {
            return schemes.has(new URL(part.trim()).protocol);
          } catch {
            return false;
          }
        }),
      { error: `must be a ${[...schemes].map((s) => `${s}//`).join(' or ')} URL (e.g. ${example})` },
    );
}

/** NATS_URL: one or more comma-separated nats:// (or tls://, ws://, wss://) server URLs. */
export const natsUrlSetting = urlList(natsSchemes, 'nats://127.0.0.1:4222');
/** MONGODB_URL: a mongodb:// or mongodb+srv:// connection string. */
export const mongoUrlSetting = z
  .string({ error: (issue) => (issue.input === undefined ? 'is missing (e.g. mongodb://127.0.0.1:27017)' : 'must be a string') })
  .trim()
  .refine((value) => [...mongoSchemes].some((scheme) => value.startsWith(`${scheme}//`)), {
    error: 'must be a mongodb:// or mongodb+srv:// URL (e.g. mongodb://127.0.0.1:27017)',
  });

/** A TCP port number given as a string in the environment. */
export function portSetting(defaultPort: number) {
  return z.coerce
    .number({ error: 'must be a port number' })
    .int('must be a whole port number')
    .min(0, 'must be between 0 and 65535')
    .max(65535, 'must be between 0 and 65535')
    .default(defaultPort);
}

/** A positive duration in milliseconds given as a string in the environment. */
export function millisecondsSetting(defaultMs: number) {
  return z.coerce.number({ error: 'must be a number of milliseconds' }).int('must be whole milliseconds').positive('must be positive').default(defaultMs);
}

/** TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S: how long after its expiry (and before its nbf/iat) a token is still accepted. */
export const tokenClockToleranceSetting = z.coerce
  .number({ error: 'must be a number of seconds (0-300)' })
  .int('must be whole seconds (0-300)')
  .min(0, 'must be between 0 and 300 seconds')
  .max(300, 'must be between 0 and 300 seconds')
  .default(30);

/**
 * NATS_STREAM_REPLICAS: the copies JetStream keeps of every stream and bucket the service declares (durable
 * consumers inherit their stream's): 1 on one server, 3 on a three-node cluster.
 */
export const streamReplicasSetting = z
  .enum(['1', '3'], { error: 'must be 1 (one NATS server) or 3 (a three-node NATS cluster)' })
  .default('1')
  .transform((value) => Number(value));

/** The settings every Toolplane service reads from its environment. */
export function baseServiceConfig(defaults: { httpPort: number }) {
  return z.object({
    NATS_URL: natsUrlSetting,
    NATS_STREAM_REPLICAS: streamReplicasSetting,
    MONGODB_URL: mongoUrlSetting,
    MONGODB_DATABASE: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,63}$/, 'must be 1-63 letters, digits, _ or -')
      .default('toolplane'),
    HTTP_HOST: z.string().min(1, 'is empty').default('127.0.0.1'),
    HTTP_PORT: portSetting(defaults.httpPort),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { error: 'must be one of fatal, error, warn, info, debug, trace, silent' }).default('info'),
    /**
     * How long a MongoDB operation looks for a server before it fails as TEMPORARY_UNAVAILABLE. The start does not
     * wait for MongoDB: a service runs without it and catches up once it answers.
     */
    MONGODB_CONNECT_TIMEOUT_MS: millisecondsSetting(10_000),
    SHUTDOWN_TIMEOUT_MS: millisecondsSetting(10_000),
    INSTANCE_ID: z.string().min(1).optional(),
    /** Clock skew forgiven when verifying tokens; every createTokenVerifier is given it. */
    TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S: tokenClockToleranceSetting,
    /** Where the service's request replies and JetStream acknowledgements arrive (default NATS's `_INBOX`), for a NATS user confined to it. */
    NATS_INBOX_PREFIX: z
      .string()
      .max(200, 'must be at most 200 characters')
      .regex(inboxPrefixPattern, 'must be 1-16 dot-separated tokens of letters, digits, _ or - (e.g. _INBOX_registry)')
      .optional(),
  });
}

/** The parsed settings every service has. */
export type BaseServiceConfig = z.infer<ReturnType<typeof baseServiceConfig>>;

/** The settings of a service without MongoDB (a `store: 'none'` definition): the base settings less MongoDB's. */
export function storelessServiceConfig(defaults: { httpPort: number }) {
  return baseServiceConfig(defaults).omit({ MONGODB_URL: true, MONGODB_DATABASE: true, MONGODB_CONNECT_TIMEOUT_MS: true });
}

/** The parsed settings of a service without MongoDB. */
export type StorelessServiceConfig = z.infer<ReturnType<typeof storelessServiceConfig>>;

/**
 * Parses a service's settings from its environment. On failure throws a ConfigError whose message is one
 * line naming the first bad setting, e.g. `NATS_URL is missing (e.g. nats://127.0.0.1:4222)`.
 */
export function loadConfig<T extends z.ZodType>(schema: T, env: Record<string, string | undefined>): z.infer<T> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const setting = issue?.path.map(String).join('.') || 'configuration';
  throw new ConfigError(`${setting} ${issue?.message ?? 'is invalid'}`);
}
