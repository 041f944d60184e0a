import { ServerReply, ServerRequest, ToolplaneError, commandSubject, registryOperations, type McpServer, type Scope } from '@toolplane/contracts';
import { request, type Messaging } from '@toolplane/messaging';

// Where a descriptor's MCP server is: asked of the registry (request/reply `getServer`, it owns mcp_servers) and
// kept for a short while, so a burst of calls costs one round trip. The document holds connection references,
// never secrets: the credential stage leases them and builds the target (core/credential-injection.ts).

/** Finds an Active MCP server of a scope. */
export type ServerDirectory = (scope: Scope, serverId: string, signal?: AbortSignal) => Promise<McpServer>;

/** A directory backed by the registry, with a cache of `ttlMs`. */
export function registryServerDirectory(messaging: Messaging, options: { readonly timeoutMs: number; readonly ttlMs: number; readonly now?: () => number }): ServerDirectory {
  const now = options.now ?? Date.now;
  const cache = new Map<string, { readonly server: McpServer; readonly until: number }>();
  return async (scope, serverId, signal) => {
    const key = `${scope.tenant} ${scope.workspace} ${serverId}`;
    const cached = cache.get(key);
    if (cached !== undefined && cached.until > now()) return cached.server;
    const reply = await request(messaging, {
      subject: commandSubject(scope, 'registry', registryOperations.getServer),
      requestSchema: ServerRequest,
      replySchema: ServerReply,
      body: { serverId, actor: 'svc:tool-adapter' },
      timeoutMs: options.timeoutMs,
      ...(signal ? { signal } : {}),
    });
    if (reply.server.state !== 'Active') throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `server ${reply.server.name} is ${reply.server.state}`);
    cache.set(key, { server: reply.server, until: now() + options.ttlMs });
    return reply.server;
  };
}
