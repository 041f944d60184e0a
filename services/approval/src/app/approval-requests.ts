// Opens approvals from the tool adapter's ApprovalRequested events (durable consumer `approval`).
import { scopeOfSubject, type ApprovalRequested } from '@toolplane/contracts';
import type { DeliveryContext } from '@toolplane/messaging';
import { openingOf } from '../core/approval-decider.js';
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
    return;
  }
  if (approval.requestHash !== opened.data.requestHash || approval.toolVersion !== opened.data.toolVersion || approval.tenant !== opened.data.tenant || approval.workspace !== opened.data.workspace) {
    // The first request under this id stays authoritative: a different binding needs a new approval id.
    runtime.logger.warn({ approvalId: approval.approvalId }, 'ApprovalRequested reuses an approval id with a different binding; ignored');
  }
}
