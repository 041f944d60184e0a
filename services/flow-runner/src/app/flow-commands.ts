import {
  ToolplaneError,
  flowStreamId,
  type ActivateFlowReply,
  type ActivateFlowRequest,
  type FlowSummary,
  type GetFlowReply,
  type GetFlowRequest,
  type ListFlowsReply,
  type ListFlowsRequest,
  type PublishFlowReply,
  type PublishFlowRequest,
  type SaveFlowDraftReply,
  type SaveFlowDraftRequest,
  type Scope,
} from '@toolplane/contracts';
import { foldEvents, handleCommand } from '@toolplane/event-store';
import { definitionExists } from '../core/definition-aggregate.js';
import {
  activeVersionOf,
  currentDraft,
  flowDecider,
  flowNotFound,
  flowVersionDocument,
  flowVersionOf,
  flowVersionSummaries,
  type FlowAggregate,
  type FlowVersionState,
} from '../core/flow-aggregate.js';
import { groupRecords, page, readAllDefinitions, readFlow, type ManagementContext, type Operator } from './management-context.js';

// The Flow use cases: read the Flow's record, decide, append at the version read (handleCommand decides again after a
// lost race). Publishing validates the draft's whole body first, outside the decision (it reads descriptors); the
// decision then checks that the draft is still the body that was validated.

function versionOrNotFound(flow: FlowAggregate, flowId: string, version: number): FlowVersionState {
  const state = flowVersionOf(flow, version);
  if (state === undefined) throw flowNotFound(flowId, version);
  return state;
}

const signalOf = (signal?: AbortSignal) => (signal === undefined ? {} : { signal });

/** Saves a Flow's draft (see SaveFlowDraftRequest). */
export async function saveFlowDraft(context: ManagementContext, scope: Scope, request: SaveFlowDraftRequest, operator: Operator, signal?: AbortSignal): Promise<SaveFlowDraftReply> {
  const command = { type: 'SaveFlowDraft', flowId: request.flowId, body: request.body, actor: operator.principal, at: context.now(), ...(request.version === undefined ? {} : { version: request.version }) } as const;
  const handled = await handleCommand(context.flows, flowDecider, flowStreamId(scope, request.flowId), command, signalOf(signal));
  const saved = handled.newEvents[0];
  // Nothing recorded: the draft named (or the current one) already had this body.
  const version = saved?.version ?? request.version ?? currentDraft(handled.newState)?.version;
  if (version === undefined) throw new ToolplaneError('INTERNAL', `saving a draft of flow ${request.flowId} left no draft`);
  const state = versionOrNotFound(handled.newState, request.flowId, version);
  return { flow: flowVersionDocument(scope, request.flowId, handled.newState, state), saved: saved !== undefined };
}

/** Validates and publishes a draft (see PublishFlowRequest). */
export async function publishFlow(context: ManagementContext, scope: Scope, request: PublishFlowRequest, operator: Operator, signal?: AbortSignal): Promise<PublishFlowReply> {
  const flow = await readFlow(context, scope, request.flowId, signal);
  if (flow.versions.length === 0) throw flowNotFound(request.flowId);
  const version = request.version ?? currentDraft(flow)?.version;
  if (version === undefined) throw new ToolplaneError('NOT_FOUND', `flow ${request.flowId} has no draft to publish (name a version to read one that is published)`);
  const target = versionOrNotFound(flow, request.flowId, version);
  if (target.status === 'Published') return { flow: flowVersionDocument(scope, request.flowId, flow, target), published: false };
  await context.validateBody(scope, target.body, signal);
  const handled = await handleCommand(
    context.flows,
    flowDecider,
    flowStreamId(scope, request.flowId),
    { type: 'PublishFlowVersion', flowId: request.flowId, version, bodyHash: target.bodyHash, actor: operator.principal, at: context.now() },
    signalOf(signal),
  );
  const published = versionOrNotFound(handled.newState, request.flowId, version);
  return { flow: flowVersionDocument(scope, request.flowId, handled.newState, published), published: handled.newEvents.length > 0 };
}

