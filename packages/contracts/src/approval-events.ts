import { z } from 'zod';
import { RiskClass, SideEffectClass } from './classification.js';
import { ApprovalEventMetadata, InvocationEventMetadata, defineEvent } from './event-metadata.js';
import { IsoDateTime, PrincipalId, Sha256Hex, Uuid, boundedText } from './primitives.js';
import { DescriptorRetirementReason } from './registry-events.js';

/** Who may decide an approval: principals named outright, or holders of a role; at least one of either. */
export const Approvers = z
  .strictObject({
    roles: z.array(z.string().regex(/^[!-~]{1,128}$/)).max(32),
    principals: z.array(PrincipalId).max(64),
  })
  .refine((approvers) => approvers.roles.length + approvers.principals.length > 0, { message: 'name at least one role or principal' });
export type Approvers = z.infer<typeof Approvers>;

/**
 * The tool adapter parked an invocation of a gated class and asks for a human decision. Part of the invocation's
 * own event sequence (hence invocation metadata); the approval service creates the approval from it.
 */
export const ApprovalRequested = defineEvent(
  'ApprovalRequested',
  InvocationEventMetadata,
  z.strictObject({
    approvalId: Uuid,
    /** The approval is bound to this hash and to metadata.toolVersion; a different hash needs a new approval. */
    requestHash: Sha256Hex,
    sideEffectClass: SideEffectClass,
    riskClass: RiskClass,
    /** What the human is asked to allow, written by the adapter; never arguments verbatim, never secrets. */
    summary: boundedText(2000),
    approvers: Approvers,
    expiresAt: IsoDateTime,
  }),
  'An invocation of a gated class waits for a human decision (state AwaitingApproval).',
);
export type ApprovalRequested = z.infer<typeof ApprovalRequested>;

/** A human allowed the invocation. */
export const ApprovalGranted = defineEvent(
  'ApprovalGranted',
  ApprovalEventMetadata,
  z.strictObject({ approvalId: Uuid, requestHash: Sha256Hex, decidedBy: PrincipalId, reason: boundedText(1024).optional() }),
  'A human allowed the invocation the approval is bound to.',
);
export type ApprovalGranted = z.infer<typeof ApprovalGranted>;

/** A human refused the invocation; it ends Denied with APPROVAL_REJECTED. */
export const ApprovalRejected = defineEvent(
  'ApprovalRejected',
  ApprovalEventMetadata,
  z.strictObject({ approvalId: Uuid, requestHash: Sha256Hex, decidedBy: PrincipalId, reason: boundedText(1024) }),
  'A human refused the invocation the approval is bound to.',
);
export type ApprovalRejected = z.infer<typeof ApprovalRejected>;

/** Nobody decided in time; the invocation ends Denied with APPROVAL_EXPIRED. */
export const ApprovalExpired = defineEvent(
  'ApprovalExpired',
  ApprovalEventMetadata,
  z.strictObject({ approvalId: Uuid, requestHash: Sha256Hex }),
  'The approval expired undecided.',
);
export type ApprovalExpired = z.infer<typeof ApprovalExpired>;

/** The adapter used the granted approval; it can never be used again. */
export const ApprovalConsumed = defineEvent(
  'ApprovalConsumed',
  ApprovalEventMetadata,
  z.strictObject({ approvalId: Uuid, requestHash: Sha256Hex }),
  'The granted approval was used by its invocation and cannot be used again.',
);
export type ApprovalConsumed = z.infer<typeof ApprovalConsumed>;

/**
 * The registry suspended or retired the tool version a pending or granted approval is bound to: the approval is
 * void (state Voided) and its invocation ends Denied; a new approval is needed for a re-bound version.
 */
export const ApprovalVoided = defineEvent(
  'ApprovalVoided',
  ApprovalEventMetadata,
  z.strictObject({ approvalId: Uuid, requestHash: Sha256Hex, reason: DescriptorRetirementReason }),
  'The tool version the approval is bound to was suspended or retired; the approval can never be used.',
);
export type ApprovalVoided = z.infer<typeof ApprovalVoided>;

/** The events the approval service emits about an approval after its creation, each at most once per approval. */
export const ApprovalOutcomeEvent = z.discriminatedUnion('type', [ApprovalGranted, ApprovalRejected, ApprovalExpired, ApprovalConsumed, ApprovalVoided]);
export type ApprovalOutcomeEvent = z.infer<typeof ApprovalOutcomeEvent>;
