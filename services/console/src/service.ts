// The console's wiring onto the service kit: configuration in, its routes out. No MongoDB (`store: 'none'`): the
// console holds no data; every read and decision is a NATS request to the owning service with the signed-in
// operator's token. At shutdown the live streams end first (they would hold the HTTP drain up), then the event
// subscriptions and the SDK clients, then the kit closes HTTP and NATS.
import { randomBytes } from 'node:crypto';
import { createTokenVerifier } from '@toolplane/auth';
import { workspaceClients } from '@toolplane/client';
import { serviceMetrics, startService, StartupError, type Logger, type StorelessServiceDefinition } from '@toolplane/service-kit';
import { ApprovalsHub } from './app/approvals-hub.js';
import { approvalEventWatch } from './adapters/approval-events.js';
import { loadAssets } from './adapters/assets.js';
import { consoleMetrics } from './adapters/console-metrics.js';
import { consoleRoutes } from './adapters/http-routes.js';
import { natsServiceCaller } from './adapters/nats-caller.js';
import { consoleConfig, type ConsoleConfig } from './config.js';
import { pendingFragment } from './core/approvals-page.js';

/** How often an idle live stream sends a keep-alive comment. */
const KEEP_ALIVE_MS = 15_000;

/** A started console. */
export interface RunningConsole {
  readonly port: number;
  /** The base URL operators reach it at. */
  readonly url: string;
  readonly logger: Logger;
  /** Ends the live streams, lets in-flight requests finish, then closes NATS; resolves true when all was clean. */
  stop(): Promise<boolean>;
}

/** The base URL: the configured public URL, else the bound address. */
function publicUrlOf(config: ConsoleConfig, port: number): string {
  return config.CONSOLE_PUBLIC_URL ?? `http://${config.HTTP_HOST.includes(':') ? `[${config.HTTP_HOST}]` : config.HTTP_HOST}:${port}`;
}

/** The console as a service definition; `onUrl` hears its base URL once it listens. */
export function consoleService(hooks: { readonly onUrl?: (url: string) => void } = {}): StorelessServiceDefinition<ConsoleConfig> {
  return {
    name: 'console',
    store: 'none',
    config: consoleConfig,
    start: async (context) => {
      const { config, logger, messaging } = context;
      if (Object.keys(config.TOOLPLANE_TRUSTED_KEYS).length === 0) logger.warn('TOOLPLANE_TRUSTED_KEYS names no tenant: every sign-in will be refused');
      let assets;
      try {
        assets = await loadAssets();
      } catch (error) {
        throw new StartupError(`the console's assets cannot be read: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      const verifier = createTokenVerifier(config.TOOLPLANE_TRUSTED_KEYS, { clockToleranceSeconds: config.TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S });
      const call = natsServiceCaller(messaging, config.CONSOLE_REQUEST_TIMEOUT_MS);
      const clients = workspaceClients(messaging, 'the console follows events only; it invokes nothing');
      context.onShutdown('clients', clients.close);

      const liveLog = logger.child({ component: 'live' });
      const hub = new ApprovalsHub({
        call,
        watch: approvalEventWatch(clients.clientFor),
        render: (items, operator) => pendingFragment(items, { principal: operator.claims.principal, roles: operator.claims.roles, workspace: operator.scope.workspace, workspaces: operator.claims.workspaces, csrf: operator.csrf }).value,
        maxPages: config.CONSOLE_MAX_STREAMS,
        onProblem: (err, what, scope) => liveLog.warn({ err, tenant: scope.tenant, workspace: scope.workspace }, `${what} failed`),
      });
      // Streams end as the shutdown begins, before the HTTP server closes: open ones would hold its drain up.
      let hubClosed: Promise<void> | undefined;
      context.signal.addEventListener(
        'abort',
        () => {
          hubClosed = hub.closeAll();
        },
        { once: true },
      );
      context.onShutdown('live-approvals', () => hubClosed ?? hub.closeAll());

      context.serveHttp(
        consoleRoutes({
          sessions: { key: config.CONSOLE_SESSION_KEY, verifier, randomBytes: (size) => randomBytes(size), now: Date.now },
          call,
          hub,
          assets,
          publicUrl: config.CONSOLE_PUBLIC_URL,
          maxBodyBytes: config.CONSOLE_MAX_BODY_BYTES,
          auditTimeoutMs: config.CONSOLE_AUDIT_TIMEOUT_MS,
          keepAliveMs: KEEP_ALIVE_MS,
          signal: context.signal,
          logger: logger.child({ component: 'http' }),
          metrics: consoleMetrics(serviceMetrics(context.metrics), () => hub.size),
        }),
      );
      context.onListening(({ port }) => {
        const url = publicUrlOf(config, port);
        logger.info({ url }, 'console at url (sign in at url/sign-in)');
        hooks.onUrl?.(url);
      });
    },
  };
}

/** Starts the console in this process from its environment (tests, embedding). */
export async function startConsole(env: Record<string, string | undefined>): Promise<RunningConsole> {
  let url = '';
  const service = await startService(consoleService({ onUrl: (bound) => (url = bound) }), env);
  return { port: service.port, url, logger: service.logger, stop: () => service.stop() };
}
