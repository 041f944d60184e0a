import { context } from '@opentelemetry/api';
import { ToolplaneError, hasErrorCode, isRetryable, scopeOfSubject, type ApprovalExpired, type ApprovalGranted, type ApprovalOutcomeEvent, type ApprovalRejected, type ApprovalVoided, type ToolInvocation } from '@toolplane/contracts';
import type { DeliveryContext } from '@toolplane/messaging';
import type { CallPosition } from '../adapters/invocation-store.js';
import { activeWith, startStageSpan, traceApprovalWait, traceStageError, traceStageOutcome } from '../adapters/invocation-tracing.js';
import { leaseAlive } from '../core/invocation-decider.js';
import { advancePipeline, resumePipeline, type PipelineState, type PipelineTransition, type StageOutcome } from '../core/invocation-pipeline.js';
import { Outbound, descriptorFor, runPipeline } from './invocation-handler.js';
import type { InvocationRuntime } from './invocation-runtime.js';

// Approval decisions resume parked invocations on whichever replica receives them: granted → the approval is
// consumed (single use) and the pipeline goes on from the credential broker; rejected, expired or voided → Denied.
// The parked call is found by the ToolCallId the decision carries (indexed when the call parked), and read from its
// record: no database on the way.

/** A decision about an approval. */
export type ApprovalDecisionEvent = ApprovalGranted | ApprovalRejected | ApprovalExpired | ApprovalVoided;

/** Handles one approval decision event; resolving acks it. */
export async function handleApprovalDecision(runtime: InvocationRuntime, event: ApprovalOutcomeEvent, delivery: DeliveryContext): Promise<void> {
  if (event.type === 'ApprovalConsumed') return; // the adapter's own doing: nothing to resume
  const scope = scopeOfSubject(delivery.subject);
  const { approvalId } = event.data;
  const found = await runtime.calls.findByToolCallId(scope, event.metadata.toolCallId, delivery.signal);
  const parked = found?.state.invocation;
  if (found === undefined || parked === undefined || parked.state !== 'AwaitingApproval' || parked.approvalId !== approvalId) return;
  const now = runtime.clock();
  // A live lease means another handler holds the call; the decision is delivered again later.
  if (leaseAlive(found.state, now)) throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `invocation ${parked.invocationId} is being handled elsewhere`);
  const point = resumePipeline(parked, descriptorFor(runtime, scope, parked));
  if (!point.resumable) return;
  // Claim it first (an append at the version read, renewing the lease): of two handlers of the decision, one goes
  // on, and only that one consumes the approval.
  const claimed = await runtime.calls.record(found, { invocation: parked, events: [], settled: false, now }, delivery.signal);
  // The wait ends here: the resumed stages continue the call's trace (linked to the decision's), not the decision's.
  const callTrace = traceApprovalWait({ parkedAt: new Date(parked.updatedAt), resumedAt: now, parkedTrace: found.state.parkedTrace, invocation: parked });
  const resume = () => resumeDecided(runtime, event, delivery, point.state, claimed);
  await (callTrace === undefined ? resume() : context.with(callTrace, resume));
}

/** Performs the APPROVAL_DECISION stage on the claimed call, then the stages after it. */
async function resumeDecided(runtime: InvocationRuntime, event: ApprovalDecisionEvent, delivery: DeliveryContext, parkedState: PipelineState, claimed: CallPosition): Promise<void> {
  const parked = parkedState.invocation;
  const scope = { tenant: parked.tenant, workspace: parked.workspace };
  const decidingStartedMs = runtime.elapsedMs();
  const span = startStageSpan('APPROVAL_DECISION', parked);
  let transition: PipelineTransition;
  try {
    const traced = activeWith(span);
    const outcome = await (traced === undefined ? decisionOutcome(runtime, event, parked, delivery.signal) : context.with(traced, decisionOutcome, undefined, runtime, event, parked, delivery.signal));
    transition = advancePipeline(parkedState, outcome, { now: runtime.clock().toISOString(), signReceipt: runtime.signReceipt });
    if (transition.accepted) traceStageOutcome(span, outcome, transition.state);
  } catch (error) {
    traceStageError(span, error);
    throw error;
  } finally {
    span.end();
  }
  runtime.observer.stagePerformed('APPROVAL_DECISION', (runtime.elapsedMs() - decidingStartedMs) / 1000);
  if (!transition.accepted) {
    runtime.logger.warn({ approvalId: event.data.approvalId, invocationId: parked.invocationId, problem: transition.problem }, 'approval decision does not apply to the parked invocation');
    return;
  }
  const outbound = new Outbound(runtime);
  await runPipeline(runtime, transition.state, { scope, caller: undefined, signal: delivery.signal, outbound }, { position: claimed, events: transition.events });
  await outbound.confirm();
}

async function decisionOutcome(
  runtime: InvocationRuntime,
  event: ApprovalDecisionEvent,
  invocation: ToolInvocation,
  signal: AbortSignal,
): Promise<StageOutcome> {
  const scope = { tenant: invocation.tenant, workspace: invocation.workspace };
  const bound = { approvalId: event.data.approvalId, requestHash: event.data.requestHash, toolVersion: event.metadata.toolVersion };
  switch (event.type) {
    case 'ApprovalRejected':
      return { step: 'APPROVAL_DECISION', result: 'rejected', ...bound, decidedBy: event.data.decidedBy, reason: event.data.reason };
    case 'ApprovalExpired':
      return { step: 'APPROVAL_DECISION', result: 'expired', ...bound };
    case 'ApprovalVoided':
      return { step: 'APPROVAL_DECISION', result: 'voided', ...bound, reason: event.data.reason };
    case 'ApprovalGranted': {
      if (invocation.toolVersion === undefined) return { step: 'APPROVAL_DECISION', result: 'voided', ...bound, reason: 'the invocation has no resolved tool version' };
      try {
        await runtime.approvals(scope, { approvalId: bound.approvalId, requestHash: invocation.requestHash, toolVersion: invocation.toolVersion, invocationId: invocation.invocationId }, signal);
      } catch (error) {
        if (!hasErrorCode(error) || isRetryable(error.code)) throw error;
        if (error.code === 'APPROVAL_EXPIRED') return { step: 'APPROVAL_DECISION', result: 'expired', ...bound };
        if (error.code === 'APPROVAL_REJECTED') return { step: 'APPROVAL_DECISION', result: 'rejected', ...bound, reason: error.message.slice(0, 1024) };
        return { step: 'APPROVAL_DECISION', result: 'voided', ...bound, reason: `the approval cannot be used: ${error.message}`.slice(0, 1024) };
      }
      return { step: 'APPROVAL_DECISION', result: 'granted', ...bound, decidedBy: event.data.decidedBy, ...(event.data.reason === undefined ? {} : { reason: event.data.reason }) };
    }
  }
}
