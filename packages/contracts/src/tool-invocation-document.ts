import { z } from 'zod';
import { SandboxLeaseRecord } from './sandbox.js';
import { InvocationCompletion } from './completion.js';
import { IdempotencySemantics, RiskClass, SideEffectClass } from './classification.js';
import { ToolFailure } from './errors.js';
import { PipelineStage } from './invocation-events.js';
import { InvocationReceipt } from './invocation-receipt.js';
import {
  AgentRevision,
  ExternalId,
  IdempotencyKey,
  InvocationId,
  IsoDateTime,
  PrincipalId,
  SUBJECT_TOKEN_PATTERN,
  Sha256Hex,
  TenantId,
  ToolCallId,
  ToolId,
  ToolVersion,
  Uuid,
  WorkspaceId,
} from './primitives.js';
import { FlowRunReceipt } from './flow-run-work.js';
import { InvocationState } from './states.js';

/**
 * The write model of one physical invocation attempt (collection `tool_invocations`), unique per (tenant,
 * workspace, idempotencyKey) for its logical call. Transitions are guarded by compare-and-set on `state` and
 * `version`, so two replicas never both execute it.
 */
export const ToolInvocation = z.object({
  invocationId: InvocationId,
  tenant: TenantId,
  workspace: WorkspaceId,
  toolCallId: ToolCallId,
  attempt: z.number().int().positive(),
  idempotencyKey: IdempotencyKey,
  idempotencyKeyDerived: z.boolean(),
  requestHash: Sha256Hex,
  principal: PrincipalId,
  agentId: ExternalId.optional(),
  agentRevision: AgentRevision.optional(),
  toolId: ToolId,
  /** The resolved exact version; absent only while the tool is not resolved (or could not be). */
  toolVersion: ToolVersion.optional(),
  requestedToolVersion: ToolVersion.optional(),
  correlationId: ExternalId,
  causationId: ExternalId.optional(),
  flowRunId: ExternalId.optional(),
  workItemId: ExternalId.optional(),
  /** Where the reply goes, kept so a call resumed after approval on any replica can still answer. */
  replyInbox: z.string().regex(SUBJECT_TOKEN_PATTERN).optional(),
  /**
   * The arguments as canonical JSON text, kept so a call parked for approval can resume on any replica. The
   * adapter's own store: arguments never reach events or projections.
   */
  argumentsJson: z.string(),
  /** For a completion (`completion/complete`): the argument and partial value asked about; `argumentsJson` holds the others. */
  completion: InvocationCompletion.optional(),
  declaredClass: SideEffectClass.optional(),
  /** The declared class raised by environment and policy; never lower than `declaredClass`. */
  effectiveClass: SideEffectClass.optional(),
  riskClass: RiskClass.optional(),
  idempotency: IdempotencySemantics.optional(),
  policyDecisionId: Uuid.optional(),
  approvalId: Uuid.optional(),
  sandboxLeaseId: Uuid.optional(),
  /** The sandbox the SANDBOX stage leased (kind, profile, limits), when it leased one. */
  sandbox: SandboxLeaseRecord.optional(),
  secretLeaseIds: z.array(Uuid).max(16),
  mcpServerId: Uuid.optional(),
  state: InvocationState,
  /** The sequence number of the last event this invocation emitted (0 before the first). */
  eventSequence: z.number().int().nonnegative(),
  receivedAt: IsoDateTime,
  deadline: IsoDateTime,
  startedAt: IsoDateTime.optional(),
  endedAt: IsoDateTime.optional(),
  /** The sanitized result as JSON text (replayed to a caller that repeats the same key). */
  resultJson: z.string().optional(),
  resultHash: Sha256Hex.optional(),
  /** The run a flow-backed tool's call was (its receipt's `flowRun`): set when FlowRunner answered. */
  flowRun: FlowRunReceipt.optional(),
  failure: ToolFailure.optional(),
  /** For Denied: the pipeline stage that refused the call (its InvocationDenied event names it too). */
  deniedStage: PipelineStage.optional(),
  /** For Uncertain: true when the attempt was found interrupted (adapter restart) rather than seen to time out. */
  interrupted: z.boolean().optional(),
  /** How an operator settled an Uncertain invocation: the effect was observed or did not happen. */
  reconciliation: z
    .strictObject({ outcome: z.enum(['observed', 'failed']), by: PrincipalId, reason: z.string().min(1).max(1024), at: IsoDateTime })
    .optional(),
  /** The signed receipt, once the invocation is terminal. */
  receipt: InvocationReceipt.optional(),
  updatedAt: IsoDateTime,
  /** Incremented by every transition; the compare-and-set guard. */
  version: z.number().int().positive(),
});
export type ToolInvocation = z.infer<typeof ToolInvocation>;
