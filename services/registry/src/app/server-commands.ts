import {
  DEFAULT_POLICY_BUNDLE,
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
  serverNameStreamId,
  serverStreamId,
  sha256Hex,
} from '@toolplane/contracts';
import { foldEvents, handleCommand, isVersionConflict } from '@toolplane/event-store';
import { assertDiscoverable, decideServer, foldServer, type ServerRegistration } from '../core/server-aggregate.js';
import { assertNotFlowProvider, assertNotReservedServerName } from '../core/flow-tools.js';
import { serverNameDecider } from '../core/server-name.js';
import { buildSnapshot, type DiscoveredCapabilities } from '../core/snapshot.js';
import { changeServer, loadServer, readServer, recordedBy, serverAppendEvents } from './aggregates.js';
import { applyDefinitionDrift, retireDescriptorsOf, syncDescriptorHealth } from './descriptor-effects.js';
import type { Actor, RegistryContext } from './registry-context.js';
import { assertReleasePublished, recordReleaseServer } from './release-commands.js';

const maxRegisterAttempts = 5;

/** A server of the scope as the record has it (the tool adapter's getServer); NOT_FOUND when there is none. */
export async function getServer(context: RegistryContext, scope: Scope, serverId: string, signal?: AbortSignal): Promise<McpServer> {
  return (await loadServer(context, scope, serverId, signal)).server;
}

/**
 * What makes two registrations of a name the same registration (a retried register). The sandbox profile is part of
 * it: a server's sandbox changes only by retiring it and registering it anew, a governed change like any other (who
 * approved a host network, and when, are not: a retry by another operator is still the same registration).
 */
function registrationFingerprint(server: Omit<ServerRegistration, 'serverId' | 'registeredBy'>): string {
  const { tenant, workspace, name, direction, transport, endpointUrl, command, headers, connectionRef, authentication, governancePolicyRef, releaseId } = server;
  const sandbox = server.sandbox === undefined ? undefined : { ...server.sandbox, networkHostApprovedBy: undefined, networkHostApprovedAt: undefined };
  return canonicalJson({ tenant, workspace, name, direction, transport, endpointUrl, command, headers, connectionRef, authentication, governancePolicyRef, releaseId, sandbox });
}

/** The profile as stored: a host network is recorded with the operator who registered it. */
function sandboxOf(request: RegisterServerRequest, actor: string, at: string): McpServer['sandbox'] {
  const sandbox = request.sandbox;
  if (sandbox === undefined) return undefined;
  return sandbox.network === 'host' ? { ...sandbox, networkHostApprovedBy: actor, networkHostApprovedAt: at } : sandbox;
}

/**
 * Refuses a server naming a policy bundle the tool adapter does not hold: every call through it would be denied.
 * Asked only when the adapter's checks are wired; an adapter that cannot be reached does not hold up a registration,
 * since the adapter fails closed on a missing bundle at call time anyway (and a bundle can be deleted later).
 */
async function assertPolicyBundleExists(context: RegistryContext, scope: Scope, name: string, signal?: AbortSignal): Promise<void> {
  if (context.policies === undefined || name === DEFAULT_POLICY_BUNDLE) return;
  let exists: boolean;
  try {
    exists = await context.policies.policyBundleExists(scope, name, signal);
  } catch (error) {
    context.onPolicyCheckError?.(error, `policy bundle ${name}`);
    return;
  }
  if (!exists) {
    throw new ToolplaneError('INVALID_ARGUMENT', `the policy bundle ${JSON.stringify(name)} does not exist in tenant ${scope.tenant}: create it first (toolplane policies bundle put), or name default`);
  }
}

/**
 * Registers a server (state Registered) for `actor` (the verified operator; a body's `actor` is ignored). The same
 * registration again returns the existing server, emitting nothing; a new one naming a policy bundle the tool adapter
 * does not hold is refused.
 */
