// The approval console as a process beside a harness platform: its composition root from source, on a free port,
// over the platform's NATS, trusting the platform's tokens, the way the services themselves run in these tests.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { freePort } from '@toolplane/testing';
import type { Platform } from './platform-harness.js';
import { waitForStatus, type ServiceProcess } from './service-process.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');

/** A running console and where a browser reaches it. */
export interface ConsoleProcess {
  readonly service: ServiceProcess;
  /** Its origin, e.g. http://127.0.0.1:PORT (no trailing slash). */
  readonly url: string;
  /** SIGTERM, then waits for the exit. */
  readonly stop: () => Promise<void>;
}

/** Starts services/console/src/main.ts for `platform` and waits until it answers 200 on /readyz. */
export async function startConsole(platform: Platform, env: Readonly<Record<string, string>> = {}): Promise<ConsoleProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--conditions=@toolplane/source', '--import', 'tsx', path.join(repoRoot, 'services/console/src/main.ts')], {
    cwd: repoRoot,
    env: {
      PATH: process.env['PATH'] ?? '',
      NATS_URL: platform.messaging.url,
      HTTP_PORT: String(port),
      TOOLPLANE_TRUSTED_KEYS: platform.trustedKeys,
      // A key of this run alone: sessions of another run's console mean nothing here.
      CONSOLE_SESSION_KEY: randomBytes(32).toString('base64url'),
      CONSOLE_PUBLIC_URL: url,
      LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'info',
      SHUTDOWN_TIMEOUT_MS: '5000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const service: ServiceProcess = { child, stdout: () => out, stderr: () => err, exited };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    await waitForStatus(`${url}/readyz`, service, 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { service, url, stop };
}
