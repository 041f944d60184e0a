import { hasErrorCode, isRetryable, toWireError, type WireError } from '@toolplane/contracts';

/** How a handler's run ended. */
export type Outcome = { readonly ok: true } | { readonly ok: false; readonly error: unknown };

/** What to do with a delivered message once its handler has settled. */
export type Settlement =
  | { readonly kind: 'ack' }
  /** A retryable failure with deliveries left: nak, to be redelivered after the delay. */
  | { readonly kind: 'retry'; readonly delayMs: number; readonly reason: WireError }
  /** The handler failed because the consumer was stopping: redeliver at once, to another replica. */
  | { readonly kind: 'requeue'; readonly reason: WireError }
  /** Terminate and publish to the dead-letter subject. */
  | { readonly kind: 'dead-letter'; readonly reason: WireError };

/** The redelivery policy of a consumer. */
export interface RetryPolicy {
  /** Deliveries a message gets, the first included, before a retryable failure is dead-lettered. */
  readonly maxDeliver: number;
  /** nak delays by delivery: entry n-1 after the n-th delivery failed; the last entry repeats. */
  readonly backoffMs: readonly number[];
}

/** Delays between deliveries when the caller names none. */
export const defaultNakBackoffMs: readonly number[] = [1_000, 5_000, 15_000, 30_000, 60_000];

/** Whether a thrown error asks to be retried: by its taxonomy code (and its own `retryable` flag), never by class or text. */
export function isRetryableError(error: unknown): boolean {
  if (!hasErrorCode(error)) return false;
  const own = (error as { retryable?: unknown }).retryable;
  return typeof own === 'boolean' ? own : isRetryable(error.code);
}

/** The nak delay after the given delivery failed. */
export function retryDelayMs(deliveryCount: number, backoffMs: readonly number[]): number {
  if (backoffMs.length === 0) return 0;
  const index = Math.min(Math.max(deliveryCount, 1), backoffMs.length) - 1;
  return backoffMs[index] ?? 0;
}

/** Decides what to do with a message after its handler ran: the error → ack/nak/term rule in one place. */
export function settle(outcome: Outcome, deliveryCount: number, stopping: boolean, policy: RetryPolicy): Settlement {
  if (outcome.ok) return { kind: 'ack' };
  const reason = toWireError(outcome.error);
  // A failure during shutdown is most likely the abort itself: the message deserves a full delivery elsewhere.
  if (stopping) return { kind: 'requeue', reason };
  if (!isRetryableError(outcome.error)) return { kind: 'dead-letter', reason };
  if (deliveryCount >= policy.maxDeliver) return { kind: 'dead-letter', reason };
  return { kind: 'retry', delayMs: retryDelayMs(deliveryCount, policy.backoffMs), reason };
}

/**
 * A message delivered more often than the policy allows was never settled before (its handler crashed
 * or outlived the ack wait each time): it is dead-lettered without running the handler again.
 */
export function exhaustedOnArrival(deliveryCount: number, policy: RetryPolicy): WireError | undefined {
  if (deliveryCount <= policy.maxDeliver) return undefined;
  return {
    code: 'INTERNAL',
    message: `delivered ${deliveryCount} times without being settled (the handler crashed or outlived the ack wait); maxDeliver is ${policy.maxDeliver}`,
    retryable: false,
  };
}

/** How often to tell the server a message is still being worked on: well within the shortest ack wait in force. */
export function workingIntervalMs(ackWaitMs: number, backoffMs: readonly number[] = []): number {
  const shortest = Math.min(ackWaitMs, ...backoffMs.filter((ms) => ms > 0));
  return Math.max(100, Math.floor(shortest / 2));
}
