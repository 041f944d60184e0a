import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** A named readiness check: resolves true when the dependency it watches is usable. */
export interface ReadinessCheck {
  readonly name: string;
  readonly check: (signal: AbortSignal) => Promise<boolean>;
}

/** The operator-facing HTTP endpoints of a service: /healthz, /readyz, /metrics. */
export interface HealthServer {
  /** The bound port (useful when 0 was asked for). */
  readonly port: number;
  /** Marks the service as going away: /readyz answers 503 from now on. */
  markShuttingDown(): void;
  close(): Promise<void>;
}

const checkTimeoutMs = 2_000;

/**
 * Serves /healthz (the process is alive), /readyz (every readiness check passes, so traffic may come) and
 * /metrics (Prometheus text format) on the service's own port.
 */
export async function startHealthServer(options: {
  host: string;
  port: number;
  service: string;
  metrics: Registry;
  checks: readonly ReadinessCheck[];
}): Promise<HealthServer> {
  let shuttingDown = false;

  const readiness = async () => {
    const results = await Promise.all(
      options.checks.map(async ({ name, check }) => {
        try {
          return [name, await check(AbortSignal.timeout(checkTimeoutMs))] as const;
        } catch {
          return [name, false] as const;
        }
      }),
    );
    const checks = Object.fromEntries(results.map(([name, ok]) => [name, ok ? 'ok' : 'failing']));
    return { ready: !shuttingDown && results.every(([, ok]) => ok), checks };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'method not allowed' });
    switch (path) {
      case '/healthz':
        return send(res, 200, { status: 'ok', service: options.service });
      case '/readyz': {
        const { ready, checks } = await readiness();
        return send(res, ready ? 200 : 503, { status: ready ? 'ready' : shuttingDown ? 'shutting down' : 'not ready', service: options.service, checks });
      }
      case '/metrics': {
        const body = await options.metrics.metrics();
        res.writeHead(200, { 'content-type': options.metrics.contentType });
        res.end(body);
        return;
      }
      default:
        return send(res, 404, { error: 'not found' });
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => send(res, 500, { error: 'internal error' }));
  });
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });

  return {
    port: (server.address() as AddressInfo).port,
    markShuttingDown: () => {
      shuttingDown = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
