import { ToolplaneError, compareToolVersions, type BindToolReply, type BindToolRequest, type Scope, type ToolDescriptor, type UnbindToolReply, type UnbindToolRequest } from '@toolplane/contracts';
import { createAggregate } from '../adapters/aggregate-store.js';
import type { StoredDescriptor } from '../collections.js';
import { bindingFingerprint, decideDescriptor, foldDescriptor, type BindingDeclaration } from '../core/descriptor-aggregate.js';
import { decideServer } from '../core/server-aggregate.js';
import { defaultToolId, planBind } from '../core/tool-identity.js';
import { descriptorLifecycleEvents } from '../core/wire-events.js';
import { changeDescriptor } from './descriptor-effects.js';
import { descriptorDocumentId, publishToReadModel, toDescriptor, type Actor, type RegistryContext } from './registry-context.js';
import { changeServer, loadServer } from './server-commands.js';

const maxBindAttempts = 5;

async function descriptorsWhere(context: RegistryContext, filter: Record<string, unknown>, signal?: AbortSignal): Promise<ToolDescriptor[]> {
  const documents = await context.descriptors.raw.find(filter, { signal }).toArray();
  return documents.map((document) => toDescriptor(document as StoredDescriptor)).sort(compareToolVersions);
}

/**
 * Binds a discovered tool to a new descriptor version that pins its current definition hash. The first binding of
 * a Verified server approves its bindings (Active). The same binding again returns the active descriptor and emits
 * nothing; a different one makes a new version and supersedes the old. `actor` is the verified operator (a body's
 * `actor` is ignored).
 */
export async function bindTool(context: RegistryContext, scope: Scope, request: BindToolRequest, actor: string, signal?: AbortSignal): Promise<BindToolReply> {
  const who = { actor, at: context.now() } satisfies Actor;
  const { serverId, toolName } = request;
  const { toolId: requestedToolId, expectedDefinitionHash, actor: _actor, serverId: _server, toolName: _tool, ...declaration } = request;
  const bindingDeclaration: BindingDeclaration = declaration;
  for (let attempt = 0; attempt < maxBindAttempts; attempt++) {
    let server = await loadServer(context, scope, serverId, signal);
    const tool = server.capabilities?.tools.find((candidate) => candidate.name === toolName);
    const refused = server.capabilities?.refusedTools?.find((candidate) => candidate.name === toolName);
    if (tool === undefined && refused !== undefined) {
      throw new ToolplaneError('INVALID_ARGUMENT', `the tool ${JSON.stringify(toolName)} of server ${server.name} cannot be bound: ${refused.reason}`);
    }
    if (tool === undefined) {
      throw new ToolplaneError('NOT_FOUND', `the tool ${JSON.stringify(toolName)} was not discovered on server ${server.name}${server.capabilities === undefined ? ' (discover it first)' : ''}`);
    }
    if (expectedDefinitionHash !== undefined && expectedDefinitionHash !== tool.definitionHash) {
      throw new ToolplaneError('CONFLICT', `the definition of ${toolName} changed since it was reviewed (now ${tool.definitionHash}); review it again`);
    }
    // Refusals of the server (its state, its authentication) come before anything is written.
    decideServer({ type: 'ApproveBindings', at: who.at }, server);
    const toolId = requestedToolId ?? defaultToolId(server.name, tool.name);
    const bind = (toolVersion: string, on = server) =>
      decideDescriptor({ type: 'BindTool', scope, toolId, toolVersion, server: on, tool, declaration: bindingDeclaration, boundBy: who.actor, at: who.at }, undefined);
    const candidate = foldDescriptor(undefined, bind('0')) as ToolDescriptor;
    const sameTool = await descriptorsWhere(context, { tenant: scope.tenant, workspace: scope.workspace, mcpServerId: serverId, providerToolName: tool.name }, signal);
    const sameId = await descriptorsWhere(context, { tenant: scope.tenant, workspace: scope.workspace, toolId }, signal);
    const plan = planBind(candidate, sameTool, sameId);
    if (plan.kind === 'Existing') {
      const approved = await changeServer(context, scope, serverId, () => [{ type: 'ApproveBindings', at: who.at }], who, signal);
      await publishToReadModel(context, plan.descriptor, signal);
      return { descriptor: plan.descriptor, created: false, serverState: approved.state.state };
    }
    // The server first: a crash after it leaves an Active server with nothing new bound, never a bound tool on a
    // server that was not approved.
    server = (await changeServer(context, scope, serverId, () => [{ type: 'ApproveBindings', at: who.at }], who, signal)).state;
    const events = bind(plan.toolVersion, server);
    const descriptor = foldDescriptor(undefined, events) as ToolDescriptor;
    const lifecycle = descriptorLifecycleEvents(events, descriptor, {
      scope,
      aggregate: `descriptor:${descriptorDocumentId(scope, toolId, plan.toolVersion)}`,
      versionAfter: 1,
      at: who.at,
      actor: who.actor,
    });
    const document: StoredDescriptor = { ...descriptor, _id: descriptorDocumentId(scope, toolId, plan.toolVersion), outbox: [] };
    const created = await createAggregate(
      context.outbox,
      { collection: context.descriptors, toState: toDescriptor },
      document,
      lifecycle,
      { tenant: scope.tenant, workspace: scope.workspace, toolId, toolVersion: plan.toolVersion },
      signal,
    );
    if (!created.created) {
      // A concurrent bind took this version: the same binding is this one; anything else, plan again.
      if (bindingFingerprint(created.state) === bindingFingerprint(descriptor) && created.state.active) {
        await publishToReadModel(context, created.state, signal);
        return { descriptor: created.state, created: false, serverState: server.state };
      }
      continue;
    }
    await publishToReadModel(context, created.state, signal);
    for (const old of plan.supersede) await changeDescriptor(context, old, { type: 'RetireDescriptor', reason: 'Superseded', at: who.at }, who, signal);
    return { descriptor: created.state, created: true, serverState: server.state };
  }
  throw new ToolplaneError('CONFLICT', `the bindings of ${toolName} kept changing under this bind; try again`, { retryable: true });
}

/** Unbinds a tool: its active descriptor versions are retired (Unbound). Unbinding an unbound tool again changes nothing. */
export async function unbindTool(context: RegistryContext, scope: Scope, request: UnbindToolRequest, actor: string, signal?: AbortSignal): Promise<UnbindToolReply> {
  const who: Actor = { actor, at: context.now() };
  const server = await loadServer(context, scope, request.serverId, signal);
  const versions = await descriptorsWhere(context, { tenant: scope.tenant, workspace: scope.workspace, mcpServerId: server.serverId, providerToolName: request.toolName }, signal);
  const latest = versions.at(-1);
  if (latest === undefined) throw new ToolplaneError('NOT_FOUND', `the tool ${JSON.stringify(request.toolName)} of server ${server.name} is not bound`);
  let descriptor = latest;
  for (const version of versions.filter((candidate) => candidate.active)) {
    const changed = await changeDescriptor(context, version, { type: 'RetireDescriptor', reason: 'Unbound', at: who.at }, who, signal);
    if (version.toolVersion === latest.toolVersion) descriptor = changed.state;
  }
  return { descriptor };
}
