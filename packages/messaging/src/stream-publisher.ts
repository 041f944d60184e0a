import { createInbox, errors as natsErrors, RequestError, TimeoutError, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/nats-core';
import { JetStreamApiError, JetStreamError, type ApiError } from '@nats-io/jetstream';
import { abortError } from '@toolplane/contracts';
import { injectTraceContext } from './trace-context.js';

// JetStream publishes without nats.js's per-request bookkeeping. `jetstream.publish` is `nc.request()` under the
// client's mux inbox: every request builds a RequestError with a stack trace (even one that succeeds: the mux cancels
// its entry with one), arms a timer of its own and chains three promises; at seven publishes per governed call that
// was a fifth of the tool adapter's CPU. Here one wildcard subscription on the connection's own inbox prefix receives
// every acknowledgement, a publish is a core publish with a reply token, and one timer serves every deadline. The
// failures are the errors nats.js raises for the same cases (built only when something fails), so `toToolplaneError`
// and `isApiError` map them exactly as before.

/**
 * One JetStream publish: the headers are sent as given (Nats-Msg-Id and any Nats-Expected-* included), plus the
 * active trace context, so a stored message names the span that wrote it.
 */
export interface StreamPublish {
  readonly subject: string;
  readonly payload: string | Uint8Array;
  readonly headers: MsgHdrs;
  /** Deadline for the acknowledgement; default the publisher's. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** The operation, for the error a cancelled publish fails with. */
  readonly what: string;
}

/** A stream's acknowledgement of a stored (or deduplicated) message. */
export interface StreamAck {
  readonly stream: string;
  readonly seq: number;
  readonly duplicate: boolean;
}

/** Publishes to JetStream over one reply subscription of its connection; see createStreamPublisher. */
export interface StreamPublisher {
  /**
   * Publishes and resolves with the stream's acknowledgement. Rejects with what nats.js's `jetstream.publish` rejects
   * with for the same failure (TimeoutError, a JetStreamApiError carrying the server's error, a JetStreamError when no
   * stream answers, a RequestError when the connection closes or the server refuses the subject), or with the
   * taxonomy's abort error when `signal` aborts (an already aborted signal publishes nothing).
   */
  publish(options: StreamPublish): Promise<StreamAck>;
  /** Hands the publisher a server error the connection reported (a refused publish arrives only as one). */
  serverError(error: Error): void;
}

/** Where replies go and how long a publish waits by default. */
export interface StreamPublisherOptions {
  /** The connection's inbox prefix (`_INBOX` unless configured), so the acknowledgements stay within its permissions. */
  readonly inboxPrefix: string;
  readonly timeoutMs: number;
}

interface Pending {
  readonly subject: string;
  readonly deadline: number;
  readonly resolve: (ack: StreamAck) => void;
  readonly reject: (error: Error) => void;
  /** Removes the abort listener, when there is one. */
  release?: () => void;
}

// JetStream's "JetStream not enabled for account": nats.js raises the same error as for no responders.
const jetStreamNotEnabledForAccount = 10039;

/**
 * Makes the publisher of a connection. It subscribes to `<inboxPrefix>.<nuid>.*` on its first publish (and again after
 * the server refused or the connection ended that subscription); nats.js resubscribes it after a reconnect.
 */
export function createStreamPublisher(nc: NatsConnection, options: StreamPublisherOptions): StreamPublisher {
  const pending = new Map<string, Pending>();
  let inbox = '';
  let subscription: Subscription | undefined;
  let nextToken = 0;
  // The one timer: armed for the earliest deadline it knows of and re-armed when it fires. Acknowledgements do not
  // disarm it (most arrive long before any deadline), so a steady stream of publishes arms it about once a timeout.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timerAt = Infinity;

  const settle = (token: string): Pending | undefined => {
    const entry = pending.get(token);
    if (entry === undefined) return undefined;
    pending.delete(token);
    entry.release?.();
    return entry;
  };

  const rejectAll = (error: () => Error) => {
    for (const token of [...pending.keys()]) settle(token)?.reject(error());
  };

  const sweep = () => {
    timer = undefined;
    timerAt = Infinity;
    const now = performance.now();
    let earliest = Infinity;
    for (const [token, entry] of pending) {
      if (entry.deadline <= now) settle(token)?.reject(new TimeoutError());
      else if (entry.deadline < earliest) earliest = entry.deadline;
    }
    arm(earliest);
  };

  const arm = (deadline: number) => {
    if (deadline === Infinity || deadline >= timerAt) return;
    if (timer !== undefined) clearTimeout(timer);
    timerAt = deadline;
    timer = setTimeout(sweep, Math.max(0, Math.ceil(deadline - performance.now())));
    // Only a pending publish needs it, and the connection keeps the process up while one is.
    timer.unref();
  };

  const onReply = (error: Error | null, msg: Msg) => {
    if (error !== null) {
      // The server refused the subscription (the prefix is not the credential's to read): nothing can be acknowledged.
      subscription = undefined;
      rejectAll(() => new RequestError(error.message, { cause: error }));
      return;
    }
    const entry = settle(msg.subject.slice(inbox.length));
    if (entry === undefined) return; // Its publish timed out or was cancelled before the ack arrived.
    try {
      entry.resolve(toAck(msg));
    } catch (failure) {
      entry.reject(failure instanceof Error ? failure : new Error(String(failure)));
    }
  };

  const subscribe = () => {
    inbox = `${createInbox(options.inboxPrefix)}.`;
    const sub = nc.subscribe(`${inbox}*`, { callback: onReply });
    subscription = sub;
    void sub.closed.then(() => {
      if (subscription !== sub) return;
      // Drained or closed with its connection: no acknowledgement will arrive any more.
      subscription = undefined;
      rejectAll(() => new RequestError('connection closed'));
    });
  };

  return {
    publish(publish) {
      const { signal } = publish;
      if (signal?.aborted === true) return Promise.reject(abortError(publish.what, signal.reason));
      // What nc.request() refuses before sending: a closed or draining connection, a malformed subject.
      try {
        if (nc.isClosed()) throw new natsErrors.ClosedConnectionError();
        if (nc.isDraining()) throw new natsErrors.DrainingConnectionError();
        if (subscription === undefined) subscribe();
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
      const token = (nextToken++).toString(36);
      return new Promise<StreamAck>((resolve, reject) => {
        const deadline = performance.now() + (publish.timeoutMs ?? options.timeoutMs);
        const entry: Pending = { subject: publish.subject, deadline, resolve, reject };
        if (signal !== undefined) {
          const onAbort = () => settle(token)?.reject(abortError(publish.what, signal.reason));
          signal.addEventListener('abort', onAbort, { once: true });
          entry.release = () => signal.removeEventListener('abort', onAbort);
        }
        pending.set(token, entry);
        arm(deadline);
        try {
          injectTraceContext(publish.headers);
          nc.publish(publish.subject, publish.payload, { reply: `${inbox}${token}`, headers: publish.headers });
        } catch (error) {
          settle(token);
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
    },
    serverError(error) {
      // The server answers a publish it refuses with -ERR naming the subject, not with a reply: like nats.js's mux,
      // fail the oldest publish waiting on that subject (the request would be RequestError caused by the violation).
      if (!(error instanceof natsErrors.PermissionViolationError) || error.operation !== 'publish') return;
      for (const [token, entry] of pending) {
        if (entry.subject !== error.subject) continue;
        settle(token)?.reject(new RequestError(error.message, { cause: error }));
        return;
      }
    },
  };
}

/** The stream's acknowledgement in a reply, or the error nats.js's `jetstream.publish` raises for that reply. */
function toAck(msg: Msg): StreamAck {
  // No responders (status 503, no body): no stream captures the subject, or JetStream is not there.
  if (msg.data.length === 0 && msg.headers?.code === 503) {
    throw new JetStreamError('jetstream is not enabled', { cause: new RequestError('no responders', { cause: new natsErrors.NoRespondersError(msg.subject) }) });
  }
  const reply = msg.json<{ stream?: unknown; seq?: unknown; duplicate?: unknown; error?: ApiError }>();
  if (reply.error !== undefined) {
    const apiError = new JetStreamApiError(reply.error);
    throw apiError.code === jetStreamNotEnabledForAccount ? new JetStreamError(apiError.message, { cause: apiError }) : apiError;
  }
  // An acknowledgement names the stream and the sequence it stored the message at; anything else is not one.
  if (typeof reply.stream !== 'string' || reply.stream === '' || typeof reply.seq !== 'number') throw new JetStreamError('invalid ack response');
  return { stream: reply.stream, seq: reply.seq, duplicate: reply.duplicate === true };
}
