import {
  ToolplaneError,
  compareToolVersions,
  mcpCapabilityOf,
  toWireError,
  type BindPromptRequest,
  type BindResourceRequest,
  type BindToolReply,
  type BindToolRequest,
  type McpCapability,
  type McpDiscoveredTool,
  type McpServer,
  type Scope,
  type ToolDescriptor,
  type UnbindToolReply,
  type UnbindToolRequest,
} from '@toolplane/contracts';
import { bindingFingerprint, decideDescriptor, foldDescriptor, type BindingDeclaration, type DescriptorCommand } from '../core/descriptor-aggregate.js';
import { promptBindingOf, promptItem, readDeclaration, resourceBindingOf, resourceItem, resourceTemplateItem } from '../core/read-bindings.js';
import { assertNotFlowProvider, assertNotFlowToolId } from '../core/flow-tools.js';
import { decideServer } from '../core/server-aggregate.js';
import { defaultToolId, planBind } from '../core/tool-identity.js';
import { changeDescriptor, changeServer, createDescriptor, descriptorVersions, descriptorsOfServer, loadServer } from './aggregates.js';
import type { Actor, RegistryContext } from './registry-context.js';
import { assertReleasePublished, readRelease } from './release-commands.js';
import { retirementReasonOf } from '../core/release-aggregate.js';

const maxBindAttempts = 5;

/**
 * What the tool adapter says of the bound tool against the workspace's agent profiles (model rule D21), asked after
 * the bind is stored: a failure to ask is reported, never a failure of the bind.
 */
async function withPublicationCheck(context: RegistryContext, scope: Scope, reply: Omit<BindToolReply, 'conflicts' | 'conflictsUnknown'>, signal?: AbortSignal): Promise<BindToolReply> {
  if (context.policies === undefined) return { ...reply, conflictsUnknown: 'this registry is not connected to the tool adapter’s policy checks' };
  const { toolId, sideEffectClass, riskClass, resource } = reply.descriptor;
  const tool = { toolId, sideEffectClass, riskClass, ...(resource === undefined ? {} : { classification: resource.classification }) };
  try {
    return { ...reply, conflicts: await context.policies.publicationConflicts(scope, tool, signal) };
  } catch (error) {
    const wire = toWireError(error);
    return { ...reply, conflictsUnknown: `the tool adapter could not check the agent profiles: ${wire.code} ${wire.message}`.slice(0, 1024) };
  }
}

/** Writes a descriptor to the KV read model again (a bind answered with an existing version: a lost write is repaired). */
async function refreshReadModel(context: RegistryContext, descriptor: ToolDescriptor, signal?: AbortSignal): Promise<void> {
  try {
    await context.publishDescriptor(descriptor, signal);
  } catch (error) {
    context.onPublishError?.(error, `read model of descriptor ${descriptor.toolId} version ${descriptor.toolVersion}`);
  }
}

/** What one bind binds: a discovered item of a server (a tool, resource or prompt) with its declaration. */
interface BindSpec {
  readonly capability: McpCapability;
  readonly serverId: string;
  readonly requestedId: string | undefined;
  readonly expectedDefinitionHash: string | undefined;
  readonly declaration: BindingDeclaration;
  /**
   * The item as the server's current discovery lists it, the name its default id is made from, and what a resource
   * or prompt binding maps it to; throws when it cannot be bound.
   */
  find(server: McpServer): { readonly item: McpDiscoveredTool; readonly idName: string; readonly binds?: Extract<DescriptorCommand, { type: 'BindTool' }>['binds'] };
}

/**
 * Binds a discovered tool to a new descriptor version that pins its current definition hash. The first binding of
 * a Verified server approves its bindings (Active). The same binding again returns the active descriptor and emits
 * nothing; a different one makes a new version and supersedes the old. `actor` is the verified operator (a body's
 * `actor` is ignored).
 */
export function bindTool(context: RegistryContext, scope: Scope, request: BindToolRequest, actor: string, signal?: AbortSignal): Promise<BindToolReply> {
  const { toolId, expectedDefinitionHash, actor: _actor, serverId, toolName, ...declaration } = request;
  return bindItem(context, scope, {
    capability: 'tool',
    serverId,
    requestedId: toolId,
    expectedDefinitionHash,
    declaration,
    find(server) {
      const tool = server.capabilities?.tools.find((candidate) => candidate.name === toolName);
      const refused = server.capabilities?.refusedTools?.find((candidate) => candidate.name === toolName);
      if (tool === undefined && refused !== undefined) {
        throw new ToolplaneError('INVALID_ARGUMENT', `the tool ${JSON.stringify(toolName)} of server ${server.name} cannot be bound: ${refused.reason}`);
      }
      if (tool === undefined) throw notDiscovered('tool', toolName, server);
      return { item: tool, idName: tool.name };
    },
  }, actor, signal);
}

