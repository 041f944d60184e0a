import { createInbox, errors as natsErrors, RequestError, TimeoutError, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/nats-core';
import { JetStreamApiError, JetStreamError, type ApiError } from '@nats-io/jetstream';
import { abortError } from '@toolplane/contracts';
import { apiErrorCodes } from './declare.js';
import { expectedLastSubjectSequenceHeader, msgIdHeader } from './headers.js';
import { isApiError } from './nats-errors.js';
import { injectTraceContext } from './trace-context.js';

// JetStream publishes without nats.js's per-request bookkeeping. `jetstream.publish` is `nc.request()` under the
// client's mux inbox: every request builds a RequestError with a stack trace (even one that succeeds: the mux cancels
// its entry with one), arms a timer of its own and chains three promises; at seven publishes per governed call that
// was a fifth of the tool adapter's CPU. Here one wildcard subscription on the connection's own inbox prefix receives
// every acknowledgement, a publish is a core publish with a reply token, and one timer serves every deadline. The
// failures are the errors nats.js raises for the same cases (built only when something fails), so `toToolplaneError`
// and `isApiError` map them exactly as before.
//
// A publish survives a reconnect. nats.js discards its unsent outbound buffer each time it dials again, so what was
// published while the connection was down (or written just before it broke) may never have reached the server, and
// its acknowledgement would never come. Every publish still waiting when the connection comes back is therefore sent
// again, with the same reply token: its Nats-Msg-Id makes the resend of a message the server did store a duplicate
// (acknowledged with that message's sequence), and its expected-sequence header makes the resend of a stored append
// fail as "wrong last sequence"; for that one case the publisher reads the subject back, and a message with its
// msgId at the position it expected is its own, acknowledged as stored. So a publish is stored once, or fails. A
// server going down stops its streams before it closes its connections, and one coming back accepts connections
// before its streams are back: "no responders" in those moments is waited out (sent again every 100 ms within the
// deadline), so a short restart costs a publish its length, never its deadline.

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
   * taxonomy's abort error when `signal` aborts (an already aborted signal publishes nothing). A publish still
   * unacknowledged when the connection comes back after an outage is sent again (see `reconnected`).
   */
  publish(options: StreamPublish): Promise<StreamAck>;
  /** Hands the publisher a server error the connection reported (a refused publish arrives only as one). */
  serverError(error: Error): void;
  /**
   * Tells the publisher the connection broke: from now until a timeout after it is back, a publish answered "no
   * responders" (the server's streams not back yet) is sent again after a pause instead of failing.
   */
  disconnected(): void;
  /** Tells the publisher the connection is back after an outage: every publish still waiting is sent again. */
  reconnected(): void;
}

/** The message a subject holds first after a sequence, as `StreamPublisherOptions.findAppended` reports it. */
export interface AppendedMessage {
  readonly seq: number;
  readonly msgId: string | undefined;
}

/** Where replies go, how long a publish waits by default, and how a resent append finds its own message. */
export interface StreamPublisherOptions {
  /** The connection's inbox prefix (`_INBOX` unless configured), so the acknowledgements stay within its permissions. */
  readonly inboxPrefix: string;
  readonly timeoutMs: number;
  /**
   * The first message of `subject` in `stream` after sequence `after`, or undefined when there is none or it cannot be
   * read now. Asked only when a resent append was refused as "wrong last sequence": if that message carries the
   * append's msgId, the first copy was stored. Without it, such a resend fails as the server answered it.
   */
  readonly findAppended?: (stream: string, subject: string, after: number) => Promise<AppendedMessage | undefined>;
}

interface Pending {
  readonly subject: string;
  readonly payload: string | Uint8Array;
  readonly headers: MsgHdrs;
  readonly deadline: number;
  readonly resolve: (ack: StreamAck) => void;
  readonly reject: (error: Error) => void;
  /** Sent again after a reconnect: a refusal may answer a copy the server already stored. */
  resent: boolean;
  /** When it was first answered "no responders". */
  noRespondersSince?: number;
  /** Removes the abort listener, when there is one. */
  release?: () => void;
}

