// A FerretDB of one test's own (the binary infra/local installs), for what the shared server must not go through: being
// stopped and started again under running services.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eventually } from './eventually.js';
import { freePort } from './infra.js';

const binary = path.resolve(import.meta.dirname, '../../../.local/bin/ferretdb');

/** A running private FerretDB (SQLite, in a folder of its own); kill() and restart() keep its data and port. */
export interface PrivateFerretDb {
  /** `mongodb://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** Whether the process runs now. */
  running(): boolean;
  /** Ends it at once (SIGKILL): clients' connections drop and new ones are refused. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data, once it accepts connections. */
  restart(): Promise<void>;
  /** Ends it and removes its data. */
  stop(): Promise<void>;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts FerretDB on free loopback ports and resolves once it accepts connections. */
export async function startPrivateFerretDb(prefix = 'toolplane-ferretdb-'): Promise<PrivateFerretDb> {
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run \`npm run infra:install\``);
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  const [port, debugPort] = [await freePort(), await freePort()];
  const args = ['--handler=sqlite', `--sqlite-url=file:${dir}/`, `--state-dir=${dir}`, `--listen-addr=127.0.0.1:${port}`, `--debug-addr=127.0.0.1:${debugPort}`, '--telemetry=disable', '--log-level=warn'];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let log = '';

  const start = async () => {
    const started = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    started.stderr?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
    child = started;
    exited = new Promise((resolve) => started.once('exit', () => resolve()));
    await eventually(
      `ferretdb on port ${port}`,
      async () => {
        if (started.exitCode !== null) throw new Error(`ferretdb exited with code ${started.exitCode}: ${log}`);
        return (await accepts(port)) ? true : undefined;
      },
      30_000,
      50,
    );
  };
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  const kill = async () => {
    if (running()) child?.kill('SIGKILL');
    await exited;
  };

  await start();
  return {
    url: `mongodb://127.0.0.1:${port}`,
    port,
    running,
    kill,
    restart: async () => {
      await kill();
      await start();
    },
    stop: async () => {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
