import { access, constants, stat } from 'node:fs/promises';
import path from 'node:path';
import { ToolplaneError, hasErrorCode, type McpDiscoveredTool, type McpServer, type McpServerSetting } from '@toolplane/contracts';
import {
  connectMcp,
  createMcpPool,
  minimalPath,
  toDiscoveredPrompt,
  toDiscoveredResource,
  toDiscoveredResourceTemplate,
  toDiscoveredTool,
  type McpListOptions,
  type McpResourceTemplate,
  type McpSession,
  type McpTarget,
  type StdioSandboxOptions,
} from '@toolplane/mcp';
import type { DiscoveredCapabilities } from '../core/snapshot.js';

/** Supplies the secret of a connection a setting references (an env variable or header backed by a connection). */
export type ConnectionResolver = (connectionRef: string, signal?: AbortSignal) => Promise<string>;

/** How the registry talks MCP to the servers it registers. */
export interface McpGateway {
  /** Handshake and discovery over a fresh connection that is closed afterwards. */
  discover(server: McpServer, signal?: AbortSignal): Promise<DiscoveredCapabilities>;
  /** Discovery over the watched (pooled) session: for a stdio server, the very process the watcher keeps. */
  rediscover(server: McpServer, signal?: AbortSignal): Promise<DiscoveredCapabilities>;
  /** A ping over the watched session, opening it if needed; a failure drops the session so the next check reconnects. */
  ping(server: McpServer, signal?: AbortSignal): Promise<void>;
  /** Calls `listener` on every list_changed (tools, resources or prompts) of the server's watched session, across reconnections. */
  onListChanged(server: McpServer, listener: () => void): Promise<() => void>;
  /** Closes the watched session of a server (a lost lease, a retired server). */
  release(server: McpServer): Promise<void>;
  /** The path a stdio command resolves to, or undefined when it is not an executable file. */
  findExecutable(executable: string): Promise<string | undefined>;
  close(): Promise<void>;
}

/** Limits and environment of the gateway. */
export interface McpGatewayOptions {
  readonly handshakeTimeoutMs: number;
  readonly requestTimeoutMs: number;
  /** The PATH stdio servers get and their commands are looked up on (default: node's directory and the system's). */
  readonly stdioPath?: string | undefined;
  /** How stdio servers are sandboxed (default: bubblewrap with each server's profile). */
  readonly sandbox?: StdioSandboxOptions | undefined;
  readonly resolveConnection?: ConnectionResolver | undefined;
  readonly onStderr?: ((server: string, text: string) => void) | undefined;
}

const noConnections: ConnectionResolver = (connectionRef) =>
  Promise.reject(
    new ToolplaneError('TEMPORARY_UNAVAILABLE', `the setting backed by connection ${JSON.stringify(connectionRef)} needs a secret broker lease, which the registry is not wired to`),
  );

async function settings(list: readonly McpServerSetting[] | undefined, resolve: ConnectionResolver, signal: AbortSignal | undefined): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const setting of list ?? []) out[setting.name] = 'value' in setting ? setting.value : await resolve(setting.connectionRef, signal);
  return out;
}

/** The MCP target of a registered server; connection-backed settings are resolved on the way. */
export async function targetOf(server: McpServer, resolve: ConnectionResolver, signal?: AbortSignal): Promise<McpTarget> {
  if (server.transport === 'Local') throw new ToolplaneError('CONFLICT', `server ${server.serverId} is a Local provider inside Toolplane: it is never connected to over MCP`);
  if (server.transport === 'Stdio') {
    if (server.command === undefined) throw new ToolplaneError('INTERNAL', `server ${server.serverId} has no command`);
    return {
      transport: 'stdio',
      command: server.command.executable,
      args: server.command.args,
      env: await settings(server.command.env, resolve, signal),
      ...(server.sandbox === undefined ? {} : { sandbox: server.sandbox }),
    };
  }
  if (server.endpointUrl === undefined) throw new ToolplaneError('INTERNAL', `server ${server.serverId} has no endpoint`);
  return { transport: 'http', url: server.endpointUrl, headers: await settings(server.headers, resolve, signal) };
}

/** JSON-RPC's "method not found". */
const METHOD_NOT_FOUND = -32601;

/**
 * The server's resource templates. A server announcing resources may still not implement resources/templates/list
 * (several SDKs answer "method not found" when no template is registered): it has none. Any other failure fails the
 * discovery, as a failed listing of resources would.
 */
