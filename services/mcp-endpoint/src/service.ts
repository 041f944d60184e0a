// The endpoint's wiring onto the service kit: configuration in, its routes out. No MongoDB (`store: 'none'`): the
// endpoint reads nothing itself; every list and call goes to the adapter over NATS as the calling agent. The kit
// serves the routes beside /healthz, /readyz and /metrics and drains in order: stop taking requests (the
// notification streams end as the shutdown begins), let in-flight ones finish, then close NATS.
import { createTokenVerifier } from '@toolplane/auth';
import { workspaceClients } from '@toolplane/client';
import { serviceMetrics, startService, type Logger, type StorelessServiceDefinition } from '@toolplane/service-kit';
import { governedReads } from './app/governed-reads.js';
import { governedTools } from './app/governed-tools.js';
import { InFlightCalls } from './app/in-flight-calls.js';
import { TokenRateLimits } from './app/token-rate-limits.js';
import { ToolListStreams } from './app/tool-list-streams.js';
import { ToolNames } from './app/tool-names.js';
import { endpointMetrics } from './adapters/endpoint-metrics.js';
import { endpointRoutes } from './adapters/http-server.js';
import { mcpProtocol } from './adapters/mcp-protocol.js';
import { watchToolSetSources } from './adapters/tool-set-watch.js';
import { mcpEndpointConfig, type McpEndpointConfig } from './config.js';

/** What the endpoint calls itself at initialize. */
export const endpointIdentity = { name: 'toolplane', version: '0.1.0' } as const;

/** How long a scope's read models stay quiet before its notification streams look at their tool sets again. */
const LIST_CHANGE_QUIET_MS = 50;

/** Tokens one replica keeps rate counts for at most (a few hundred bytes each); past it, idle ones go first. */
const RATE_LIMIT_MAX_TOKENS = 100_000;

/** A started endpoint. */
export interface RunningEndpoint {
  readonly port: number;
  /** The base URL; a workspace's endpoint is `${url}/mcp/<tenant>/<workspace>`. */
  readonly url: string;
  readonly logger: Logger;
  /** Stops taking requests, lets in-flight ones finish, then closes NATS; resolves true when all was clean. */
  stop(): Promise<boolean>;
}

/** The base URL clients reach the endpoint at: the configured public URL, else the bound address. */
function publicUrlOf(config: McpEndpointConfig, port: number): string {
  return config.MCP_ENDPOINT_PUBLIC_URL ?? `http://${config.HTTP_HOST.includes(':') ? `[${config.HTTP_HOST}]` : config.HTTP_HOST}:${port}`;
}

/** The endpoint as a service definition; `onUrl` hears its public base URL once it listens. */
export function mcpEndpointService(hooks: { readonly onUrl?: (url: string) => void } = {}): StorelessServiceDefinition<McpEndpointConfig> {
  return {
    name: 'mcp-endpoint',
    store: 'none',
    config: mcpEndpointConfig,
    start: (context) => {
      const { config, logger, messaging } = context;
      if (Object.keys(config.TOOLPLANE_TRUSTED_KEYS).length === 0) logger.warn('TOOLPLANE_TRUSTED_KEYS names no tenant: every request will be refused');
      const clients = workspaceClients(messaging, 'the endpoint sends every request with its caller’s token');
      context.onShutdown('clients', clients.close);

      const verifier = createTokenVerifier(config.TOOLPLANE_TRUSTED_KEYS, { clockToleranceSeconds: config.TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S });
      const mcpLog = logger.child({ component: 'mcp' });
      const names = new ToolNames();
      const tools = governedTools({ clientFor: clients.clientFor, defaultTimeoutMs: config.MCP_ENDPOINT_CALL_TIMEOUT_MS, approvalProbeMs: config.MCP_ENDPOINT_APPROVAL_PROBE_MS, names });
      const reads = governedReads({ clientFor: clients.clientFor, defaultTimeoutMs: config.MCP_ENDPOINT_CALL_TIMEOUT_MS });

      const streamLog = logger.child({ component: 'streams' });
      const streams = new ToolListStreams({
        list: (caller, signal) => tools.lists(caller, signal),
        maxStreams: config.MCP_ENDPOINT_MAX_STREAMS,
        debounceMs: LIST_CHANGE_QUIET_MS,
        onError: (err, what) => mcpLog.warn({ err }, what),
        onEvent: ({ type, caller, changed, streams: open }) => {
          const who = { tenant: caller.scope.tenant, workspace: caller.scope.workspace, agentId: caller.claims.agentId, streams: open };
          if (type === 'looked') streamLog.debug({ ...who, changed }, 'tool set looked at again');
          else streamLog.info(who, type === 'opened' ? 'notification stream opened' : 'notification stream ended');
        },
      });
      // The streams end as the shutdown begins, before the HTTP server closes: they would hold it (and the drain) up.
      context.signal.addEventListener('abort', () => streams.closeAll(), { once: true });
      const watchLog = logger.child({ component: 'tool-set-watch' });
      const watch = watchToolSetSources(messaging, { onChange: (change) => {
          names.changed(change);
          streams.changed(change);
        }, onProblem: (problem) => watchLog.warn(problem, 'tool set watch problem') });
      context.onShutdown('tool-set-watch', () => Promise.resolve(watch.close()));

      const metrics = endpointMetrics(serviceMetrics(context.metrics), () => streams.size);
      const inFlight = new InFlightCalls();
      const protocol = mcpProtocol({ identity: endpointIdentity, tools, reads, inFlight, onError: (err) => mcpLog.warn({ err }, 'MCP protocol error'), metrics });
      context.onShutdown('mcp-protocol', () => protocol.close());
      const routes = endpointRoutes({
        host: config.HTTP_HOST,
        allowedOrigins: config.MCP_ENDPOINT_ALLOWED_ORIGINS,
        authorizationServers: config.MCP_ENDPOINT_AUTHORIZATION_SERVERS,
        maxBodyBytes: config.MCP_ENDPOINT_MAX_BODY_BYTES,
        verifier,
        protocol,
        inFlight,
        streams,
        rateLimits:
          config.MCP_ENDPOINT_TOKEN_RATE_LIMIT === 0
            ? undefined
            : new TokenRateLimits({ limit: config.MCP_ENDPOINT_TOKEN_RATE_LIMIT, windowMs: config.MCP_ENDPOINT_TOKEN_RATE_WINDOW_MS, maxKeys: RATE_LIMIT_MAX_TOKENS }),
        signal: context.signal,
        logger: logger.child({ component: 'http' }),
        metrics,
      });
      context.serveHttp(routes.handle);
      context.onListening(({ port }) => {
        const url = publicUrlOf(config, port);
        routes.listening(port, url);
        logger.info({ url }, 'serving MCP at url/mcp/<tenant>/<workspace>');
        hooks.onUrl?.(url);
      });
      return Promise.resolve();
    },
  };
}

/** Starts the endpoint in this process from its environment (tests, embedding). */
export async function startMcpEndpoint(env: Record<string, string | undefined>): Promise<RunningEndpoint> {
  let url = '';
  const service = await startService(mcpEndpointService({ onUrl: (bound) => (url = bound) }), env);
  return { port: service.port, url, logger: service.logger, stop: () => service.stop() };
}
