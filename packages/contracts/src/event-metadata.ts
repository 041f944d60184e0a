import { z } from 'zod';
import { AgentRevision, EventId, ExternalId, InvocationId, IsoDateTime, PrincipalId, TenantId, ToolCallId, ToolId, ToolVersion, WorkspaceId } from './primitives.js';

/** Metadata of every lifecycle event outside an invocation's own sequence (registry, secrets, approval decisions). */
export const EventMetadata = z.strictObject({
  eventId: EventId,
  tenant: TenantId,
  workspace: WorkspaceId,
  occurredAt: IsoDateTime,
  correlationId: ExternalId.optional(),
  causationId: ExternalId.optional(),
  /** Who did it (an operator, a deciding human, a service identity). */
  actor: PrincipalId.optional(),
});
export type EventMetadata = z.infer<typeof EventMetadata>;

/**
 * Metadata of the events one invocation emits, in order. `sequence` counts that invocation's events from 1,
 * so (invocationId, sequence) identifies an event for deduplication and projections can order by it.
 */
export const InvocationEventMetadata = z.strictObject({
  eventId: EventId,
  tenant: TenantId,
  workspace: WorkspaceId,
  principal: PrincipalId,
  /** Absent when the caller is not an agent (an operator invoking through the CLI). */
  agentId: ExternalId.optional(),
  agentRevision: AgentRevision.optional(),
  toolCallId: ToolCallId,
  invocationId: InvocationId,
  /** The physical attempt of the logical call, from 1. */
  attempt: z.number().int().positive(),
  /** This event's position among the invocation's events, from 1. */
  sequence: z.number().int().positive(),
  toolId: ToolId,
  /** Absent only when the request named no version and none could be resolved (an unknown or inactive tool). */
  toolVersion: ToolVersion.optional(),
  flowRunId: ExternalId.optional(),
  workItemId: ExternalId.optional(),
  correlationId: ExternalId,
  causationId: ExternalId.optional(),
  occurredAt: IsoDateTime,
});
export type InvocationEventMetadata = z.infer<typeof InvocationEventMetadata>;

/** Metadata of an approval decision, made by the approval service outside the invocation's sequence. */
export const ApprovalEventMetadata = EventMetadata.extend({
  invocationId: InvocationId,
  toolCallId: ToolCallId,
  toolId: ToolId,
  toolVersion: ToolVersion,
  flowRunId: ExternalId.optional(),
  workItemId: ExternalId.optional(),
});
export type ApprovalEventMetadata = z.infer<typeof ApprovalEventMetadata>;

/** Builds the schema of one lifecycle event: `{ type, data, metadata }`, strict at every level. */
export function defineEvent<const T extends string, M extends z.ZodType, D extends z.ZodType>(type: T, metadata: M, data: D, description: string) {
  return z.strictObject({ type: z.literal(type), data, metadata }).meta({ description });
}
