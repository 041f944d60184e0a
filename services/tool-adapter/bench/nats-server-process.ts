// A private nats-server of the benchmark (the binary infra/local installs), from a config file so that JetStream's
// flush can be set: `sync_interval: always` fsyncs every write before its ack, as docker-compose.yml runs it. It can
// be restarted on the same store and ports with the other setting (the preload fills it at the default flush).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { freePort } from '@toolplane/testing';

const repoRoot = path.resolve(import.meta.dirname, '../../..');
const binary = path.join(repoRoot, '.local/bin/nats-server');

/** A running nats-server with JetStream on file storage and an HTTP monitoring port. */
export interface NatsServerProcess {
  readonly url: string;
  readonly monitorUrl: string;
  pid(): number;
  /** Stops it and starts it again on the same store and ports, flushing as `syncAlways` says. */
  restart(syncAlways: boolean): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a nats-server storing under `dir`; `syncAlways` sets `jetstream { sync_interval: always }`. */
export async function startNatsServer(dir: string, syncAlways: boolean): Promise<NatsServerProcess> {
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run \`npm run infra:install\``);
  const [port, monitorPort] = [await freePort(), await freePort()];
  const monitorUrl = `http://127.0.0.1:${monitorPort}`;
  await mkdir(path.join(dir, 'store'), { recursive: true });
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async (always: boolean) => {
    const config = path.join(dir, 'nats-server.conf');
    await writeFile(
      config,
      [
        `listen: 127.0.0.1:${port}`,
        `http: 127.0.0.1:${monitorPort}`,
        `server_name: bench-${always ? 'sync-always' : 'default-flush'}-${port}`,
        `jetstream { store_dir: ${JSON.stringify(path.join(dir, 'store'))}${always ? ', sync_interval: always' : ''} }`,
        '',
      ].join('\n'),
    );
    const started = spawn(binary, ['-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    started.stderr?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
    child = started;
    exited = new Promise((resolve) => started.once('exit', () => resolve()));
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (started.exitCode !== null) throw new Error(`nats-server exited with code ${started.exitCode}: ${log}`);
      const ready = await fetch(`${monitorUrl}/healthz?js-enabled-only=true`).then((response) => response.ok, () => false);
      if (ready) return;
      if (Date.now() > deadline) throw new Error(`nats-server was not ready within 15 s: ${log}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const stop = async () => {
    if (child === undefined || child.exitCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child?.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };

  await start(syncAlways);
  return {
    url: `nats://127.0.0.1:${port}`,
    monitorUrl,
    pid: () => child?.pid ?? 0,
    restart: async (always) => {
      await stop();
      await start(always);
    },
    stop,
  };
}
