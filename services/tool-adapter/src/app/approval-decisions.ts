import { ToolplaneError, hasErrorCode, isRetryable, scopeOfSubject, type ApprovalExpired, type ApprovalGranted, type ApprovalOutcomeEvent, type ApprovalRejected, type ApprovalVoided } from '@toolplane/contracts';
import type { DeliveryContext } from '@toolplane/messaging';
import { invocationOf, leaseAlive } from '../adapters/invocation-store.js';
import { advancePipeline, resumePipeline, type StageOutcome } from '../core/invocation-pipeline.js';
import { descriptorFor, runPipeline } from './invocation-handler.js';
import type { InvocationRuntime } from './invocation-runtime.js';

// Approval decisions resume parked invocations on whichever replica receives them: granted → the approval is
// consumed (single use) and the pipeline goes on from the credential broker; rejected, expired or voided → Denied.

/** A decision about an approval. */
export type ApprovalDecisionEvent = ApprovalGranted | ApprovalRejected | ApprovalExpired | ApprovalVoided;

/** Handles one approval decision event; resolving acks it. */
export async function handleApprovalDecision(runtime: InvocationRuntime, event: ApprovalOutcomeEvent, delivery: DeliveryContext): Promise<void> {
  if (event.type === 'ApprovalConsumed') return; // the adapter's own doing: nothing to resume
  const scope = scopeOfSubject(delivery.subject);
  const { approvalId } = event.data;
  const parked = (await runtime.invocations.findByApproval(scope, approvalId, delivery.signal)).filter((stored) => stored.state === 'AwaitingApproval');
  for (const stored of parked) {
    const now = runtime.clock();
    // A live lease means another handler holds the call; the decision is delivered again later.
    if (leaseAlive(stored, now)) throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `invocation ${stored.invocationId} is being handled elsewhere`);
    const invocation = invocationOf(stored);
    const point = resumePipeline(invocation, descriptorFor(runtime, scope, invocation));
    if (!point.resumable) continue;
    // Claim it (compare-and-set renews the lease): of two handlers, one goes on.
    const claimed = await runtime.invocations.advance(invocation, invocation, now, { signal: delivery.signal });
    const state = { ...point.state, invocation: claimed };
    const outcome = await decisionOutcome(runtime, event, claimed, delivery.signal);
    const transition = advancePipeline(state, outcome, { now: runtime.clock().toISOString(), signReceipt: runtime.signReceipt });
    if (!transition.accepted) {
      runtime.logger.warn({ approvalId, invocationId: claimed.invocationId, problem: transition.problem }, 'approval decision does not apply to the parked invocation');
      continue;
    }
    await runPipeline(runtime, { ...transition.state, invocation: { ...transition.state.invocation, version: claimed.version } }, { scope, caller: undefined, signal: delivery.signal });
  }
}

async function decisionOutcome(
  runtime: InvocationRuntime,
  event: ApprovalDecisionEvent,
  invocation: ReturnType<typeof invocationOf>,
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