// How long a publish answered "no responders" while the server's streams stop or come back waits before it is sent again.
const recoveryPauseMs = 100;
// How long "no responders" may come from a server stopping its streams before it closes the connection.
const stoppingStreamsMs = 500;

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
  // Until then (from a disconnect to a timeout after the reconnect), "no responders" means the streams are coming back.
  let recoveringUntil = 0;

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
    const token = msg.subject.slice(inbox.length);
    const entry = pending.get(token);
    if (entry === undefined) return; // Its publish timed out, was cancelled, or a copy of it was answered already.
    // "No responders" from a server whose streams are stopping (it shuts down: its connections close next) or not back
    // yet (just after a reconnect): wait for them, within the deadline. Otherwise nothing captures the subject, which
    // a few tries in the first half second tell from a shutdown.
    if (isNoResponders(msg)) {
      const now = performance.now();
      entry.noRespondersSince ??= now;
      if (now < recoveringUntil || now - entry.noRespondersSince < stoppingStreamsMs) {
        resendLater(token, entry);
        return;
      }
    }
    let ack: StreamAck;
    try {
      ack = toAck(msg);
    } catch (failure) {
      const refusal = failure instanceof Error ? failure : new Error(String(failure));
      if (entry.resent && isApiError(refusal, apiErrorCodes.wrongLastSequence)) confirmResentAppend(token, entry, replyStream(msg), refusal);
      else settle(token)?.reject(refusal);
      return;
    }
    settle(token)?.resolve(ack);
  };

  const resend = (token: string, entry: Pending) => {
    entry.resent = true;
    try {
      nc.publish(entry.subject, entry.payload, { reply: `${inbox}${token}`, headers: entry.headers });
    } catch (error) {
      settle(token)?.reject(error instanceof Error ? error : new Error(String(error)));
    }
  };

  const resendLater = (token: string, entry: Pending) => {
    if (entry.deadline - performance.now() <= recoveryPauseMs) return; // The sweep fails it at its deadline.
    setTimeout(() => {
      if (pending.get(token) === entry) resend(token, entry);
    }, recoveryPauseMs).unref();
  };

  // A resent append refused because its subject moved on: the copy sent before the outage may be what moved it.
  // The append expected the subject to end at sequence N, so if that copy was stored it is the subject's first
  // message after N; carrying the append's msgId, it is this publish's own message.
  const confirmResentAppend = (token: string, entry: Pending, stream: string, refusal: Error) => {
    const expected = Number(entry.headers.get(expectedLastSubjectSequenceHeader));
    const msgId = entry.headers.get(msgIdHeader);
    if (options.findAppended === undefined || stream === '' || msgId === '' || !Number.isSafeInteger(expected)) {
      settle(token)?.reject(refusal);
      return;
    }
    options.findAppended(stream, entry.subject, expected).then(
      (found) => {
        if (found?.msgId === msgId) settle(token)?.resolve({ stream, seq: found.seq, duplicate: false });
        else settle(token)?.reject(refusal);
      },
      () => settle(token)?.reject(refusal),
    );
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
        const entry: Pending = { subject: publish.subject, payload: publish.payload, headers: publish.headers, deadline, resolve, reject, resent: false };
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
    disconnected() {
      recoveringUntil = Infinity;
    },
    reconnected() {
      // nats.js resubscribed the reply subscription before it reported the reconnect, so the acknowledgements of
      // these copies reach it. A publish made since the reconnect is sent twice: the first answer settles it.
      recoveringUntil = performance.now() + options.timeoutMs;
      for (const [token, entry] of pending) resend(token, entry);
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

/** Whether a reply is the server's "no responders": nothing (no stream) took the message. */
function isNoResponders(msg: Msg): boolean {
  return msg.data.length === 0 && msg.headers?.code === 503;
}

/** The stream a reply names (an acknowledgement or a refusal), or '' when it names none. */
function replyStream(msg: Msg): string {
  try {
    const { stream } = msg.json<{ stream?: unknown }>();
    return typeof stream === 'string' ? stream : '';
  } catch {
    return '';
  }
}

/** The stream's acknowledgement in a reply, or the error nats.js's `jetstream.publish` raises for that reply. */
function toAck(msg: Msg): StreamAck {
  // No responders: no stream captures the subject, or JetStream is not there.
  if (isNoResponders(msg)) {
    throw new JetStreamError('jetstream is not enabled', { cause: new RequestError('no responders', { cause: new natsErrors.NoRespondersError(msg.subject) }) });
  }
  const reply = msg.json<{ stream?: unknown; seq?: unknown; duplicate?: unknown; error?: ApiError }>();
  if (reply.error !== undefined) {
    const apiError = new JetStreamApiError(reply.error);
    throw apiError.code === apiErrorCodes.jetStreamNotEnabledForAccount ? new JetStreamError(apiError.message, { cause: apiError }) : apiError;
  }
  // An acknowledgement names the stream and the sequence it stored the message at; anything else is not one.
  if (typeof reply.stream !== 'string' || reply.stream === '' || typeof reply.seq !== 'number') throw new JetStreamError('invalid ack response');
  return { stream: reply.stream, seq: reply.seq, duplicate: reply.duplicate === true };
}
