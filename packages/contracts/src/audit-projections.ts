import { z } from 'zod';
import { RiskClass, SideEffectClass } from './classification.js';
import { ToolFailure } from './errors.js';
import { PipelineStage } from './invocation-events.js';
import {
  AgentRevision,
  DurationMs,
  EventId,
  ExternalId,
  IdempotencyKey,
  InvocationId,
  IsoDateTime,
  PrincipalId,
  Sha256Hex,
  TenantId,
  ToolCallId,
  ToolId,
  ToolVersion,
  Uuid,
  WorkspaceId,
} from './primitives.js';
import { InvocationState } from './states.js';

// The documents the audit projector folds lifecycle events into. They hold ids, states, times and the hashes the
// events carry; never arguments or results. Every map below is keyed by a decimal number (an attempt or a
// sequence), which is a storable key.

/** A positive whole number written as a map key: an attempt or a sequence number. */
export const NumberKey = z.string().regex(/^[1-9][0-9]{0,8}$/);

/** The event types that carry an invocation's own metadata (attempt, sequence) and so fold into a RuntimeToolCall. */
export const CallEventType = z.enum([
  'InvocationReceived',
  'InvocationDenied',
  'ApprovalRequested',
  'SandboxLeased',
  'SandboxReleased',
  'ToolCallStarted',
  'ToolCallCompleted',
  'ToolCallFailed',
  'ToolCallCancelled',
  'ToolEffectUncertain',
]);
export type CallEventType = z.infer<typeof CallEventType>;

/** What a RuntimeToolCall keeps of one event of an attempt: its type, id, time, and the ids and hashes it carries. */
export const CallEventSummary = z.strictObject({
  type: CallEventType,
  eventId: EventId,
  occurredAt: IsoDateTime,
  requestHash: Sha256Hex.optional(),
  /** The call's idempotency key, from InvocationReceived and ToolCallStarted. */
  idempotencyKey: IdempotencyKey.optional(),
  argumentsHash: Sha256Hex.optional(),
  resultHash: Sha256Hex.optional(),
  truncated: z.boolean().optional(),
  durationMs: DurationMs.optional(),
  failure: ToolFailure.optional(),
  stage: PipelineStage.optional(),
  policyDecisionId: Uuid.optional(),
  approvalId: Uuid.optional(),
  sandboxLeaseId: Uuid.optional(),
  declaredSideEffectClass: SideEffectClass.optional(),
  sideEffectClass: SideEffectClass.optional(),
  riskClass: RiskClass.optional(),
});
export type CallEventSummary = z.infer<typeof CallEventSummary>;

/** Who and what an attempt was about, as the attempt's latest event (by sequence, then event id) says. */
export const CallAttemptIdentity = z.strictObject({
  sequence: z.number().int().positive(),
  eventId: EventId,
  invocationId: InvocationId,
  principal: PrincipalId,
  agentId: ExternalId.optional(),
  agentRevision: AgentRevision.optional(),
  toolId: ToolId,
  correlationId: ExternalId,
  causationId: ExternalId.optional(),
  flowRunId: ExternalId.optional(),
  workItemId: ExternalId.optional(),
});
export type CallAttemptIdentity = z.infer<typeof CallAttemptIdentity>;

/**
 * The fold state of one attempt: a grow-only map of its events by sequence plus two registers ordered by
 * (sequence, eventId). Merging two of them is commutative, associative and idempotent.
 */
export const CallAttemptState = z.strictObject({
  identity: CallAttemptIdentity,
  /** The resolved tool version from the latest event that names one. */
  toolVersion: z.strictObject({ sequence: z.number().int().positive(), eventId: EventId, value: ToolVersion }).optional(),
  events: z.record(NumberKey, CallEventSummary),
});
export type CallAttemptState = z.infer<typeof CallAttemptState>;

