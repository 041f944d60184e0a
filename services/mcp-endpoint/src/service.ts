// The endpoint's wiring: configuration in, connections and the HTTP server out. No MongoDB: the endpoint reads
// nothing itself; every list and call goes to the adapter over NATS as the calling agent.
import { createTokenVerifier } from '@toolplane/auth';
import { createToolplaneClient, type ToolplaneClient } from '@toolplane/client';
import { ToolplaneError, type Scope } from '@toolplane/contracts';
import { connectMessaging, type Messaging } from '@toolplane/messaging';
import { ConfigError, ShutdownStack, StartupError, createLogger, loadConfig, redactUrl, type Logger } from '@toolplane/service-kit';
import { governedTools } from './app/governed-tools.js';
import { InFlightCalls } from './app/in-flight-calls.js';
import { TokenRateLimits } from './app/token-rate-limits.js';
import { ToolListStreams } from './app/tool-list-streams.js';
import { startEndpointHttp } from './adapters/http-server.js';
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

/** One agent-runtime client per workspace over the endpoint's one connection; every request brings its own token. */
function workspaceClients(messaging: Messaging): { clientFor: (scope: Scope) => Promise<ToolplaneClient>; close: () => Promise<void> } {
  const clients = new Map<string, Promise<ToolplaneClient>>();
  const noToken = () => {
    throw new ToolplaneError('AUTHENTICATION_FAILED', 'the endpoint sends every request with its caller’s token');
  };
  return {
    clientFor: (scope) => {
      const key = `${scope.tenant}/${scope.workspace}`;
      let client = clients.get(key);
      if (client === undefined) {
        client = createToolplaneClient({ scope, contextToken: noToken, messaging });
        clients.set(key, client);
      }
      return client;
    },
    close: async () => {
      await Promise.all([...clients.values()].map(async (client) => (await client).close()));
    },
  };
}

/** Starts the endpoint in this process from its environment. */
export async function startMcpEndpoint(env: Record<string, string | undefined>): Promise<RunningEndpoint> {
  let config: McpEndpointConfig;
  try {
    config = loadConfig(mcpEndpointConfig, env);
  } catch (error) {
    if (error instanceof ConfigError) throw new StartupError(`invalid configuration: ${error.message}`);
    throw error;
  }
  const logger = createLogger({ service: 'mcp-endpoint', level: config.LOG_LEVEL, instanceId: config.INSTANCE_ID });
  if (Object.keys(config.TOOLPLANE_TRUSTED_KEYS).length === 0) logger.warn('TOOLPLANE_TRUSTED_KEYS names no tenant: every request will be refused');
  const shutdown = new ShutdownStack(logger);

  const natsLog = logger.child({ component: 'nats' });
  let messaging: Messaging;
  try {
    messaging = await connectMessaging({
      url: config.NATS_URL,
      name: 'toolplane-mcp-endpoint',
      ...(config.NATS_INBOX_PREFIX === undefined ? {} : { inboxPrefix: config.NATS_INBOX_PREFIX }),
      onStatus: (status) => natsLog.info({ status }, `nats ${status.type}`),
    });
  } catch (error) {
    throw new StartupError(`NATS_URL: cannot connect to NATS: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  shutdown.push('nats', () => messaging.drain());
  const clients = workspaceClients(messaging);
  shutdown.push('clients', clients.close);

  const verifier = createTokenVerifier(config.TOOLPLANE_TRUSTED_KEYS, { clockToleranceSeconds: config.TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S });
  const mcpLog = logger.child({ component: 'mcp' });
  const tools = governedTools({ clientFor: clients.clientFor, defaultTimeoutMs: config.MCP_ENDPOINT_CALL_TIMEOUT_MS, approvalProbeMs: config.MCP_ENDPOINT_APPROVAL_PROBE_MS });

  // A change of a read model is looked at 50 ms after the last one of its scope: a binding writes a few entries.
  const streamLog = logger.child({ component: 'streams' });
  const streams = new ToolListStreams({
    list: (caller, signal) => tools.list(caller, signal),
    maxStreams: config.MCP_ENDPOINT_MAX_STREAMS,
    debounceMs: LIST_CHANGE_QUIET_MS,
    onError: (err, what) => mcpLog.warn({ err }, what),
    onEvent: ({ type, caller, changed, streams: open }) => {
      const who = { tenant: caller.scope.tenant, workspace: caller.scope.workspace, agentId: caller.claims.agentId, streams: open };
      if (type === 'looked') streamLog.debug({ ...who, changed }, 'tool set looked at again');
      else streamLog.info(who, type === 'opened' ? 'notification stream opened' : 'notification stream ended');
    },
  });
  const watchLog = logger.child({ component: 'tool-set-watch' });
  const watch = watchToolSetSources(messaging, { onChange: (change) => streams.changed(change), onProblem: (problem) => watchLog.warn(problem, 'tool set watch problem') });
  shutdown.push('tool-set-watch', () => Promise.resolve(watch.close()));

  let http;
  try {
    http = await startEndpointHttp({
      host: config.HTTP_HOST,
      port: config.HTTP_PORT,
      publicUrl: (port) => config.MCP_ENDPOINT_PUBLIC_URL ?? `http://${config.HTTP_HOST.includes(':') ? `[${config.HTTP_HOST}]` : config.HTTP_HOST}:${port}`,
      allowedOrigins: config.MCP_ENDPOINT_ALLOWED_ORIGINS,
      authorizationServers: config.MCP_ENDPOINT_AUTHORIZATION_SERVERS,
      maxBodyBytes: config.MCP_ENDPOINT_MAX_BODY_BYTES,
      verifier,
      protocol: { identity: endpointIdentity, tools, inFlight: new InFlightCalls(), onError: (err) => mcpLog.warn({ err }, 'MCP protocol error') },
      streams,
      rateLimits:
        config.MCP_ENDPOINT_TOKEN_RATE_LIMIT === 0
          ? undefined
          : new TokenRateLimits({ limit: config.MCP_ENDPOINT_TOKEN_RATE_LIMIT, windowMs: config.MCP_ENDPOINT_TOKEN_RATE_WINDOW_MS, maxKeys: RATE_LIMIT_MAX_TOKENS }),
      readiness: () => ({ nats: messaging.isConnected() }),
      logger: logger.child({ component: 'http' }),
    });
  } catch (error) {
    await shutdown.run(config.SHUTDOWN_TIMEOUT_MS);
    const code = (error as { code?: unknown }).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') throw new StartupError(`HTTP_PORT: cannot listen on ${config.HTTP_HOST}:${config.HTTP_PORT}: ${(error as Error).message}`, { cause: error });
    throw error;
  }
  const server = http;
  // Registered last, runs first: stop taking requests before the connections they need close.
  shutdown.push('http', () => server.close());
  // Runs before the HTTP server closes: open streams would hold it (and the drain) up until their clients left.
  shutdown.push('streams', () => Promise.resolve(streams.closeAll()));
  logger.info({ port: server.port, url: server.publicUrl, natsUrl: redactUrl(config.NATS_URL) }, 'mcp-endpoint ready');

  return {
    port: server.port,
    url: server.publicUrl,
    logger,
    stop: async () => {
      server.markShuttingDown();
      return shutdown.run(config.SHUTDOWN_TIMEOUT_MS);
    },
  };
}
