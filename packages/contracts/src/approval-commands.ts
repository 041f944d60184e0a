import { z } from 'zod';
import { Approval } from './approval-document.js';
import { InvocationId, Sha256Hex, ToolVersion, Uuid, boundedText } from './primitives.js';
import { ApprovalState } from './states.js';

// Request/reply contracts of the approval service (`tp.v1.cmd.{tenant}.{workspace}.approval.{operation}`). Scope
// comes from the subject, never from a body. Humans (list, show, approve, reject) authenticate with an operator
// token in the AUTHORIZATION_HEADER (`Bearer <token>`), never in a body; `consume` is the tool adapter's, and
// NATS permissions decide who may publish on its subject.

/** The approval service's request/reply operations, as they appear in command subjects. */
export const approvalOperations = {
  list: 'list',
  show: 'show',
  approve: 'approve',
  reject: 'reject',
  consume: 'consume',
} as const;

/** An approval as the approval service shows it. */
export const ApprovalView = Approval;
export type ApprovalView = z.infer<typeof ApprovalView>;

/** Lists the scope's approvals, newest request first, optionally in one state; `after` is the previous page's `next`. */
export const ListApprovalsRequest = z.strictObject({
  state: ApprovalState.optional(),
  limit: z.number().int().min(1).max(200).default(50),
  after: z.string().min(1).max(2048).optional(),
});
export type ListApprovalsRequest = z.infer<typeof ListApprovalsRequest>;

/** One page of approvals; `next` is null on the last page. */
export const ListApprovalsReply = z.strictObject({ items: z.array(ApprovalView), next: z.string().nullable() });
export type ListApprovalsReply = z.infer<typeof ListApprovalsReply>;

/** Names one approval of the scope. */
export const ShowApprovalRequest = z.strictObject({ approvalId: Uuid });
export type ShowApprovalRequest = z.infer<typeof ShowApprovalRequest>;

/** Grants a pending approval; the decider is the operator token's principal. */
export const ApproveApprovalRequest = z.strictObject({ approvalId: Uuid, reason: boundedText(1024).optional() });
export type ApproveApprovalRequest = z.infer<typeof ApproveApprovalRequest>;

/** Rejects a pending approval; a reason is required, because the requester is told why. */
export const RejectApprovalRequest = z.strictObject({ approvalId: Uuid, reason: boundedText(1024) });
export type RejectApprovalRequest = z.infer<typeof RejectApprovalRequest>;

/**
 * Uses a granted approval for the invocation it is bound to: the adapter presents the invocation's request hash and
 * exact tool version, and both must match. Refusals: NOT_FOUND, CONFLICT (mismatch, not granted, already consumed,
 * void), APPROVAL_REJECTED, APPROVAL_EXPIRED.
 */
export const ConsumeApprovalRequest = z.strictObject({
  approvalId: Uuid,
  requestHash: Sha256Hex,
  toolVersion: ToolVersion,
  /** The invocation that uses it, for the record; the binding itself is the hash and version. */
  invocationId: InvocationId.optional(),
});
export type ConsumeApprovalRequest = z.infer<typeof ConsumeApprovalRequest>;

/** The approval after a show, decision or consumption. */
export const ApprovalReply = z.strictObject({ approval: ApprovalView });
export type ApprovalReply = z.infer<typeof ApprovalReply>;

/** Each operation's request and reply contract, for callers (`call(service, operation, schemas, body)`). */
export const approvalCommandSchemas = {
  list: { request: ListApprovalsRequest, reply: ListApprovalsReply },
  show: { request: ShowApprovalRequest, reply: ApprovalReply },
  approve: { request: ApproveApprovalRequest, reply: ApprovalReply },
  reject: { request: RejectApprovalRequest, reply: ApprovalReply },
  consume: { request: ConsumeApprovalRequest, reply: ApprovalReply },
} as const;