export async function registerServer(context: RegistryContext, scope: Scope, request: RegisterServerRequest, actor: string, signal?: AbortSignal): Promise<RegisterServerReply> {
  assertNotReservedServerName(request.name);
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
    ...(request.sandbox === undefined ? {} : { sandbox: sandboxOf(request, actor, at) }),
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
  const registrationHash = sha256Hex(registrationFingerprint(registration));
  const nameId = serverNameStreamId(scope, registration.name);
  const taken = (serverId: string) =>
    new ToolplaneError('CONFLICT', `a server named ${registration.name} is registered already (${serverId}) with another configuration: retire it (in any state) to register the name anew`, {
      details: { serverId },
    });
  for (let attempt = 0; attempt < maxRegisterAttempts; attempt++) {
    // Who holds the name now: a live holder with another configuration refuses, a retired one gives the name up.
    const holderId = foldEvents(serverNameDecider, (await context.stores.names.readStream(nameId, signal ? { signal } : {})).events)?.serverId;
    const holder = holderId === undefined ? undefined : await readServer(context, scope, holderId, signal);
    if (holder !== undefined && holder.server.state !== 'Retired') {
      if (registrationFingerprint(holder.server) !== registrationFingerprint(registration)) throw taken(holder.server.serverId);
      return { server: holder.server, created: false };
    }
    await assertPolicyBundleExists(context, scope, registration.governancePolicyRef, signal);
    if (registration.releaseId !== undefined) await assertReleasePublished(context, scope, registration.releaseId, `register ${registration.name}`, signal);
    const claim = await handleCommand(
      context.stores.names,
      recordedBy(serverNameDecider, actor),
      nameId,
      { type: 'ClaimServerName', name: registration.name, serverId: registration.serverId, registrationHash, retiredHolder: holder?.server.serverId, at },
      signal ? { signal } : {},
    );
    const serverId = claim.newState?.serverId ?? registration.serverId;
    // The name is this registration's (claimed now, or by a retried register, or by a writer that crashed before
    // recording its server): the server of the claim is recorded once.
    const existing = await readServer(context, scope, serverId, signal);
    if (existing !== undefined) {
      if (existing.server.state === 'Retired') continue;
      return { server: existing.server, created: false };
    }
    const registered = events.map((event) => (event.type === 'ServerRegistered' ? { ...event, server: { ...event.server, serverId }, actor } : { ...event, actor }));
    // The release first: a server its release does not name could be missed when the release is deprecated.
    if (registration.releaseId !== undefined) await recordReleaseServer(context, scope, registration.releaseId, serverId, { actor, at }, signal);
    try {
      const appended = await context.stores.servers.appendToStream(serverStreamId(scope, serverId), registered, { expectedVersion: 0, ...(signal ? { signal } : {}) });
      const server = { ...(foldServer(undefined, registered) as McpServer), version: appended.nextExpectedVersion };
      try {
        await context.publishEvents(serverAppendEvents(server, registered, appended.nextExpectedVersion), signal);
      } catch (error) {
        context.onPublishError?.(error, `events of server ${serverId}`);
      }
      return { server, created: true };
    } catch (error) {
      if (!isVersionConflict(error)) throw error;
      const winner = await loadServer(context, scope, serverId, signal);
      return { server: winner.server, created: false };
    }
  }
  throw new ToolplaneError('CONFLICT', `the name ${registration.name} kept changing hands under this registration; try again`, { retryable: true });
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
    (server: McpServer) => [
      { type: 'RecordDiscovery', snapshot, at: who.at },
      // A successful handshake is also a successful health check: a Degraded server is back.
      ...(server.state === 'Degraded' ? [{ type: 'RecordHealthCheck', outcome: { ok: true }, failureThreshold: context.failureThreshold, at: who.at } as const] : []),
    ],
    who,
    signal,
  );
  const stateChanged = changed.events.some((event) => event.type === 'ServerStateChanged');
  if (stateChanged) await syncDescriptorHealth(context, changed, who, signal);
  const changes = await applyDefinitionDrift(context, changed, snapshot, who, signal);
  return { server: changed.server, changes, stateChanged };
}

/** Handshake and discovery of a server on request: nothing changes when the server cannot be reached or answers garbage. */
export async function discoverServer(context: RegistryContext, scope: Scope, serverId: string, actor: string, signal?: AbortSignal): Promise<DiscoverServerReply> {
  const { server } = await loadServer(context, scope, serverId, signal);
  // Refused before any connection is made.
  assertNotFlowProvider(server, 'discover');
  assertDiscoverable(server);
  const found = await context.mcp.discover(server, signal);
  const { server: after, changes } = await recordDiscovery(context, scope, serverId, found, { actor, at: context.now() }, signal);
  return { server: after, changes };
}

/** Retires a server (from any state; its name is free again for a new registration) and every descriptor bound to it. */
export async function retireServer(context: RegistryContext, scope: Scope, serverId: string, reason: string | undefined, actor: string, signal?: AbortSignal): Promise<RetireServerReply> {
  const who = { actor, at: context.now() };
  assertNotFlowProvider((await loadServer(context, scope, serverId, signal)).server, 'retire');
  const changed = await changeServer(context, scope, serverId, [{ type: 'RetireServer', reason, at: who.at }], who, signal);
  // Also on a retried retire: descriptors a crash left active are retired now.
  const retiredDescriptors = await retireDescriptorsOf(context, changed, who, signal);
  await context.mcp.release(changed.server).catch(() => undefined);
  return { server: changed.server, retiredDescriptors };
}

/**
 * Records a platform admin's expiring exception for a remote server without acceptable authentication, granted by
 * `grantedBy` (the verified operator; the request's `grantedBy` is ignored).
 */
export async function grantAuthenticationException(context: RegistryContext, scope: Scope, request: GrantAuthenticationExceptionRequest, grantedBy: string, signal?: AbortSignal): Promise<McpServer> {
  const at = context.now();
  const exception = { grantedBy, reason: request.reason, grantedAt: at, expiresAt: request.expiresAt };
  assertNotFlowProvider((await loadServer(context, scope, request.serverId, signal)).server, 'grant an authentication exception to');
  const changed = await changeServer(context, scope, request.serverId, [{ type: 'GrantAuthenticationException', exception, at }], { actor: grantedBy, at }, signal);
  return changed.server;
}
