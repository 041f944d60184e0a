// Which decision an append made about an approval, and how long after the request: the data the service's
// time-to-decision histogram observes. Pure: the shell reports what it appended, this says what that was.
import type { Approval, ApprovalStreamEvent } from '@toolplane/contracts';

/** How an approval left Pending: the outcomes of the time-to-decision histogram. */
export const decisionOutcomes = ['granted', 'rejected', 'expired', 'voided'] as const;
export type DecisionOutcome = (typeof decisionOutcomes)[number];

/** An approval's first decision: its outcome and the seconds from its request to the decision. */
export interface ApprovalDecision {
  readonly outcome: DecisionOutcome;
  readonly seconds: number;
}

const outcomeOfEvent: Partial<Record<ApprovalStreamEvent['type'], DecisionOutcome>> = {
  ApprovalGranted: 'granted',
  ApprovalRejected: 'rejected',
  ApprovalExpired: 'expired',
  ApprovalVoided: 'voided',
};

/**
 * The decision that `appended` (the events one command appended) made of the approval now folded as `state`, or
 * undefined when it made none. Each approval leaves Pending once, so this is defined for one append per approval:
 * a void of an approval already granted is not a second decision (the grant carried `decidedAt`; a void from
 * Pending carries none), and a consumption is none at all.
 */
export function decisionOf(appended: readonly ApprovalStreamEvent[], state: Approval): ApprovalDecision | undefined {
  for (const event of appended) {
    const outcome = outcomeOfEvent[event.type];
    if (outcome === undefined) continue;
    if (outcome === 'voided' && state.decidedAt !== undefined) return undefined;
    // requestedAt is the adapter's clock, the decision this service's: a skew between them is not a negative wait.
    const seconds = Math.max(0, (Date.parse(event.metadata.occurredAt) - Date.parse(state.requestedAt)) / 1_000);
    return { outcome, seconds };
  }
  return undefined;
}