/**
 * Binds a discovered resource, by its URI, or resource template, by its `uriTemplate`: a descriptor read with
 * resources/read, mapped to a knowledge source with a scope and a classification. A template's descriptor takes its
 * variables as arguments, and records the template in its resource binding.
 */
export function bindResource(context: RegistryContext, scope: Scope, request: BindResourceRequest, actor: string, signal?: AbortSignal): Promise<BindToolReply> {
  return bindItem(context, scope, {
    capability: 'resource',
    serverId: request.serverId,
    requestedId: request.resourceId,
    expectedDefinitionHash: request.expectedDefinitionHash,
    declaration: readDeclaration(request),
    find: (server) => (request.uriTemplate === undefined ? findResource(server, request, request.uri ?? '') : findResourceTemplate(server, request, request.uriTemplate)),
  }, actor, signal);
}

function findResource(server: McpServer, request: BindResourceRequest, uri: string): ReturnType<BindSpec['find']> {
  const resource = server.capabilities?.resources.find((candidate) => candidate.uri === uri);
  if (resource === undefined) throw notDiscovered('resource', uri, server);
  return { item: resourceItem(resource), idName: resource.name, binds: resourceBindingOf(request, resource) };
}

function findResourceTemplate(server: McpServer, request: BindResourceRequest, uriTemplate: string): ReturnType<BindSpec['find']> {
  const template = server.capabilities?.resourceTemplates?.find((candidate) => candidate.uriTemplate === uriTemplate);
  if (template === undefined) throw notDiscovered('resource template', uriTemplate, server);
  return { item: resourceTemplateItem(template), idName: template.name, binds: resourceBindingOf(request, template) };
}

/** Binds a discovered prompt: a descriptor fetched with prompts/get, mapped to a skill or a workflow step (never to policy). */
export function bindPrompt(context: RegistryContext, scope: Scope, request: BindPromptRequest, actor: string, signal?: AbortSignal): Promise<BindToolReply> {
  return bindItem(context, scope, {
    capability: 'prompt',
    serverId: request.serverId,
    requestedId: request.promptId,
    expectedDefinitionHash: request.expectedDefinitionHash,
    declaration: readDeclaration(request),
    find(server) {
      const prompt = server.capabilities?.prompts.find((candidate) => candidate.name === request.promptName);
      if (prompt === undefined) throw notDiscovered('prompt', request.promptName, server);
      return { item: promptItem(prompt), idName: prompt.name, binds: promptBindingOf(request) };
    },
  }, actor, signal);
}

function notDiscovered(what: McpCapability | 'resource template', name: string, server: McpServer): ToolplaneError {
  return new ToolplaneError('NOT_FOUND', `the ${what} ${JSON.stringify(name)} was not discovered on server ${server.name}${server.capabilities === undefined ? ' (discover it first)' : ''}`);
}

