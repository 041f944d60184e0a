import type { ApprovalRequested, InvocationEvent, InvocationEventMetadata, IsoDateTime, ToolInvocation } from '@toolplane/contracts';
import { invocationEventId } from './deterministic-ids.js';

// Every event an invocation emits carries the next number of its own sequence, stored in the document
// (`eventSequence`) with the state it belongs to. Event ids are derived from (invocationId, sequence), so an event
// rebuilt after a crash is byte-identical to the one that may already have been published.

/** An event of an invocation's own sequence (ApprovalRequested is part of it, though it belongs to the approval family). */
export type PipelineEvent = InvocationEvent | ApprovalRequested;

/** The type names of {@link PipelineEvent}. */
export type PipelineEventType = PipelineEvent['type'];

/** The `data` of the event of type `T`. */
export type PipelineEventData<T extends PipelineEventType> = Extract<PipelineEvent, { type: T }>['data'];

/** The metadata of an invocation's event number `sequence`. */
export function invocationEventMetadata(invocation: ToolInvocation, sequence: number, occurredAt: IsoDateTime): InvocationEventMetadata {
  return {
    eventId: invocationEventId(invocation.invocationId, sequence),
    tenant: invocation.tenant,
    workspace: invocation.workspace,
    principal: invocation.principal,
    ...(invocation.agentId === undefined ? {} : { agentId: invocation.agentId }),
    ...(invocation.agentRevision === undefined ? {} : { agentRevision: invocation.agentRevision }),
    toolCallId: invocation.toolCallId,
    invocationId: invocation.invocationId,
    attempt: invocation.attempt,
    sequence,
    toolId: invocation.toolId,
    ...(invocation.toolVersion === undefined ? {} : { toolVersion: invocation.toolVersion }),
    ...(invocation.flowRunId === undefined ? {} : { flowRunId: invocation.flowRunId }),
    ...(invocation.workItemId === undefined ? {} : { workItemId: invocation.workItemId }),
    correlationId: invocation.correlationId,
    ...(invocation.causationId === undefined ? {} : { causationId: invocation.causationId }),
    occurredAt,
  };
}

/** Builds the invocation's event number `sequence` of type `type`. */
export function invocationEvent<T extends PipelineEventType>(invocation: ToolInvocation, sequence: number, type: T, data: PipelineEventData<T>, occurredAt: IsoDateTime): PipelineEvent {
  return { type, data, metadata: invocationEventMetadata(invocation, sequence, occurredAt) } as PipelineEvent;
}

/** Appends an event: the document with its sequence advanced, and the event carrying the new number. */
export function appendEvent<T extends PipelineEventType>(
  invocation: ToolInvocation,
  type: T,
  data: PipelineEventData<T>,
  occurredAt: IsoDateTime,
): { readonly invocation: ToolInvocation; readonly event: PipelineEvent } {
  const sequence = invocation.eventSequence + 1;
  const next = { ...invocation, eventSequence: sequence };
  return { invocation: next, event: invocationEvent(next, sequence, type, data, occurredAt) };
}
