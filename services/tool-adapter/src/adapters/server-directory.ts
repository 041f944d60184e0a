import { ServerReply, ServerRequest, ToolplaneError, commandSubject, registryOperations, type McpServer, type Scope } from '@toolplane/contracts';
import type { McpTarget } from '@toolplane/mcp';
import { request, type Messaging } from '@toolplane/messaging';

// Where a descriptor's MCP server is: asked of the registry (request/reply `getServer`, it owns mcp_servers) and
// kept for a short while, so a burst of calls costs one round trip.

/** Finds the MCP target of a server of a scope. */
export type ServerDirectory = (scope: Scope, serverId: string, signal?: AbortSignal) => Promise<McpTarget>;

/** The target an MCP server document describes; settings backed by connections need the secret broker. */
export function targetOf(server: McpServer): McpTarget {
  const plain = (settings: McpServer['headers']) => {
    const values: Record<string, string> = {};
    for (const setting of settings ?? []) {
      if (!('value' in setting)) throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `server ${server.name}: settings from connections are not brokered yet (${setting.name})`, { retryable: false });
      values[setting.name] = setting.value;
    }
    return values;
  };
  if (server.transport === 'Stdio') {
    const command = server.command;
    if (command === undefined) throw new ToolplaneError('INTERNAL', `server ${server.name} has no command`);
    return { transport: 'stdio', command: command.executable, args: command.args, env: plain(command.env) };
  }
  if (server.endpointUrl === undefined) throw new ToolplaneError('INTERNAL', `server ${server.name} has no endpoint`);
  return { transport: 'http', url: server.endpointUrl, headers: plain(server.headers) };
}

/** A directory backed by the registry, with a cache of `ttlMs`. */
export function registryServerDirectory(messaging: Messaging, options: { readonly timeoutMs: number; readonly ttlMs: number; readonly now?: () => number }): ServerDirectory {
  const now = options.now ?? Date.now;
  const cache = new Map<string, { readonly target: McpTarget; readonly until: number }>();
  return async (scope, serverId, signal) => {
    const key = `${scope.tenant} ${scope.workspace} ${serverId}`;
    const cached = cache.get(key);
    if (cached !== undefined && cached.until > now()) return cached.target;
    const reply = await request(messaging, {
      subject: commandSubject(scope, 'registry', registryOperations.getServer),
      requestSchema: ServerRequest,
      replySchema: ServerReply,
      body: { serverId, actor: 'svc:tool-adapter' },
      timeoutMs: options.timeoutMs,
      ...(signal ? { signal } : {}),
    });
    if (reply.server.state !== 'Active') throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `server ${reply.server.name} is ${reply.server.state}`);
    const target = targetOf(reply.server);
    cache.set(key, { target, until: now() + options.ttlMs });
    return target;
  };
}