async function listResourceTemplates(session: McpSession, options: McpListOptions): Promise<McpResourceTemplate[]> {
  try {
    return await session.listResourceTemplates(options);
  } catch (error) {
    const details = error instanceof ToolplaneError ? error.details : undefined;
    if (hasErrorCode(error) && error.code === 'NOT_FOUND' && details?.['jsonRpcCode'] === METHOD_NOT_FOUND) return [];
    throw error;
  }
}

/** Lists what a session offers (only what its capabilities announce) as the registry stores it. */
export async function discoverWith(session: McpSession, timeoutMs: number, signal?: AbortSignal): Promise<DiscoveredCapabilities> {
  const options = { timeoutMs, ...(signal ? { signal } : {}) };
  const capabilities = session.capabilities;
  const tools = capabilities.tools === undefined ? [] : await session.listTools(options);
  const resources = capabilities.resources === undefined ? [] : await session.listResources(options);
  const resourceTemplates = capabilities.resources === undefined ? [] : await listResourceTemplates(session, options);
  const prompts = capabilities.prompts === undefined ? [] : await session.listPrompts(options);
  // A tool whose definition cannot be stored or pinned is refused on its own; the server's other tools stay usable.
  const discovered: McpDiscoveredTool[] = [];
  const refusedTools: { name: string; reason: string }[] = [];
  for (const tool of tools) {
    try {
      discovered.push(toDiscoveredTool(tool));
    } catch (error) {
      if (!(error instanceof ToolplaneError) || error.code !== 'INVALID_ARGUMENT') throw error;
      refusedTools.push({ name: tool.name, reason: error.message });
    }
  }
  return {
    protocolVersion: session.protocolVersion,
    serverInfo: { name: session.serverInfo.name.slice(0, 256), version: session.serverInfo.version.slice(0, 64) },
    tools: discovered,
    refusedTools,
    resources: resources.map(toDiscoveredResource),
    resourceTemplates: resourceTemplates.map(toDiscoveredResourceTemplate),
    prompts: prompts.map(toDiscoveredPrompt),
  };
}

/** Creates the gateway over @toolplane/mcp: fresh connections for discovery, a pool for the watched sessions. */
export function createMcpGateway(options: McpGatewayOptions): McpGateway {
  const resolve = options.resolveConnection ?? noConnections;
  const stdioPath = options.stdioPath ?? minimalPath();
  const connectOptions = (server: McpServer) => ({
    timeoutMs: options.handshakeTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs,
    stdioPath,
    sandbox: options.sandbox,
    ...(options.onStderr === undefined ? {} : { onStderr: (text: string) => options.onStderr?.(server.serverId, text) }),
  });
  const pool = createMcpPool({ connect: { timeoutMs: options.handshakeTimeoutMs, requestTimeoutMs: options.requestTimeoutMs, stdioPath, sandbox: options.sandbox } });
  const request = (signal: AbortSignal | undefined) => ({ timeoutMs: options.requestTimeoutMs, ...(signal ? { signal } : {}) });

  const watched = async <T>(server: McpServer, signal: AbortSignal | undefined, work: (session: McpSession) => Promise<T>): Promise<T> => {
    const target = await targetOf(server, resolve, signal);
    try {
      return await work(await pool.session(target, { timeoutMs: options.handshakeTimeoutMs, ...(signal ? { signal } : {}) }));
    } catch (error) {
      await pool.evict(target).catch(() => undefined);
      throw error;
    }
  };

  return {
    async discover(server, signal) {
      const target = await targetOf(server, resolve, signal);
      const session = await connectMcp(target, { ...connectOptions(server), ...(signal ? { signal } : {}) });
      try {
        return await discoverWith(session, options.requestTimeoutMs, signal);
      } finally {
        await session.close();
      }
    },
    rediscover: (server, signal) => watched(server, signal, (session) => discoverWith(session, options.requestTimeoutMs, signal)),
    ping: (server, signal) => watched(server, signal, (session) => session.ping(request(signal))),
    async onListChanged(server, listener) {
      return pool.onListChanged(await targetOf(server, resolve), listener);
    },
    async release(server) {
      await pool.evict(await targetOf(server, resolve)).catch(() => undefined);
    },
    async findExecutable(executable) {
      const candidates = executable.includes('/') ? (path.isAbsolute(executable) ? [executable] : []) : stdioPath.split(':').filter((dir) => dir !== '').map((dir) => path.join(dir, executable));
      for (const candidate of candidates) {
        try {
          await access(candidate, constants.X_OK);
          if ((await stat(candidate)).isFile()) return candidate;
        } catch {
          // Not here; try the next directory.
        }
      }
      return undefined;
    },
    close: () => pool.close(),
  };
}
