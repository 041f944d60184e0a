// The servers a benchmark runs against: fresh NATS and FerretDB from infra/local on free ports (with their metrics
// endpoints and process ids, for costs), or the running ones the environment names.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../infra.js';

const run = promisify(execFile);
// src/bench and dist/bench are both four levels below the repository root.
const repoRoot = path.resolve(import.meta.dirname, '../../../..');

/** NATS and a MongoDB-protocol server for the run, with their metrics endpoints when known. */
export interface BenchInfra {
  readonly natsUrl: string;
  readonly mongoUrl: string;
  /** FerretDB's Prometheus endpoint (per-command request counters), when the harness started it. */
  readonly ferretMetricsUrl: string | undefined;
  /** nats-server's monitoring endpoint, when the harness started it. */
  readonly natsMonitorUrl: string | undefined;
  /** The server processes' ids (for their CPU time), when the harness started them. */
  readonly serverPids: () => Promise<Record<string, number>>;
  readonly stop: () => Promise<void>;
}

/** The running servers (NATS_URL and MONGODB_URL) when `useRunning`, otherwise fresh ones from infra/local on free ports. */
export async function benchInfra(env: NodeJS.ProcessEnv, useRunning: boolean): Promise<BenchInfra> {
  if (useRunning) {
    const natsUrl = env['NATS_URL'];
    const mongoUrl = env['MONGODB_URL'];
    if (!natsUrl || !mongoUrl) throw new Error('--use-running needs NATS_URL and MONGODB_URL');
    return { natsUrl, mongoUrl, ferretMetricsUrl: env['BENCH_FERRETDB_METRICS_URL'], natsMonitorUrl: env['BENCH_NATS_MONITOR_URL'], serverPids: () => Promise.resolve({}), stop: async () => {} };
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'toolplane-bench-'));
  const [natsPort, monitorPort, mongoPort, debugPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const scriptEnv = {
    ...env,
    TOOLPLANE_LOCAL_DIR: dir,
    NATS_PORT: String(natsPort),
    NATS_MONITOR_PORT: String(monitorPort),
    MONGO_PORT: String(mongoPort),
    FERRETDB_DEBUG_PORT: String(debugPort),
  };
  const script = (name: string) => path.join(repoRoot, 'infra/local', name);
  const stop = async () => {
    await run('bash', [script('stop.sh')], { env: scriptEnv });
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await run('bash', [script('start.sh')], { env: scriptEnv });
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    natsUrl: `nats://127.0.0.1:${natsPort}`,
    mongoUrl: `mongodb://127.0.0.1:${mongoPort}`,
    ferretMetricsUrl: `http://127.0.0.1:${debugPort}/debug/metrics`,
    natsMonitorUrl: `http://127.0.0.1:${monitorPort}`,
    serverPids: async () => {
      const pids: Record<string, number> = {};
      for (const name of ['nats-server', 'ferretdb']) {
        const pid = Number((await readFile(path.join(dir, 'run', `${name}.pid`), 'utf8').catch(() => '')).trim());
        if (pid > 0) pids[name] = pid;
      }
      return pids;
    },
    stop,
  };
}
