import { z } from 'zod';
import { ToolFailure } from './errors.js';
import { FlowStepId } from './flow-definition.js';
import {
  AgentRevision,
  ExternalId,
  IdempotencyKey,
  InvocationId,
  IsoDateTime,
  JsonObject,
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

// The FlowRun aggregate: what FlowRunner records on a run's own subject of its private stream
// (`flowRunnerSubject('run', flowRunStreamId(scope, flowRunId))`), and the run as its queries show it. A step's output
// is a tool result, so it stays in the records (which only FlowRunner reads) and never appears in a view. Every record
// names its run, so a listing can fold the appends of a whole workspace read by subject filter.

/** Where a run is: Running until it ends Completed, Failed or (a step's effect in doubt) Uncertain. */
export const FlowRunState = z.enum(['Running', 'Completed', 'Failed', 'Uncertain']);
export type FlowRunState = z.infer<typeof FlowRunState>;

/** Where one step of a run is: Started (its call made or about to be), then one of the outcomes; or Skipped. */
export const FlowRunStepStatus = z.enum(['Started', 'Succeeded', 'Failed', 'Uncertain', 'Skipped']);
export type FlowRunStepStatus = z.infer<typeof FlowRunStepStatus>;

const recordedAt = { flowRunId: ExternalId, at: IsoDateTime };
const stepAttempt = { stepId: FlowStepId, attempt: z.number().int().positive() };

/**
 * The run began: the definition it was called through, the immutable Flow version it runs (the exact one, or the one
 * active at this moment), the input's hash (another input for the same logical call is CONFLICT), who it runs for and
 * when it must end.
 */
export const RunStarted = z.strictObject({
  type: z.literal('RunStarted'),
  ...recordedAt,
  workItemId: ExternalId,
  toolCallId: ToolCallId,
  /** The outer invocation that started it (the adapter's call of the flow tool). */
  invocationId: InvocationId,
  toolId: ToolId,
  toolVersion: ToolVersion,
  definitionName: ExternalId,
  definitionVersion: z.number().int().positive(),
  flowId: ExternalId,
  flowVersion: z.number().int().positive(),
  inputHash: Sha256Hex,
  principal: PrincipalId,
  agentId: ExternalId.optional(),
  agentRevision: AgentRevision.optional(),
  correlationId: ExternalId,
  causationId: ExternalId.optional(),
  deadline: IsoDateTime,
});
export type RunStarted = z.infer<typeof RunStarted>;

/** A step's `when` was falsy (or its group's): it has no output and is never called. */
export const StepSkipped = z.strictObject({ type: z.literal('StepSkipped'), ...recordedAt, stepId: FlowStepId });
export type StepSkipped = z.infer<typeof StepSkipped>;

/** An attempt of a step is about to be invoked under its own idempotency key (recorded before the call is made). */
export const StepStarted = z.strictObject({
  type: z.literal('StepStarted'),
  ...recordedAt,
  ...stepAttempt,
  toolId: ToolId,
  toolVersion: ToolVersion.optional(),
  idempotencyKey: IdempotencyKey,
  toolCallId: ToolCallId,
});
export type StepStarted = z.infer<typeof StepStarted>;

/** The attempt's call succeeded; `output` (its structured content, or `{text}`) is private to FlowRunner. */
export const StepSucceeded = z.strictObject({ type: z.literal('StepSucceeded'), ...recordedAt, ...stepAttempt, invocationId: InvocationId, output: JsonObject });
export type StepSucceeded = z.infer<typeof StepSucceeded>;

/** The attempt's call ended Failed, Denied or Cancelled (or was refused before it was recorded). */
export const StepFailed = z.strictObject({ type: z.literal('StepFailed'), ...recordedAt, ...stepAttempt, invocationId: InvocationId.optional(), failure: ToolFailure });
export type StepFailed = z.infer<typeof StepFailed>;

/** The attempt's call ended Uncertain: its effect may have happened; the run is never retried past it. */
export const StepUncertain = z.strictObject({ type: z.literal('StepUncertain'), ...recordedAt, ...stepAttempt, invocationId: InvocationId.optional(), failure: ToolFailure });
export type StepUncertain = z.infer<typeof StepUncertain>;

/** The run ended with the flow's output. */
export const RunCompleted = z.strictObject({ type: z.literal('RunCompleted'), ...recordedAt, output: JsonObject });
export type RunCompleted = z.infer<typeof RunCompleted>;

/** The run ended without its output and no step's effect in doubt (the failing step named when one failed). */
export const RunFailed = z.strictObject({ type: z.literal('RunFailed'), ...recordedAt, failure: ToolFailure, stepId: FlowStepId.optional() });
export type RunFailed = z.infer<typeof RunFailed>;

/** The run ended because a step that may have had its effect did not report one; never retried automatically. */
export const RunUncertain = z.strictObject({ type: z.literal('RunUncertain'), ...recordedAt, failure: ToolFailure, stepId: FlowStepId });
export type RunUncertain = z.infer<typeof RunUncertain>;

/** What happened to a FlowRun, as FlowRunner records it on the run's subject. */
export const FlowRunRecord = z.discriminatedUnion('type', [RunStarted, StepSkipped, StepStarted, StepSucceeded, StepFailed, StepUncertain, RunCompleted, RunFailed, RunUncertain]);
export type FlowRunRecord = z.infer<typeof FlowRunRecord>;

/** The live state of a started step's invocation at the tool adapter (a gated step shows AwaitingApproval). */
export const FlowRunStepInvocation = z.strictObject({
  invocationId: InvocationId,
  attempt: z.number().int().positive(),
  state: InvocationState,
  approvalId: Uuid.optional(),
});
export type FlowRunStepInvocation = z.infer<typeof FlowRunStepInvocation>;

/** One step of a run as queries show it: ids, tool, latest attempt, status and failure; never its output. */
export const FlowRunStepView = z.strictObject({
  stepId: FlowStepId,
  status: FlowRunStepStatus,
  /** Absent for a step that was skipped before it was started. */
  toolId: ToolId.optional(),
  toolVersion: ToolVersion.optional(),
  attempt: z.number().int().nonnegative(),
  idempotencyKey: IdempotencyKey.optional(),
  toolCallId: ToolCallId.optional(),
  /** The invocation the latest attempt's outcome came from. */
  invocationId: InvocationId.optional(),
  failure: ToolFailure.optional(),
  startedAt: IsoDateTime.optional(),
  endedAt: IsoDateTime.optional(),
  /** For a Started step, where its invocation is right now (absent when the adapter could not say). */
  invocation: FlowRunStepInvocation.optional(),
});
export type FlowRunStepView = z.infer<typeof FlowRunStepView>;

/** A FlowRun as queries show it. */
export const FlowRunView = z.strictObject({
  tenant: TenantId,
  workspace: WorkspaceId,
  flowRunId: ExternalId,
  workItemId: ExternalId,
  toolCallId: ToolCallId,
  invocationId: InvocationId,
  toolId: ToolId,
  definitionName: ExternalId,
  definitionVersion: z.number().int().positive(),
  flowId: ExternalId,
  flowVersion: z.number().int().positive(),
  state: FlowRunState,
  principal: PrincipalId,
  agentId: ExternalId.optional(),
  agentRevision: AgentRevision.optional(),
  correlationId: ExternalId,
  causationId: ExternalId.optional(),
  inputHash: Sha256Hex,
  deadline: IsoDateTime,
  startedAt: IsoDateTime,
  endedAt: IsoDateTime.optional(),
  failure: ToolFailure.optional(),
  /** The step whose outcome made the run Failed or Uncertain. */
  failedStepId: FlowStepId.optional(),
  /** The aggregate's version (the stream sequence of its last append). */
  version: z.number().int().positive(),
  steps: z.array(FlowRunStepView),
});
export type FlowRunView = z.infer<typeof FlowRunView>;

/** A FlowRun in a listing: the view without its steps, with how many there are. */
export const FlowRunSummary = FlowRunView.omit({ steps: true }).extend({ stepCount: z.number().int().nonnegative() });
export type FlowRunSummary = z.infer<typeof FlowRunSummary>;
