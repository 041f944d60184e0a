import { z } from 'zod';
import { canonicalHash } from './canonical-json.js';
import { ToolFailure } from './errors.js';
import {
  AgentRevision,
  ExternalId,
  IdempotencyKey,
  InvocationId,
  IsoDateTime,
  JsonObject,
  PrincipalId,
  type Scope,
  ToolCallId,
  ToolId,
  ToolVersion,
} from './primitives.js';
import { replyEnvelope } from './reply.js';

// The hand-off of a flow-backed tool's execution from the tool adapter to FlowRunner (on `flowWorkSubject(scope)`,
// published with Nats-Msg-Id = invocationId) and the outcome FlowRunner sends back to `replySubject`. The adapter has
// already validated, authorized, classified and (when gated) approved the call: FlowRunner runs the Flow version the
// ToolDefinition behind `toolId` resolves to at the run's start, as the calling principal, with scope from the subject.

/** A flow-backed tool call for FlowRunner to run (or, for the same logical call, to resume or replay). */
export const RunFlowRequest = z.strictObject({
  /** The logical tool call: it alone determines the run's WorkItem and FlowRun ids. */
  toolCallId: ToolCallId,
  invocationId: InvocationId,
  attempt: z.number().int().positive(),
  idempotencyKey: IdempotencyKey,
  /** The materialized tool (its descriptor names the ToolDefinition). */
  toolId: ToolId,
  toolVersion: ToolVersion,
  /** The public flow input: the call's arguments, already validated against the definition's input schema. */
  input: JsonObject,
  /** Who the call is made for (from the verified context token) and by which agent. */
  principal: PrincipalId,
  agentId: ExternalId.optional(),
  agentRevision: AgentRevision.optional(),
  correlationId: ExternalId,
  causationId: ExternalId.optional(),
  /** When the call's answer is due: the run stops there (its definition's timeout bounds it). */
  deadline: IsoDateTime,
  /** A core NATS subject of the adapter's connection the outcome is published to. */
  replySubject: z.string().regex(/^[A-Za-z0-9_$-]+(?:\.[A-Za-z0-9_$-]+)*$/).max(512),
});
export type RunFlowRequest = z.infer<typeof RunFlowRequest>;

/** What identifies a flow-backed call's run: the MCP operation receipt of a flow-backed tool. */
export const FlowRunReceipt = z.strictObject({
  workItemId: ExternalId,
  flowRunId: ExternalId,
  flowId: ExternalId,
  /** The immutable Flow version the run captured at its start. */
  flowVersion: z.number().int().positive(),
  definitionName: ExternalId,
  toolCallId: ToolCallId,
  correlationId: ExternalId,
});
export type FlowRunReceipt = z.infer<typeof FlowRunReceipt>;

/**
 * How a run ended: Completed with the flow output; Failed when no step's effect is in doubt (the failure is the
 * step's or the run's); Uncertain when a step that may have had its effect did not report (never retried).
 */
export const RunFlowOutcome = z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('Completed'), output: JsonObject, receipt: FlowRunReceipt }),
  z.strictObject({ status: z.literal('Failed'), failure: ToolFailure, receipt: FlowRunReceipt.optional() }),
  z.strictObject({ status: z.literal('Uncertain'), failure: ToolFailure, receipt: FlowRunReceipt }),
]);
export type RunFlowOutcome = z.infer<typeof RunFlowOutcome>;

/** The answer published to a RunFlowRequest's `replySubject`. */
export const RunFlowReply = replyEnvelope(RunFlowOutcome);
export type RunFlowReply = z.infer<typeof RunFlowReply>;

/** The ids of a logical flow-backed call's root WorkItem and FlowRun: the same call always gets the same ids. */
export function flowRunIdentity(scope: Scope, toolCallId: string): { readonly workItemId: string; readonly flowRunId: string } {
  const digest = canonicalHash({ purpose: 'toolplane/v1/flow-run', tenant: scope.tenant, workspace: scope.workspace, toolCallId });
  return { workItemId: `wi-${digest.slice(0, 40)}`, flowRunId: `fr-${digest.slice(0, 40)}` };
}

/** The idempotency key of one attempt of one step of a FlowRun: a resumed run repeats no step's effect. */
export function flowStepIdempotencyKey(flowRunId: string, stepId: string, attempt: number): string {
  return `flow:${canonicalHash({ purpose: 'toolplane/v1/flow-step', flowRunId, stepId, attempt }).slice(0, 48)}`;
}
