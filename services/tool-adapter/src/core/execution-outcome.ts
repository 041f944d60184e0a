import { isRetryable, type FlowRunReceipt, type IdempotencySemantics, type IsoDateTime, type RetryPolicy, type SideEffectClass, type ToolFailure } from '@toolplane/contracts';
import type { ProviderOutput } from './result-sanitizer.js';

// What an execution attempt ended with, and what that means: which terminal state, whether the executor may try
// again. A READ call cannot have had an effect, so nothing about it is ever uncertain; any other call whose
// request may have reached the provider without a definite answer is Uncertain (UNKNOWN_OUTCOME) and is never
// retried blindly.

/** How the provider call ended, as the executor saw it. */
export type ExecutionResult =
  | { readonly result: 'returned'; readonly output: ProviderOutput; readonly inputTruncated?: boolean; readonly flowRun?: FlowRunReceipt }
  /** The provider answered with an error; `effect` says whether the request may have taken effect regardless. */
  | { readonly result: 'failed'; readonly failure: ToolFailure; readonly effect: 'none' | 'possible'; readonly flowRun?: FlowRunReceipt }
  /** The deadline passed; `requestSent` says whether the request had left (then the outcome is unknown). */
  | { readonly result: 'timed_out'; readonly requestSent: boolean }
  /** The caller or a shutdown cancelled the call. */
  | { readonly result: 'cancelled'; readonly requestSent: boolean };

/** The terminal state an execution leads to, with its failure (none for Observed). */
export type ExecutionEnding =
  | { readonly state: 'Observed' }
  | { readonly state: 'Failed' | 'Cancelled' | 'Uncertain'; readonly failure: ToolFailure };

function unknownOutcome(message: string, providerErrorType?: string): ToolFailure {
  return { code: 'UNKNOWN_OUTCOME', message, retryable: false, ...(providerErrorType === undefined ? {} : { providerErrorType }) };
}

/** Maps how an execution ended to a terminal state, given the call's effective side-effect class. */
export function executionEnding(execution: ExecutionResult, effectiveClass: SideEffectClass): ExecutionEnding {
  const canHaveEffect = effectiveClass !== 'READ';
  switch (execution.result) {
    case 'returned':
      return { state: 'Observed' };
    case 'failed':
      if (execution.effect === 'possible' && canHaveEffect) {
        return { state: 'Uncertain', failure: unknownOutcome(`the provider failed after the request may have taken effect: ${execution.failure.message}`.slice(0, 4096), execution.failure.providerErrorType) };
      }
      return { state: 'Failed', failure: execution.failure };
    case 'timed_out':
      if (!execution.requestSent) return { state: 'Cancelled', failure: { code: 'TIMEOUT', message: 'the deadline passed before the request was sent', retryable: true } };
      if (canHaveEffect) return { state: 'Uncertain', failure: unknownOutcome('the deadline passed after the request was sent; whether it took effect is unknown') };
      return { state: 'Failed', failure: { code: 'TIMEOUT', message: 'the provider did not answer before the deadline', retryable: true } };
    case 'cancelled':
      if (execution.requestSent && canHaveEffect) return { state: 'Uncertain', failure: unknownOutcome('the call was cancelled after the request was sent; whether it took effect is unknown') };
      return { state: 'Cancelled', failure: { code: 'CANCELLED', message: 'the call was cancelled', retryable: false } };
  }
}

/** Whether the executor may try a failed provider call again within the same attempt, and after how long. */
export type RetryDecision = { readonly retry: true; readonly delayMs: number } | { readonly retry: false; readonly reason: string };

/** What a retry decision depends on. */
export interface RetryInput {
  readonly effectiveClass: SideEffectClass;
  readonly idempotency: IdempotencySemantics;
  readonly retryPolicy: RetryPolicy;
  /** The failure of the try that just ended. */
  readonly failure: ToolFailure;
  /** Whether that try's request may have reached the provider. */
  readonly requestSent: boolean;
  /** How many tries have been made so far (1 after the first). */
  readonly tries: number;
  readonly now: IsoDateTime;
  readonly deadline: IsoDateTime;
  /** A number in [0, 1) spreading retries of many callers apart; drawn by the caller (the core draws nothing). */
  readonly jitter: number;
}

const retriedCodes = new Set<ToolFailure['code']>(['TIMEOUT', 'TEMPORARY_UNAVAILABLE']);

/**
 * Decides whether to retry: only on TIMEOUT and TEMPORARY_UNAVAILABLE, within the descriptor's retry policy and the
 * call's deadline. READ calls are retried; any other call only if its request provably never left (a connection
 * refused) or the provider deduplicates repeats (idempotent with the key, or naturally): never blindly. Backoff is
 * exponential, capped, with the caller's jitter.
 */
export function retryDecision(input: RetryInput): RetryDecision {
  const { failure, retryPolicy } = input;
  if (!retriedCodes.has(failure.code) || !isRetryable(failure.code) || !failure.retryable) return { retry: false, reason: `${failure.code} is not retried` };
  if (input.effectiveClass !== 'READ' && input.requestSent && input.idempotency === 'NONE') {
    return { retry: false, reason: `a ${input.effectiveClass} call whose request may have been sent is never retried blindly` };
  }
  if (input.tries >= retryPolicy.maxAttempts) return { retry: false, reason: `the retry policy allows ${retryPolicy.maxAttempts} tries` };
  const base = Math.min(retryPolicy.maxBackoffMs, retryPolicy.initialBackoffMs * 2 ** (input.tries - 1));
  const jitter = Math.min(Math.max(input.jitter, 0), 1);
  const delayMs = Math.round(base * (0.5 + jitter / 2));
  if (Date.parse(input.now) + delayMs >= Date.parse(input.deadline)) return { retry: false, reason: 'the deadline leaves no room for another try' };
  return { retry: true, delayMs };
}
