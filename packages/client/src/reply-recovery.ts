import { ToolplaneError, isTerminalInvocationState, type LookupInvocationReply } from '@toolplane/contracts';

/** How lookups are spaced while a lost reply is recovered: doubling from `initialMs`, capped at `maxMs`. */
export interface RecoveryBackoff {
  readonly initialMs: number;
  readonly maxMs: number;
}

/** The default spacing of recovery lookups. */
export const defaultRecoveryBackoff: RecoveryBackoff = { initialMs: 100, maxMs: 2_000 };

/** The pause before the lookup after `attempt` (0-based) found no ended call. */
export function recoveryDelayMs(attempt: number, backoff: RecoveryBackoff = defaultRecoveryBackoff): number {
  const exponent = Math.min(Math.max(0, Math.floor(attempt)), 30);
  return Math.min(backoff.maxMs, backoff.initialMs * 2 ** exponent);
}

/**
 * The error of a call whose outcome was not learnt by the deadline, from what the last lookup saw:
 * - the call is Executing: the tool was called and its effect may or may not have happened → UNKNOWN_OUTCOME (the
 *   adapter still ends it, as Observed, Failed or Uncertain; `lookup(key)` tells how; never re-invoke blindly);
 * - the call waits for a human's approval → APPROVAL_PENDING, retryable, naming the approval: the call waits for
 *   the approval's own lifetime, not the caller's deadline, so the runtime re-attaches later with `await(key)`;
 * - the call was recorded but has not reached the tool (validating, authorizing, …), or was never seen (still
 *   queued, or the adapter is down) → TIMEOUT, which is retryable: invoking again with the same key can never run
 *   the tool twice, it joins the same call.
 * Details name the key and what was seen, so the runtime can look the call up later.
 */
export function unsettledError(idempotencyKey: string, lastSeen: LookupInvocationReply | undefined, timeoutMs: number): ToolplaneError {
  if (lastSeen !== undefined && isTerminalInvocationState(lastSeen.state)) throw new RangeError('an ended call is settled');
  const details = {
    idempotencyKey,
    ...(lastSeen === undefined ? {} : { toolCallId: lastSeen.toolCallId, invocationId: lastSeen.invocationId, attempt: lastSeen.attempt, state: lastSeen.state }),
  };
  if (lastSeen?.state === 'AwaitingApproval') {
    return new ToolplaneError('APPROVAL_PENDING', `the call waits for a human approval after ${timeoutMs} ms; re-attach with its idempotency key ${idempotencyKey}`, {
      details: { idempotencyKey, ...(lastSeen.approvalId === undefined ? {} : { approvalId: lastSeen.approvalId }), state: lastSeen.state },
    });
  }
  if (lastSeen?.state === 'Executing') {
    return new ToolplaneError('UNKNOWN_OUTCOME', `the tool was called but no outcome came within ${timeoutMs} ms; look the call up by its key before retrying`, { details });
  }
  const where = lastSeen === undefined ? 'the adapter has no record of it yet' : `it is ${lastSeen.state}, the tool has not been called`;
  return new ToolplaneError('TIMEOUT', `no outcome within ${timeoutMs} ms (${where}); invoking again with the same key is safe`, { details });
}
