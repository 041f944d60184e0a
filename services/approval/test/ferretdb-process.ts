// A FerretDB of a test's own, to stop and start again under a running service (the shared one serves other tests).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eventually, freePort } from '@toolplane/testing';

const binary = path.resolve(import.meta.dirname, '../../../.local/bin/ferretdb');

/** A FerretDB process on SQLite in a directory of its own; kill() and restart() keep the data. */
export interface FerretDbProcess {
  readonly url: string;
  kill(): Promise<void>;
  restart(): Promise<void>;
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

/** Starts FerretDB and resolves once it accepts connections. */
export async function startFerretDb(): Promise<FerretDbProcess> {
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run \`npm run infra:install\``);
  const dir = await mkdtemp(path.join(tmpdir(), 'approval-ferretdb-'));
  const [port, debugPort] = [await freePort(), await freePort()];
  const args = ['--handler=sqlite', `--sqlite-url=file:${dir}/`, `--state-dir=${dir}`, `--listen-addr=127.0.0.1:${port}`, `--debug-addr=127.0.0.1:${debugPort}`, '--telemetry=disable', '--log-level=warn'];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const start = async () => {
    const started = spawn(binary, args, { stdio: 'ignore' });
    child = started;
    exited = new Promise((resolve) => started.once('exit', () => resolve()));
    await eventually(`ferretdb on port ${port}`, async () => ((await accepts(port)) ? true : undefined), 30_000, 50);
  };
  const kill = async () => {
    child?.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url: `mongodb://127.0.0.1:${port}`,
    kill,
    restart: start,
    stop: async () => {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
