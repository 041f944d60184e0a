import { z } from 'zod';
import { AuditChainBreak, FlowJournalEntry, ProjectionRebuild, RuntimeToolCall } from './audit-projections.js';
import { ToolFailure } from './errors.js';
import { AgentRevision, DurationMs, ExternalId, IdempotencyKey, InvocationId, IsoDateTime, Sha256Hex, TenantId, ToolCallId, ToolId } from './primitives.js';
import { InvocationState } from './states.js';

// Request/reply contracts of the audit service (`tp.v1.cmd.{tenant}.{workspace}.audit.{operation}`): queries over
// the projections and the projector's operations. Scope comes from the subject (the caller's credentials), never
// from a body.

/** The audit service's request/reply operations, as they appear in command subjects. */
export const auditOperations = {
  getCall: 'getCall',
  listCalls: 'listCalls',
  flowJournal: 'flowJournal',
  verifyChain: 'verifyChain',
  rebuildProjections: 'rebuildProjections',
  projectionStatus: 'projectionStatus',
} as const;

const pageLimit = z.number().int().min(1).max(200).default(50);
const pageCursor = z.string().min(1).max(2048);

/** One attempt of a RuntimeToolCall as the queries show it. */
export const RuntimeToolCallAttemptView = z.strictObject({
  attempt: z.number().int().positive(),
  invocationId: InvocationId,
  state: InvocationState,
  highestSequence: z.number().int().positive(),
  receivedAt: IsoDateTime.optional(),
  startedAt: IsoDateTime.optional(),
  endedAt: IsoDateTime.optional(),
  durationMs: DurationMs.optional(),
  failure: ToolFailure.optional(),
});
export type RuntimeToolCallAttemptView = z.infer<typeof RuntimeToolCallAttemptView>;

/** A RuntimeToolCall as `calls show` sees it: its fold state replaced by one line per attempt. */
export const RuntimeToolCallView = RuntimeToolCall.omit({ attempts: true }).extend({ attempts: z.array(RuntimeToolCallAttemptView) });
export type RuntimeToolCallView = z.infer<typeof RuntimeToolCallView>;

/** A RuntimeToolCall as `calls list` sees it. */
export const RuntimeToolCallSummary = RuntimeToolCall.omit({ attempts: true, sequenceHighWater: true });
export type RuntimeToolCallSummary = z.infer<typeof RuntimeToolCallSummary>;

/** Names one logical tool call of the scope. */
export const GetCallRequest = z.strictObject({ toolCallId: ToolCallId });
export type GetCallRequest = z.infer<typeof GetCallRequest>;

/** The call; NOT_FOUND when the scope has none by that id. */
export const GetCallReply = z.strictObject({ call: RuntimeToolCallView });
export type GetCallReply = z.infer<typeof GetCallReply>;

/** Lists the scope's calls, latest activity first, narrowed by any of the filters; `after` is the previous page's `next`. */
export const ListCallsRequest = z.strictObject({
  flowRunId: ExternalId.optional(),
  agentId: ExternalId.optional(),
  agentRevision: AgentRevision.optional(),
  toolId: ToolId.optional(),
  state: InvocationState.optional(),
  correlationId: ExternalId.optional(),
  /** The call made with this idempotency key (at most one per scope). */
  idempotencyKey: IdempotencyKey.optional(),
  /** Only calls with an event at or after this time. */
  since: IsoDateTime.optional(),
  limit: pageLimit,
  after: pageCursor.optional(),
});
export type ListCallsRequest = z.infer<typeof ListCallsRequest>;

/** One page of calls; `next` is null on the last page. */
export const ListCallsReply = z.strictObject({ items: z.array(RuntimeToolCallSummary), next: z.string().nullable() });
export type ListCallsReply = z.infer<typeof ListCallsReply>;

/** Reads a FlowRun's tool-call journal of the scope, in order. */
export const FlowJournalRequest = z.strictObject({ flowRunId: ExternalId, limit: pageLimit, after: pageCursor.optional() });
export type FlowJournalRequest = z.infer<typeof FlowJournalRequest>;

/** One page of a FlowRun's journal; `next` is null on the last page. */
export const FlowJournalReply = z.strictObject({ flowRunId: ExternalId, entries: z.array(FlowJournalEntry), next: z.string().nullable() });
export type FlowJournalReply = z.infer<typeof FlowJournalReply>;

/** Walks the audit chain of the subject's tenant from its first entry. */
export const VerifyChainRequest = z.strictObject({});
export type VerifyChainRequest = z.infer<typeof VerifyChainRequest>;

/** What the walk found: the entries read, the last good position and hash, and the first break if there is one. */
export const VerifyChainReply = z.strictObject({
  tenant: TenantId,
  ok: z.boolean(),
  /** How many entries were read. */
  entries: z.number().int().nonnegative(),
  /** The last position before the first break (the head when the chain is intact); 0 when there is none. */
  verifiedThrough: z.number().int().nonnegative(),
  headHash: Sha256Hex.optional(),
  firstBreak: AuditChainBreak.optional(),
});
export type VerifyChainReply = z.infer<typeof VerifyChainReply>;

/** Starts a rebuild of the projections from the stream's first sequence (CONFLICT while one is running). */
export const RebuildProjectionsRequest = z.strictObject({});
export type RebuildProjectionsRequest = z.infer<typeof RebuildProjectionsRequest>;

/** Asks which projection generation is live and how the latest rebuild went. */
export const ProjectionStatusRequest = z.strictObject({});
export type ProjectionStatusRequest = z.infer<typeof ProjectionStatusRequest>;

/** Which generation queries read, and the latest rebuild. */
export const ProjectionStatusReply = z.strictObject({
  live: z.number().int().positive(),
  previous: z.number().int().positive().optional(),
  rebuild: ProjectionRebuild.optional(),
});
export type ProjectionStatusReply = z.infer<typeof ProjectionStatusReply>;

/** Each operation's request and reply contract, for callers (`call(service, operation, schemas, body)`). */
export const auditCommandSchemas = {
  getCall: { request: GetCallRequest, reply: GetCallReply },
  listCalls: { request: ListCallsRequest, reply: ListCallsReply },
  flowJournal: { request: FlowJournalRequest, reply: FlowJournalReply },
  verifyChain: { request: VerifyChainRequest, reply: VerifyChainReply },
  rebuildProjections: { request: RebuildProjectionsRequest, reply: ProjectionStatusReply },
  projectionStatus: { request: ProjectionStatusRequest, reply: ProjectionStatusReply },
} as const;
