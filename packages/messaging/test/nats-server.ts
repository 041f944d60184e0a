// A nats-server of one test file's own (the binary infra/local installs), for what the shared server must not see:
// a restart under a connected client, or an authorization configuration.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '@toolplane/testing';
import { eventually } from './support.js';

const binary = path.resolve(import.meta.dirname, '../../../.local/bin/nats-server');

/** A running private nats-server with JetStream on file storage. */
export interface PrivateNatsServer {
  readonly port: number;
  /** `nats://127.0.0.1:<port>`, or with the user's credentials. */
  url(credentials?: { readonly user: string; readonly pass: string }): string;
  /**
   * Stops it (SIGTERM) and starts it again on the same port and store, `downMs` later (default at once); resolves once
   * it answers again.
   */
  restart(options?: { readonly downMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a nats-server on free loopback ports; `config` is appended to its configuration file (e.g. `authorization { … }`). */
export async function startPrivateNatsServer(config = ''): Promise<PrivateNatsServer> {
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run \`npm run infra:install\``);
  const dir = await mkdtemp(path.join(tmpdir(), 'messaging-nats-'));
  const [port, monitorPort] = [await freePort(), await freePort()];
  const file = path.join(dir, 'nats-server.conf');
  await writeFile(file, [`listen: 127.0.0.1:${port}`, `http: 127.0.0.1:${monitorPort}`, `jetstream { store_dir: ${JSON.stringify(path.join(dir, 'store'))} }`, config, ''].join('\n'));
  let child: ChildProcess | undefined;
  let exited = Promise.resolve();
  let log = '';

  const start = async () => {
    const started = spawn(binary, ['-c', file], { stdio: ['ignore', 'ignore', 'pipe'] });
    started.stderr?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
    child = started;
    exited = new Promise((resolve) => started.once('exit', () => resolve()));
    await eventually(`nats-server on ${port} ready`, async () => {
      if (started.exitCode !== null) throw new Error(`nats-server exited with code ${started.exitCode}: ${log}`);
      return fetch(`http://127.0.0.1:${monitorPort}/healthz?js-enabled-only=true`).then((response) => response.ok, () => false);
    }, 15_000);
  };
  const halt = async () => {
    if (child === undefined || child.exitCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child?.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };

  await start();
  return {
    port,
    url: (credentials) => (credentials === undefined ? `nats://127.0.0.1:${port}` : `nats://${credentials.user}:${credentials.pass}@127.0.0.1:${port}`),
    restart: async (options = {}) => {
      await halt();
      if (options.downMs !== undefined) await new Promise((resolve) => setTimeout(resolve, options.downMs));
      await start();
    },
    stop: async () => {
      await halt();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