/**
 * RuntimeToolCall (collection `runtime_tool_calls`, `_id` = `{tenant}/{workspace}/{toolCallId}`): one document per
 * logical tool call, folded from its attempts' events whatever their order or repetition. The top-level fields are
 * derived from `attempts` (the fold state) and describe the latest attempt by attempt number.
 */
export const RuntimeToolCall = z.strictObject({
  tenant: TenantId,
  workspace: WorkspaceId,
  toolCallId: ToolCallId,
  principal: PrincipalId,
  agentId: ExternalId.optional(),
  agentRevision: AgentRevision.optional(),
  toolId: ToolId,
  toolVersion: ToolVersion.optional(),
  /** The physical attempt with the highest attempt number seen. */
  invocationId: InvocationId,
  /** The highest attempt number seen: a call retried once after a crash counts 2. */
  attemptCount: z.number().int().positive(),
  /** The latest attempt's state. */
  state: InvocationState,
  firstEventAt: IsoDateTime,
  /** The latest event time seen (event time, not arrival): the order of `calls list`. */
  lastEventAt: IsoDateTime,
  receivedAt: IsoDateTime.optional(),
  /** When the first attempt that reached the provider started. */
  startedAt: IsoDateTime.optional(),
  /** When the last attempt that ended did so. */
  endedAt: IsoDateTime.optional(),
  /** The latest attempt's duration, from its terminal event. */
  durationMs: DurationMs.optional(),
  /** The latest attempt's failure: code, the provider's error type, message. */
  failure: ToolFailure.optional(),
  approvalId: Uuid.optional(),
  policyDecisionId: Uuid.optional(),
  correlationId: ExternalId,
  causationId: ExternalId.optional(),
  flowRunId: ExternalId.optional(),
  workItemId: ExternalId.optional(),
  requestHash: Sha256Hex.optional(),
  /** The idempotency key the call was made with (`calls list --key`); absent in documents folded before it was kept. */
  idempotencyKey: IdempotencyKey.optional(),
  argumentsHash: Sha256Hex.optional(),
  resultHash: Sha256Hex.optional(),
  sideEffectClass: SideEffectClass.optional(),
  riskClass: RiskClass.optional(),
  /** The highest event sequence seen, by attempt number. */
  sequenceHighWater: z.record(NumberKey, z.number().int().positive()),
  attempts: z.record(NumberKey, CallAttemptState),
});
export type RuntimeToolCall = z.infer<typeof RuntimeToolCall>;

/** A RuntimeToolCall as stored: its `_id` and the compare-and-set version. */
export const RuntimeToolCallDocument = RuntimeToolCall.extend({ _id: z.string(), version: z.number().int().positive() });
export type RuntimeToolCallDocument = z.infer<typeof RuntimeToolCallDocument>;

/** The journal entry types of a FlowRun: a cancelled or uncertain call is journaled as failed (`eventType` says which). */
export const FlowJournalEntryType = z.enum(['ToolCallStarted', 'ToolCallCompleted', 'ToolCallFailed']);
export type FlowJournalEntryType = z.infer<typeof FlowJournalEntryType>;

/**
 * One entry of a FlowRun's tool-call journal (collection `flow_journal`, `_id` = `{tenant}/{workspace}/{eventId}`,
 * so each event is appended once). Read in `orderKey` order: event time, then call, attempt and sequence.
 */
export const FlowJournalEntry = z.strictObject({
  tenant: TenantId,
  workspace: WorkspaceId,
  flowRunId: ExternalId,
  workItemId: ExternalId.optional(),
  type: FlowJournalEntryType,
  eventType: CallEventType,
  eventId: EventId,
  occurredAt: IsoDateTime,
  toolCallId: ToolCallId,
  invocationId: InvocationId,
  attempt: z.number().int().positive(),
  sequence: z.number().int().positive(),
  toolId: ToolId,
  toolVersion: ToolVersion.optional(),
  durationMs: DurationMs.optional(),
  requestHash: Sha256Hex.optional(),
  argumentsHash: Sha256Hex.optional(),
  resultHash: Sha256Hex.optional(),
  failure: ToolFailure.optional(),
  /** `{occurredAt as ISO}|{toolCallId}|{attempt}|{sequence}`, zero-padded, so one string sorts the journal. */
  orderKey: z.string().max(400),
});
export type FlowJournalEntry = z.infer<typeof FlowJournalEntry>;

