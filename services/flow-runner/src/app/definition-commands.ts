import {
  ToolplaneError,
  toolDefinitionStreamId,
  type CreateDefinitionReply,
  type CreateDefinitionRequest,
  type DefinitionReply,
  type DeleteDefinitionRequest,
  type GetDefinitionReply,
  type GetDefinitionRequest,
  type ListDefinitionsReply,
  type ListDefinitionsRequest,
  type Scope,
  type ToolDefinition,
  type ToolDefinitionSpec,
  type UpdateDefinitionRequest,
} from '@toolplane/contracts';
import { handleCommand } from '@toolplane/event-store';
import { definitionDecider, definitionDocument, definitionExists, type DefinitionAggregate, type DefinitionCommand } from '../core/definition-aggregate.js';
import type { FlowAggregate } from '../core/flow-aggregate.js';
import { page, readAllDefinitions, readDefinition, readFlow, type ManagementContext, type Operator } from './management-context.js';
import { materializeDefinition } from './materialize.js';

// The ToolDefinition use cases: decide against the definition's record (ETag CRUD, schema equality with its Flow when
// saved enabled), append, then have the registry publish or retire its tool (materialize.ts). The Flow a spec
// references is read before the decision and passed in: the decision is pure, and a lost race decides again with it.

function documentOf(scope: Scope, state: DefinitionAggregate, name: string): ToolDefinition {
  const document = definitionDocument(scope, state);
  if (document === undefined) throw new ToolplaneError('NOT_FOUND', `no definition ${name} in this workspace`);
  return document;
}

/** The Flow an enabled spec must resolve (a disabled one needs none). */
async function flowFor(context: ManagementContext, scope: Scope, spec: ToolDefinitionSpec, signal?: AbortSignal): Promise<{ flow?: FlowAggregate }> {
  return spec.enabled ? { flow: await readFlow(context, scope, spec.flow.flowId, signal) } : {};
}

/**
 * MCP names are unique among a workspace's definitions (an MCP client lists tools by them). Checked against the
 * record before the change: two saves racing to claim one name within the same few milliseconds could both pass.
 */
async function checkMcpNameFree(context: ManagementContext, scope: Scope, spec: ToolDefinitionSpec, signal?: AbortSignal): Promise<void> {
  for (const [name, state] of await readAllDefinitions(context, scope, signal)) {
    if (name !== spec.name && definitionExists(state) && state.definition?.spec.mcpName === spec.mcpName) {
      throw new ToolplaneError('CONFLICT', `the MCP name ${spec.mcpName} is taken by definition ${name} in this workspace`);
    }
  }
}

async function change(context: ManagementContext, scope: Scope, name: string, command: DefinitionCommand, operator: Operator, signal?: AbortSignal) {
  const handled = await handleCommand(context.definitions, definitionDecider, toolDefinitionStreamId(scope, name), command, signal === undefined ? {} : { signal });
  const definition = documentOf(scope, handled.newState, name);
  const tool = await materializeDefinition(context.registry, scope, handled.newState, operator, signal);
  return { recorded: handled.newEvents.length > 0, reply: { definition, etag: definition.etag, ...(tool === undefined ? {} : { tool }) } satisfies DefinitionReply };
}

/** Creates a definition if its name is free (the same create again is answered with what it made). */
export async function createDefinition(context: ManagementContext, scope: Scope, request: CreateDefinitionRequest, operator: Operator, signal?: AbortSignal): Promise<CreateDefinitionReply> {
  const spec = request.definition;
  await checkMcpNameFree(context, scope, spec, signal);
  const command: DefinitionCommand = { type: 'CreateDefinition', spec, ...(await flowFor(context, scope, spec, signal)), actor: operator.principal, at: context.now() };
  const { recorded, reply } = await change(context, scope, spec.name, command, operator, signal);
  return { ...reply, created: recorded };
}

/** Replaces a definition at its current etag. */
export async function updateDefinition(context: ManagementContext, scope: Scope, request: UpdateDefinitionRequest, operator: Operator, signal?: AbortSignal): Promise<DefinitionReply> {
  const spec = request.definition;
  if (spec.name !== request.name) throw new ToolplaneError('INVALID_ARGUMENT', `the definition sent is named ${spec.name}, not ${request.name} (a definition cannot be renamed)`);
  await checkMcpNameFree(context, scope, spec, signal);
  const command: DefinitionCommand = { type: 'UpdateDefinition', spec, ifMatch: request.ifMatch, ...(await flowFor(context, scope, spec, signal)), actor: operator.principal, at: context.now() };
  return (await change(context, scope, spec.name, command, operator, signal)).reply;
}

/** Deletes a definition at its current etag; its tool is retired. */
export async function deleteDefinition(context: ManagementContext, scope: Scope, request: DeleteDefinitionRequest, operator: Operator, signal?: AbortSignal): Promise<DefinitionReply> {
  const command: DefinitionCommand = { type: 'DeleteDefinition', name: request.name, ifMatch: request.ifMatch, actor: operator.principal, at: context.now() };
  return (await change(context, scope, request.name, command, operator, signal)).reply;
}

/** Reads a definition and its etag; NOT_FOUND when it does not exist (never created, or deleted). */
export async function getDefinition(context: ManagementContext, scope: Scope, request: GetDefinitionRequest, signal?: AbortSignal): Promise<GetDefinitionReply> {
  const state = await readDefinition(context, scope, request.name, signal);
  if (!definitionExists(state)) throw new ToolplaneError('NOT_FOUND', `no definition ${request.name} in this workspace`);
  const definition = documentOf(scope, state, request.name);
  return { definition, etag: definition.etag };
}

/** Lists the workspace's definitions by name (deleted ones are not listed), a page at a time. */
export async function listDefinitions(context: ManagementContext, scope: Scope, request: ListDefinitionsRequest, signal?: AbortSignal): Promise<ListDefinitionsReply> {
  const all = [...(await readAllDefinitions(context, scope, signal)).values()].filter(definitionExists).flatMap((state) => definitionDocument(scope, state) ?? []);
  const selected = all.filter((definition) => (request.flowId === undefined || definition.flow.flowId === request.flowId) && (request.enabled === undefined || definition.enabled === request.enabled));
  const { items, next } = page(selected, (definition) => definition.name, request.limit, request.after);
  return { definitions: items, next };
}