async function bindItem(context: RegistryContext, scope: Scope, spec: BindSpec, actor: string, signal?: AbortSignal): Promise<BindToolReply> {
  const who = { actor, at: context.now() } satisfies Actor;
  const { serverId, requestedId, expectedDefinitionHash, capability } = spec;
  if (requestedId !== undefined) assertNotFlowToolId(requestedId);
  for (let attempt = 0; attempt < maxBindAttempts; attempt++) {
    const loaded = await loadServer(context, scope, serverId, signal);
    const { server } = loaded;
    assertNotFlowProvider(server, `bind a ${capability} of`);
    const { item: tool, idName, binds } = spec.find(server);
    if (expectedDefinitionHash !== undefined && expectedDefinitionHash !== tool.definitionHash) {
      throw new ToolplaneError('CONFLICT', `the definition of ${tool.name} changed since it was reviewed (now ${tool.definitionHash}); review it again`);
    }
    // Refusals of the server (its state, its authentication, its release) come before anything is written.
    decideServer({ type: 'ApproveBindings', at: who.at }, server);
    if (server.releaseId !== undefined) await assertReleasePublished(context, scope, server.releaseId, `bind a ${capability} of server ${server.name}`, signal);
    const toolId = requestedId ?? defaultToolId(server.name, idName);
    // A server named `flows` would otherwise bind into the reserved namespace by default.
    assertNotFlowToolId(toolId);
    const bind = (toolVersion: string, on = server) =>
      decideDescriptor({ type: 'BindTool', scope, toolId, toolVersion, server: on, tool, declaration: spec.declaration, binds, boundBy: who.actor, at: who.at }, undefined);
    const candidate = foldDescriptor(undefined, bind('0')) as ToolDescriptor;
    // Read from the record: this id's versions, and this item's versions under any id its server recorded.
    const sameId = await descriptorVersions(context, scope, toolId, signal);
    const otherIds = new Set(loaded.bindings.filter((binding) => binding.toolName === tool.name && binding.toolId !== toolId).map((binding) => binding.toolId));
    const others = await descriptorsOfServer(context, { server, bindings: [...otherIds].map((id) => ({ toolName: tool.name, toolId: id })) }, signal);
    const sameTool = [...sameId, ...others]
      .filter((d) => d.mcpServerId === serverId && d.providerToolName === tool.name && mcpCapabilityOf(d) === capability)
      .sort(compareToolVersions);
    const plan = planBind(candidate, sameTool, sameId);
    // The server first (approved, and the tool id recorded among its bindings): a crash after it leaves an Active
    // server with nothing new bound, never a bound tool on a server that was not approved or does not know of it.
    const approved = await changeServer(
      context,
      scope,
      serverId,
      [
        { type: 'ApproveBindings', at: who.at },
        { type: 'RecordBinding', toolName: tool.name, toolId, at: who.at },
      ],
      who,
      signal,
    );
    if (plan.kind === 'Existing') {
      await refreshReadModel(context, plan.descriptor, signal);
      return withPublicationCheck(context, scope, { descriptor: plan.descriptor, created: false, serverState: approved.server.state }, signal);
    }
    const descriptor = foldDescriptor(undefined, bind(plan.toolVersion, approved.server)) as ToolDescriptor;
    const created = await createDescriptor(context, descriptor, bind(plan.toolVersion, approved.server), who, signal);
    if (!created.created) {
      // A concurrent bind took this version: the same binding is this one; anything else, plan again.
      if (bindingFingerprint(created.descriptor) === bindingFingerprint(descriptor) && created.descriptor.active) {
        await refreshReadModel(context, created.descriptor, signal);
        return withPublicationCheck(context, scope, { descriptor: created.descriptor, created: false, serverState: approved.server.state }, signal);
      }
      continue;
    }
    for (const old of plan.supersede) await changeDescriptor(context, old, { type: 'RetireDescriptor', reason: 'Superseded', at: who.at }, who, signal);
    const after = await retireIfReleaseEnded(context, scope, created.descriptor, who, signal);
    return withPublicationCheck(context, scope, { descriptor: after, created: true, serverState: approved.server.state }, signal);
  }
  throw new ToolplaneError('CONFLICT', `the bindings of this ${capability} kept changing under this bind; try again`, { retryable: true });
}

/**
 * A release deprecated or revoked while this bind ran may have missed the new descriptor (it retired what was bound
 * before): the descriptor is retired here as the release's change would have retired it.
 */
async function retireIfReleaseEnded(context: RegistryContext, scope: Scope, descriptor: ToolDescriptor, who: Actor, signal?: AbortSignal): Promise<ToolDescriptor> {
  if (descriptor.releaseId === undefined) return descriptor;
  const { release } = await readRelease(context, scope, descriptor.releaseId, signal);
  if (release === undefined || release.state === 'Published') return descriptor;
  const changed = await changeDescriptor(context, descriptor, { type: 'RetireDescriptor', reason: retirementReasonOf(release.state), inFlight: release.inFlight, at: who.at }, who, signal);
  return changed.descriptor;
}

/** Unbinds a tool: its active descriptor versions are retired (Unbound). Unbinding an unbound tool again changes nothing. */
export async function unbindTool(context: RegistryContext, scope: Scope, request: UnbindToolRequest, actor: string, signal?: AbortSignal): Promise<UnbindToolReply> {
  const who: Actor = { actor, at: context.now() };
  const loaded = await loadServer(context, scope, request.serverId, signal);
  const { server } = loaded;
  assertNotFlowProvider(server, 'unbind a tool of');
  const versions = (await descriptorsOfServer(context, loaded, signal))
    .filter((candidate) => candidate.providerToolName === request.toolName && mcpCapabilityOf(candidate) === request.capability)
    .sort(compareToolVersions);
  const latest = versions.at(-1);
  if (latest === undefined) throw new ToolplaneError('NOT_FOUND', `the ${request.capability} ${JSON.stringify(request.toolName)} of server ${server.name} is not bound`);
  let descriptor = latest;
  for (const version of versions.filter((candidate) => candidate.active)) {
    const changed = await changeDescriptor(context, version, { type: 'RetireDescriptor', reason: 'Unbound', at: who.at }, who, signal);
    if (version.toolVersion === latest.toolVersion && version.toolId === latest.toolId) descriptor = changed.descriptor;
  }
  return { descriptor };
}
