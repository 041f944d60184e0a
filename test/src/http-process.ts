// The HTTP-facing processes beside a harness platform (the MCP endpoint, the console): a composition root from source,
// on a free port, over the platform's NATS, trusting the platform's tokens, the way the services run in these tests.
import { randomBytes } from 'node:crypto';
import { freePort } from '@toolplane/testing';
import type { Platform } from './platform-harness.js';
import { spawnService, waitForStatus, type ServiceProcess } from './service-process.js';

/** A running process and where clients reach it. */
export interface HttpProcess {
  readonly service: ServiceProcess;
  /** Its origin, e.g. http://127.0.0.1:PORT (no trailing slash). */
  readonly url: string;
  /** SIGTERM, then waits for the exit. */
  readonly stop: () => Promise<void>;
}

/** Starts `services/<name>/src/main.ts` for `platform` with `env(url)` besides the basics; resolves once /readyz answers 200. */
export async function startHttpProcess(name: 'mcp-endpoint' | 'console', platform: Platform, env: (url: string) => Readonly<Record<string, string>> = () => ({})): Promise<HttpProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const service = spawnService(name, {
    NATS_URL: platform.messaging.url,
    HTTP_PORT: String(port),
    TOOLPLANE_TRUSTED_KEYS: platform.trustedKeys,
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'info',
    SHUTDOWN_TIMEOUT_MS: '5000',
    ...env(url),
  });
  const stop = async () => {
    if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGTERM');
    await service.exited;
  };
  try {
    await waitForStatus(`${url}/readyz`, service, 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { service, url, stop };
}

/** The approval console for `platform`, with a session key of this run alone (another run's sessions mean nothing here). */
export function startConsole(platform: Platform, env: Readonly<Record<string, string>> = {}): Promise<HttpProcess> {
  return startHttpProcess('console', platform, (url) => ({ CONSOLE_SESSION_KEY: randomBytes(32).toString('base64url'), CONSOLE_PUBLIC_URL: url, ...env }));
}
