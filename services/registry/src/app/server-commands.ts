import {
  ToolplaneError,
  canonicalJson,
  type DiscoverServerReply,
  type GrantAuthenticationExceptionRequest,
  type McpServer,
  type RegisterServerReply,
  type RegisterServerRequest,
  type RetireServerReply,
  type Scope,
  type ToolDefinitionChange,
} from '@toolplane/contracts';
import { changeAggregate, createAggregate } from '../adapters/aggregate-store.js';
import type { StoredServer } from '../collections.js';
import { assertDiscoverable, decideServer, decideServerAll, foldServer, type ServerCommand, type ServerRegistration } from '../core/server-aggregate.js';
import { buildSnapshot, type DiscoveredCapabilities } from '../core/snapshot.js';
import { serverLifecycleEvents } from '../core/wire-events.js';
import { applyDefinitionDrift, retireDescriptorsOf, syncDescriptorHealth } from './descriptor-effects.js';
import { nameClaimOf, serverKind, toServer, type Actor, type RegistryContext } from './registry-context.js';

/** Loads a server of the scope; NOT_FOUND when there is none. */
export async function loadServer(context: RegistryContext, scope: Scope, serverId: string, signal?: AbortSignal): Promise<McpServer> {
  const document = await context.servers.raw.findOne({ tenant: scope.tenant, workspace: scope.workspace, serverId }, { signal });
  if (document === null) throw new ToolplaneError('NOT_FOUND', `no MCP server ${serverId} in ${scope.tenant}/${scope.workspace}`);
  return toServer(document);
}

/** Applies commands to a server as one change. */
export function changeServer(context: RegistryContext, scope: Scope, serverId: string, commands: (server: McpServer) => ServerCommand[], who: Actor, signal?: AbortSignal) {
  return changeAggregate(context.outbox, serverKind(context, who), { tenant: scope.tenant, workspace: scope.workspace, serverId }, (server) => decideServerAll(commands(server), server), {
    notFound: `no MCP server ${serverId} in ${scope.tenant}/${scope.workspace}`,
    ...(signal ? { signal } : {}),
  });
}

/** What makes two registrations of a name the same registration (a retried register). */
function registrationFingerprint(server: Omit<ServerRegistration, 'serverId' | 'registeredBy'>): string {
  const { tenant, workspace, name, direction, transport, endpointUrl, command, headers, connectionRef, authentication, governancePolicyRef, releaseId } = server;
  return canonicalJson({ tenant, workspace, name, direction, transport, endpointUrl, command, headers, connectionRef, authentication, governancePolicyRef, releaseId });
}

/**
 * Registers a server (state Registered) for `actor` (the verified operator; a body's `actor` is ignored). The same
 * registration again returns the existing server, emitting nothing.
 */
export async function registerServer(context: RegistryContext, scope: Scope, request: RegisterServerRequest, actor: string, signal?: AbortSignal): Promise<RegisterServerReply> {
  const at = context.now();
  const registration: ServerRegistration = {
    serverId: context.newId(),
    tenant: scope.tenant,
    workspace: scope.workspace,
    name: request.name,
    direction: request.direction,
    transport: request.stdio === undefined ? 'StreamableHttp' : 'Stdio',
    ...(request.endpointUrl === undefined ? {} : { endpointUrl: request.endpointUrl }),
    ...(request.stdio === undefined ? {} : { command: { executable: request.stdio.executable, args: request.stdio.args, ...(request.stdio.env === undefined ? {} : { env: request.stdio.env }) } }),
    ...(request.headers === undefined ? {} : { headers: request.headers }),
    ...(request.connectionRef === undefined ? {} : { connectionRef: request.connectionRef }),
    authentication: request.authentication,
    governancePolicyRef: request.governancePolicyRef,
    ...(request.releaseId === undefined ? {} : { releaseId: request.releaseId }),
    registeredBy: actor,
  };
  const events = decideServer({ type: 'RegisterServer', registration, at }, undefined);
  if (registration.command !== undefined) {
    // The child gets a private working directory and a minimal PATH: only an absolute path or a name on that PATH can run.
    const found = await context.mcp.findExecutable(registration.command.executable);
    if (found === undefined) {
      throw new ToolplaneError('INVALID_ARGUMENT', `the stdio command ${JSON.stringify(registration.command.executable)} is not an executable file (give an absolute path, or a name on the registry's stdio PATH)`);
    }
  }
  const server = foldServer(undefined, events) as McpServer;
  const lifecycle = serverLifecycleEvents(events, server, { scope, aggregate: `server:${server.serverId}`, versionAfter: 1, at, actor: registration.registeredBy });
  const document: StoredServer = { ...server, _id: server.serverId, nameClaim: nameClaimOf(server), outbox: [] };
  const created = await createAggregate(context.outbox, { collection: context.servers, toState: toServer }, document, lifecycle, { tenant: scope.tenant, workspace: scope.workspace, nameClaim: server.name }, signal);
  if (!created.created && registrationFingerprint(created.state) !== registrationFingerprint(server)) {
    throw new ToolplaneError('CONFLICT', `a server named ${server.name} is registered already (${created.state.serverId}) with another configuration: retire it (in any state) to register the name anew`, {
      details: { serverId: created.state.serverId },
    });
  }
  return { server: created.state, created: created.created };
}