/**
 * One link of a tenant's audit chain (collection `audit_chain`, `_id` = `{tenant}/{position, 12 digits}`). `hash`
 * is SHA-256 over the canonical JSON of every other field; `prevHash` is the previous position's `hash` (64 zeros
 * at position 1), so editing, deleting or reordering an entry breaks the chain at that entry.
 */
export const AuditChainEntry = z.strictObject({
  tenant: TenantId,
  position: z.number().int().positive(),
  workspace: WorkspaceId,
  eventId: EventId,
  eventType: z.string().min(1).max(64),
  /** SHA-256 of the canonical JSON of the whole event. */
  eventHash: Sha256Hex,
  prevHash: Sha256Hex,
  appendedAt: IsoDateTime,
  hash: Sha256Hex,
});
export type AuditChainEntry = z.infer<typeof AuditChainEntry>;

/** How an audit chain is broken at an entry. */
export const AuditChainBreakKind = z.enum([
  /** The entry's content does not match its own hash: it was edited. */
  'EntryEdited',
  /** No entry at this position although later ones exist (or the head says so): it was deleted. */
  'EntryMissing',
  /** The entry's previous-hash is not its predecessor's hash: entries were replaced or reordered. */
  'LinkBroken',
  /** The entry is stored under another position than the one it was appended at: it was moved. */
  'EntryMoved',
  /** The entry cannot be read as a chain entry at all. */
  'EntryMalformed',
]);
export type AuditChainBreakKind = z.infer<typeof AuditChainBreakKind>;

/** The first break of a chain: where, how, and the entry concerned (when it still exists). */
export const AuditChainBreak = z.strictObject({
  position: z.number().int().positive(),
  kind: AuditChainBreakKind,
  entryId: z.string().max(200).optional(),
  eventId: EventId.optional(),
  message: z.string().max(1000),
});
export type AuditChainBreak = z.infer<typeof AuditChainBreak>;

/** Where a rebuild is. */
export const ProjectionRebuildState = z.enum(['Running', 'Completed', 'Failed']);
export type ProjectionRebuildState = z.infer<typeof ProjectionRebuildState>;

/** The latest rebuild of the projections. */
export const ProjectionRebuild = z.strictObject({
  generation: z.number().int().positive(),
  state: ProjectionRebuildState,
  startedAt: IsoDateTime,
  heartbeatAt: IsoDateTime,
  /** The stream's last sequence when the rebuild switched over; it keeps folding until it has passed it. */
  switchSequence: z.number().int().nonnegative().optional(),
  switchedAt: IsoDateTime.optional(),
  finishedAt: IsoDateTime.optional(),
  message: z.string().max(1000).optional(),
});
export type ProjectionRebuild = z.infer<typeof ProjectionRebuild>;

/**
 * Which generation of the rebuildable projections (`runtime_tool_calls`, `flow_journal`; generation n > 1 lives in
 * `<name>_g<n>`) is live (collection `projection_generations`, `_id` = the projector's name). Changed only by
 * compare-and-set. The audit chain is never rebuilt: it is the tamper-evident record itself.
 */
export const ProjectionGenerations = z.strictObject({
  _id: z.string(),
  live: z.number().int().positive(),
  previous: z.number().int().positive().optional(),
  rebuild: ProjectionRebuild.extend({ holder: z.string().max(200) }).optional(),
  version: z.number().int().positive(),
});
export type ProjectionGenerations = z.infer<typeof ProjectionGenerations>;
