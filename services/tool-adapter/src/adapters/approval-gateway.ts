import { ApprovalReply, ConsumeApprovalRequest, approvalOperations, commandSubject, type Scope } from '@toolplane/contracts';
import { request, type Messaging } from '@toolplane/messaging';

/** Uses a granted approval for the invocation it is bound to (single use, enforced by the approval service). */
export type ApprovalGateway = (scope: Scope, body: ConsumeApprovalRequest, signal?: AbortSignal) => Promise<void>;

/** The approval service's `consume` over request/reply; refusals arrive as their codes (CONFLICT, APPROVAL_EXPIRED …). */
export function approvalServiceGateway(messaging: Messaging, timeoutMs: number): ApprovalGateway {
  return async (scope, body, signal) => {
    await request(messaging, {
      subject: commandSubject(scope, 'approval', approvalOperations.consume),
      requestSchema: ConsumeApprovalRequest,
      replySchema: ApprovalReply,
      body,
      timeoutMs,
      ...(signal ? { signal } : {}),
    });
  };
}
