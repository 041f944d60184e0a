// The servers a benchmark runs against: fresh NATS and FerretDB from infra/local on free ports (with their metrics
// endpoints and process ids, for costs), or the running ones the environment names.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { startLocalServers } from '../infra.js';

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
  const servers = await startLocalServers('toolplane-bench-', env);
  return {
    natsUrl: servers.natsUrl,
    mongoUrl: servers.mongoUrl,
    ferretMetricsUrl: `http://127.0.0.1:${servers.ferretDebugPort}/debug/metrics`,
    natsMonitorUrl: `http://127.0.0.1:${servers.natsMonitorPort}`,
    serverPids: async () => {
      const pids: Record<string, number> = {};
      for (const name of ['nats-server', 'ferretdb']) {
        const pid = Number((await readFile(path.join(servers.dir, 'run', `${name}.pid`), 'utf8').catch(() => '')).trim());
        if (pid > 0) pids[name] = pid;
      }
      return pids;
    },
    stop: servers.stop,
  };
}
