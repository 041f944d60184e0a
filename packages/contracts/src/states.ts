import { z } from 'zod';

/** The states of one ToolInvocation (one physical attempt), from reception to receipt. */
export const InvocationState = z.enum([
  'Received',
  'Validated',
  'Authorized',
  'AwaitingApproval',
  'Brokered',
  'Executing',
  'Observed',
  'Failed',
  'Uncertain',
  'Cancelled',
  'Denied',
]);
export type InvocationState = z.infer<typeof InvocationState>;

/**
 * The states an invocation ends in; they carry a receipt. Uncertain is terminal for automation: it is never
 * retried automatically, only settled by an explicit reconcile.
 */
export const TerminalInvocationState = InvocationState.extract(['Observed', 'Failed', 'Uncertain', 'Cancelled', 'Denied']);
export type TerminalInvocationState = z.infer<typeof TerminalInvocationState>;

/** Whether an invocation in this state is finished. */
export function isTerminalInvocationState(state: InvocationState): state is TerminalInvocationState {
  return TerminalInvocationState.safeParse(state).success;
}

/**
 * The states of an approval: decided once, used once. Voided: the registry suspended or retired the tool version
 * the approval is bound to before it was used, so it can never be decided or consumed.
 */
export const ApprovalState = z.enum(['Pending', 'Granted', 'Rejected', 'Expired', 'Consumed', 'Voided']);
export type ApprovalState = z.infer<typeof ApprovalState>;

/** The approval states that can no longer change. */
export const TerminalApprovalState = ApprovalState.extract(['Rejected', 'Expired', 'Consumed', 'Voided']);
export type TerminalApprovalState = z.infer<typeof TerminalApprovalState>;
