import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** A service's own HTTP routes, served on the health server's port for every path but /healthz, /readyz and /metrics. */
export type HttpRouteHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** A named readiness check: resolves true when the dependency it watches is usable. */
export interface ReadinessCheck {
  readonly name: string;
  readonly check: (signal: AbortSignal) => Promise<boolean>;
  /**
   * False for a dependency the service does its job without (a read model's store, for a service whose hot path
   * does not read it): failing, it shows as `degraded` and the service stays ready. Default true.
   */
  readonly required?: boolean;
}

/** The operator-facing HTTP endpoints of a service: /healthz, /readyz, /metrics. */
export interface HealthServer {
  /** The bound port (useful when 0 was asked for). */
  readonly port: number;
  /** Marks the service as going away: /readyz answers 503 from now on. */
  markShuttingDown(): void;
  /** Stops accepting, lets requests in flight finish (closing each connection once idle), then resolves. */
  close(): Promise<void>;
}

const checkTimeoutMs = 2_000;

const operatorPaths = new Set(['/healthz', '/readyz', '/metrics']);
/** How often a closing server closes the connections that became idle since (keep-alive ones would wait otherwise). */
const idleSweepMs = 100;

/**
 * Serves /healthz (the process is alive), /readyz (every required readiness check passes, so traffic may come; the
 * body lists each check as `ok`, `failing` or, for one that is not required, `degraded`) and
 * /metrics (Prometheus text format) on the service's own port, and hands every other path to `routes` when the
 * service has routes of its own (404 otherwise).
 */
export async function startHealthServer(options: {
  host: string;
  port: number;
  service: string;
  metrics: Registry;
  checks: readonly ReadinessCheck[];
  routes?: HttpRouteHandler;
}): Promise<HealthServer> {
  let shuttingDown = false;

  const readiness = async () => {
    const results = await Promise.all(
      options.checks.map(async ({ name, check, required = true }) => {
        try {
          return { name, required, ok: await check(AbortSignal.timeout(checkTimeoutMs)) };
        } catch {
          return { name, required, ok: false };
        }
      }),
    );
    const checks = Object.fromEntries(results.map(({ name, required, ok }) => [name, ok ? 'ok' : required ? 'failing' : 'degraded']));
    return { ready: !shuttingDown && results.every(({ required, ok }) => ok || !required), checks };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (options.routes !== undefined && !operatorPaths.has(path)) return options.routes(req, res);
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
        const sweep = setInterval(() => server.closeIdleConnections(), idleSweepMs);
        server.close(() => {
          clearInterval(sweep);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
