// Creates approvals from the tool adapter's ApprovalRequested events (durable consumer `approval`).
import { scopeOfSubject, type ApprovalRequested } from '@toolplane/contracts';
import type { DeliveryContext } from '@toolplane/messaging';
import { approvalFromRequest } from './approval-core.js';
import type { ApprovalRuntime } from './approval-runtime.js';
import { createApproval } from './approval-store.js';

/**
 * Stores the approval an ApprovalRequested asks for, once: a redelivered or republished event finds it there and
 * changes nothing. The scope is the subject's. An event that cannot become an approval is refused
 * (INVALID_ARGUMENT: the consumer dead-letters it).
 */
export async function onApprovalRequested(runtime: ApprovalRuntime, event: ApprovalRequested, delivery: Pick<DeliveryContext, 'subject' | 'signal'>): Promise<void> {
  const created = approvalFromRequest(event, scopeOfSubject(delivery.subject), runtime.clock());
  if (!created.ok) throw created.error;
  const result = await createApproval(runtime.approvals, created.approval, delivery.signal);
  if (result.created) {
    runtime.logger.info({ approvalId: result.approval.approvalId, tenant: result.approval.tenant, workspace: result.approval.workspace, toolId: result.approval.toolId }, 'approval requested');
    return;
  }
  const existing = result.approval;
  if (existing.requestHash !== created.approval.requestHash || existing.toolVersion !== created.approval.toolVersion || existing.tenant !== created.approval.tenant) {
    // The first request under this id stays authoritative: a different binding needs a new approval id.
    runtime.logger.warn({ approvalId: existing.approvalId }, 'ApprovalRequested reuses an approval id with a different binding; ignored');
  }
}
