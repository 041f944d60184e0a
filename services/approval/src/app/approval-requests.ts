// Opens approvals from the tool adapter's ApprovalRequested events (durable consumer `approval`).
import { scopeOfSubject, type ApprovalRequested } from '@toolplane/contracts';
import type { DeliveryContext } from '@toolplane/messaging';
import { openingOf } from '../core/approval-decider.js';
import type { Approval } from '@toolplane/contracts';
import { runCommand, type ApprovalRuntime } from './approval-runtime.js';

/**
 * Opens the approval an ApprovalRequested asks for, once: a redelivered or republished event finds it open and
 * appends nothing. The scope is the subject's. An event that cannot become an approval is refused
 * (INVALID_ARGUMENT: the consumer dead-letters it).
 */
export async function onApprovalRequested(runtime: ApprovalRuntime, event: ApprovalRequested, delivery: Pick<DeliveryContext, 'subject' | 'signal'>): Promise<void> {
  const opened = openingOf(event, scopeOfSubject(delivery.subject), runtime.clock());
  const { approval, changed } = await runCommand(runtime, opened.data.approvalId, { type: 'OpenApproval', data: { opened } }, delivery.signal);
  if (changed) {
    runtime.logger.info({ approvalId: approval.approvalId, tenant: approval.tenant, workspace: approval.workspace, toolId: approval.toolId }, 'approval requested');
    await voidIfRetired(runtime, approval, delivery.signal);
    return;
  }
  if (approval.requestHash !== opened.data.requestHash || approval.toolVersion !== opened.data.toolVersion || approval.tenant !== opened.data.tenant || approval.workspace !== opened.data.workspace) {
    // The first request under this id stays authoritative: a different binding needs a new approval id.
    runtime.logger.warn({ approvalId: approval.approvalId }, 'ApprovalRequested reuses an approval id with a different binding; ignored');
  }
}

/**
 * Voids an approval just opened for a tool version that is no longer invocable: its retirement may have been handled
 * (its approvals voided) before this request arrived. A release retired with in-flight policy FINISH keeps it.
 */
async function voidIfRetired(runtime: ApprovalRuntime, approval: Approval, signal: AbortSignal): Promise<void> {
  if (runtime.descriptorOf === undefined) return;
  const scope = { tenant: approval.tenant, workspace: approval.workspace };
  const descriptor = await runtime.descriptorOf(scope, approval.toolId, approval.toolVersion, signal);
  if (descriptor === undefined || descriptor.active || descriptor.inactiveReason === undefined || descriptor.inFlight === 'FINISH') return;
  const command = { type: 'VoidApproval', data: { reason: descriptor.inactiveReason }, metadata: { approvalId: approval.approvalId, scope, now: runtime.clock() } } as const;
  const outcome = await runCommand(runtime, approval.approvalId, command, signal);
  if (outcome.changed) runtime.logger.info({ approvalId: approval.approvalId, toolId: approval.toolId, toolVersion: approval.toolVersion, reason: descriptor.inactiveReason }, 'approval voided: its tool version was retired before it was requested');
}