/**
 * Activates a Published version (see ActivateFlowRequest). The decision is given the workspace's definitions of this
 * flow as read just before it. A definition enabled concurrently, against the version active before, is checked
 * against that version: the two checks are on different aggregates, so an enable and an activation racing within
 * the same few milliseconds could both pass; the next save of the definition then refuses the mismatch.
 */
export async function activateFlow(context: ManagementContext, scope: Scope, request: ActivateFlowRequest, operator: Operator, signal?: AbortSignal): Promise<ActivateFlowReply> {
  const definitions = [...(await readAllDefinitions(context, scope, signal)).values()]
    .filter((state) => definitionExists(state) && state.definition?.spec.flow.flowId === request.flowId)
    .flatMap((state) => (state.definition === undefined ? [] : [state.definition.spec]));
  const before = await readFlow(context, scope, request.flowId, signal);
  if (before.versions.length === 0) throw flowNotFound(request.flowId);
  const handled = await handleCommand(
    context.flows,
    flowDecider,
    flowStreamId(scope, request.flowId),
    { type: 'ActivateFlowVersion', flowId: request.flowId, version: request.version, definitions, actor: operator.principal, at: context.now() },
    signalOf(signal),
  );
  const activated = handled.newEvents.find((event) => event.type === 'FlowVersionActivated');
  const state = versionOrNotFound(handled.newState, request.flowId, request.version);
  return {
    flow: flowVersionDocument(scope, request.flowId, handled.newState, state),
    ...(activated?.type === 'FlowVersionActivated' && activated.previousVersion !== undefined ? { previousVersion: activated.previousVersion } : {}),
    activated: activated !== undefined,
  };
}

/** Reads one version of a Flow: the one named, else the Active one, else the newest. */
export async function getFlow(context: ManagementContext, scope: Scope, request: GetFlowRequest, signal?: AbortSignal): Promise<GetFlowReply> {
  const flow = await readFlow(context, scope, request.flowId, signal);
  const newest = flow.versions.at(-1);
  if (newest === undefined) throw flowNotFound(request.flowId);
  const state = request.version === undefined ? (activeVersionOf(flow) ?? newest) : versionOrNotFound(flow, request.flowId, request.version);
  return { flow: flowVersionDocument(scope, request.flowId, flow, state), versions: flowVersionSummaries(flow) };
}

function summaryOf(flowId: string, flow: FlowAggregate): FlowSummary | undefined {
  const newest = flow.versions.at(-1);
  if (newest === undefined) return undefined;
  const title = newest.body.title;
  const draft = currentDraft(flow);
  return {
    flowId,
    ...(title === undefined ? {} : { title }),
    latestVersion: newest.version,
    ...(flow.activeVersion === undefined ? {} : { activeVersion: flow.activeVersion }),
    ...(draft === undefined ? {} : { draftVersion: draft.version }),
    publishedVersions: flow.versions.filter((state) => state.status === 'Published').length,
    updatedAt: flow.versions.flatMap((state) => [state.updatedAt, state.publishedAt ?? '', state.activatedAt ?? '']).reduce((a, b) => (a > b ? a : b)),
  };
}

/** Lists the workspace's Flows by id, a page at a time. */
export async function listFlows(context: ManagementContext, scope: Scope, request: ListFlowsRequest, signal?: AbortSignal): Promise<ListFlowsReply> {
  const grouped = groupRecords(await context.readAllFlows(scope, signal), (record) => record.flowId);
  const summaries = [...grouped].flatMap(([flowId, records]) => summaryOf(flowId, foldEvents(flowDecider, records)) ?? []);
  const { items, next } = page(summaries, (summary) => summary.flowId, request.limit, request.after);
  return { flows: items, next };
}