/** Records a discovery's outcome on a server, then suspends or retires the bindings it contradicts. */
export async function recordDiscovery(
  context: RegistryContext,
  scope: Scope,
  serverId: string,
  found: DiscoveredCapabilities,
  who: Actor,
  signal?: AbortSignal,
): Promise<{ server: McpServer; changes: ToolDefinitionChange[]; stateChanged: boolean }> {
  const snapshot = buildSnapshot(found, who.at);
  const changed = await changeServer(
    context,
    scope,
    serverId,
    (server) => [
      { type: 'RecordDiscovery', snapshot, at: who.at },
      // A successful handshake is also a successful health check: a Degraded server is back.
      ...(server.state === 'Degraded' ? [{ type: 'RecordHealthCheck', outcome: { ok: true }, failureThreshold: context.failureThreshold, at: who.at } as const] : []),
    ],
    who,
    signal,
  );
  const stateChanged = changed.events.some((event) => event.type === 'ServerStateChanged');
  if (stateChanged) await syncDescriptorHealth(context, changed.state, who, signal);
  const changes = await applyDefinitionDrift(context, changed.state, snapshot, who, signal);
  return { server: changed.state, changes, stateChanged };
}

/** Handshake and discovery of a server on request: nothing changes when the server cannot be reached or answers garbage. */
export async function discoverServer(context: RegistryContext, scope: Scope, serverId: string, actor: string, signal?: AbortSignal): Promise<DiscoverServerReply> {
  const server = await loadServer(context, scope, serverId, signal);
  // Refused before any connection is made.
  assertDiscoverable(server);
  const found = await context.mcp.discover(server, signal);
  const { server: after, changes } = await recordDiscovery(context, scope, serverId, found, { actor, at: context.now() }, signal);
  return { server: after, changes };
}

/** Retires a server (from any state; its name is free again for a new registration) and every descriptor bound to it. */
export async function retireServer(context: RegistryContext, scope: Scope, serverId: string, reason: string | undefined, actor: string, signal?: AbortSignal): Promise<RetireServerReply> {
  const who = { actor, at: context.now() };
  const changed = await changeServer(context, scope, serverId, () => [{ type: 'RetireServer', reason, at: who.at }], who, signal);
  // Also on a retried retire: descriptors a crash left active are retired now.
  const retiredDescriptors = await retireDescriptorsOf(context, changed.state, who, signal);
  await context.mcp.release(changed.state).catch(() => undefined);
  return { server: changed.state, retiredDescriptors };
}

/**
 * Records a platform admin's expiring exception for a remote server without acceptable authentication, granted by
 * `grantedBy` (the verified operator; the request's `grantedBy` is ignored).
 */
export async function grantAuthenticationException(context: RegistryContext, scope: Scope, request: GrantAuthenticationExceptionRequest, grantedBy: string, signal?: AbortSignal): Promise<McpServer> {
  const at = context.now();
  const exception = { grantedBy, reason: request.reason, grantedAt: at, expiresAt: request.expiresAt };
  const changed = await changeServer(context, scope, request.serverId, () => [{ type: 'GrantAuthenticationException', exception, at }], { actor: grantedBy, at }, signal);
  return changed.state;
}
