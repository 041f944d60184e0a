import type { z } from 'zod';
import { ToolplaneError, type WireError } from '@toolplane/contracts';
import { decode } from './codec.js';
import type { Messaging } from './messaging.js';
import { toToolplaneError } from './nats-errors.js';

/** What to wait for: the first message on a core NATS subject that satisfies a contract. */
export interface ExpectMessageOptions<S extends z.ZodType> {
  readonly subject: string;
  readonly schema: S;
  /** Ends the wait (`received` rejects with CANCELLED, or with the signal's reason when it is a ToolplaneError). */
  readonly signal?: AbortSignal;
  /** Hears about a message on the subject that does not satisfy the contract (it is skipped). */
  readonly onInvalid?: (reason: WireError) => void;
}

/** A subscription waiting for one message. */
export interface ExpectedMessage<T> {
  /** The first valid message; rejects when the wait is cancelled or the subscription ends first. */
  readonly received: Promise<T>;
  /** Ends the subscription (idempotent); a wait still open rejects with CANCELLED. */
  close(): void;
}

/**
 * Subscribes to `subject` on the connection and resolves with the first message there that satisfies `schema`. The
 * subscription is sent before anything published afterwards on the same connection (the server reads a connection's
 * SUB before the PUB that follows it), so an answer to a request published after this call cannot be missed.
 */
export function expectMessage<S extends z.ZodType>(m: Messaging, options: ExpectMessageOptions<S>): ExpectedMessage<z.output<S>> {
  const what = `waiting on ${options.subject}`;
  let settle: { resolve: (value: z.output<S>) => void; reject: (error: unknown) => void } | undefined;
  const received = new Promise<z.output<S>>((resolve, reject) => (settle = { resolve, reject }));
  // A wait nobody awaits any more (closed after an answer) must not be an unhandled rejection.
  received.catch(() => undefined);
  let done = false;
  let unsubscribe: () => void = () => undefined;
  const finish = (outcome: { ok: true; value: z.output<S> } | { ok: false; error: unknown }) => {
    if (done) return;
    done = true;
    options.signal?.removeEventListener('abort', onAbort);
    unsubscribe();
    if (outcome.ok) settle?.resolve(outcome.value);
    else settle?.reject(outcome.error);
  };
  function onAbort() {
    const reason: unknown = options.signal?.reason;
    finish({ ok: false, error: reason instanceof ToolplaneError ? reason : new ToolplaneError('CANCELLED', `${what}: cancelled`) });
  }
  if (options.signal?.aborted) {
    onAbort();
    return { received, close: () => undefined };
  }
  try {
    const subscription = m.connection.subscribe(options.subject, {
      callback: (error, msg) => {
        if (error) {
          finish({ ok: false, error: toToolplaneError(error, what) });
          return;
        }
        const decoded = decode(options.schema, msg.data, `the message on ${options.subject}`);
        if (decoded.ok) finish({ ok: true, value: decoded.value });
        else options.onInvalid?.(decoded.reason);
      },
    });
    unsubscribe = () => subscription.unsubscribe();
    void subscription.closed.then(() => finish({ ok: false, error: new ToolplaneError('TEMPORARY_UNAVAILABLE', `${what}: the subscription ended`, { retryable: true }) }));
  } catch (error) {
    finish({ ok: false, error: toToolplaneError(error, what) });
  }
  options.signal?.addEventListener('abort', onAbort, { once: true });
  return { received, close: () => finish({ ok: false, error: new ToolplaneError('CANCELLED', `${what}: closed`) }) };
}
