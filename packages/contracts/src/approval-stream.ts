import { z } from 'zod';
import { Approval } from './approval-document.js';
import { ApprovalConsumed, ApprovalExpired, ApprovalGranted, ApprovalRejected, ApprovalVoided } from './approval-events.js';
import { ToolplaneError } from './errors.js';
import { MAX_MESSAGE_BYTES } from './limits.js';
import { EventId, IsoDateTime, Uuid } from './primitives.js';
import type { StreamDefinition } from './streams.js';
import { SUBJECT_PREFIX } from './subjects.js';

// The Approval aggregate's own stream, private to the approval service: one subject per approval, holding what the
// approval service decided about it, in order. The outcome events are stored as they are published on the public
// events stream (after the append, with their deterministic ids); the request itself, with its summary (a preview of
// the arguments), stays here and in the service's read model.
//
//   tp.v1.approval.{approvalId}                                the Approval aggregate  (stream TOOLPLANE_APPROVALS)

const MINUTE_MS = 60_000;

/** The subject of one approval's events. */
export function approvalStreamSubject(approvalId: string): string {
  if (!Uuid.safeParse(approvalId).success) throw new ToolplaneError('INVALID_ARGUMENT', `approval id ${JSON.stringify(approvalId)} is not a UUID`);
  return `${SUBJECT_PREFIX}.approval.${approvalId}`;
}

/** The approval service's private stream of Approval aggregates. */
export const approvalStream = {
  name: 'TOOLPLANE_APPROVALS',
  description: 'The Approval aggregates: one subject per approval, appended to by the approval service only.',
  subjects: [`${SUBJECT_PREFIX}.approval.*`],
  retention: 'limits',
  storage: 'file',
  duplicateWindowMs: 2 * MINUTE_MS,
  maxMsgSize: MAX_MESSAGE_BYTES,
  // The record the read model is rebuilt from: kept until an operator sets a limit.
  maxAgeMs: 0,
  maxBytes: -1,
  allowDirect: true,
} as const satisfies StreamDefinition;

/**
 * The approval service took up an ApprovalRequested: the approval as requested, Pending. The first request of an
 * approval id is the one it keeps (a different request hash needs a new approval id).
 */
export const ApprovalOpened = z.strictObject({
  type: z.literal('ApprovalOpened'),
  data: z.strictObject(
    Approval.pick({
      approvalId: true,
      tenant: true,
      workspace: true,
      invocationId: true,
      toolCallId: true,
      toolId: true,
      toolVersion: true,
      requestHash: true,
      sideEffectClass: true,
      riskClass: true,
      summary: true,
      requestedBy: true,
      agentId: true,
      agentRevision: true,
      approvers: true,
      requestedAt: true,
      expiresAt: true,
      correlationId: true,
      flowRunId: true,
      workItemId: true,
    }).shape,
  ),
  metadata: z.strictObject({
    /** When the approval service took the request up. */
    occurredAt: IsoDateTime,
    /** The ApprovalRequested event it was opened from. */
    causationId: EventId,
  }),
});
export type ApprovalOpened = z.infer<typeof ApprovalOpened>;

/** What the Approval aggregate's stream holds: its opening, then the outcome events it published. */
export const ApprovalStreamEvent = z.discriminatedUnion('type', [ApprovalOpened, ApprovalGranted, ApprovalRejected, ApprovalExpired, ApprovalConsumed, ApprovalVoided]);
export type ApprovalStreamEvent = z.infer<typeof ApprovalStreamEvent>;
