import type { z } from 'zod';
import { SpanKind, type Span } from '@opentelemetry/api';
import type { Msg, Subscription } from '@nats-io/nats-core';
import { toWireError, ToolplaneError, type ReplyEnvelope, type WireError } from '@toolplane/contracts';
import { settledOrElapsed } from './abort.js';
import { decode } from './codec.js';
import { fromMsgHdrs, timeoutHeader, type MessageHeaders } from './headers.js';
import type { Messaging, StopOptions, Stoppable } from './messaging.js';
import { toToolplaneError } from './nats-errors.js';
import { failSpan, startHandlerSpan } from './trace-context.js';
import { wireSafe } from './wire-error.js';

/** What a request handler learns about the request besides its body. */
export interface RequestContext {
  /** Aborts when the responder stops or the requester's deadline has passed. */
  readonly signal: AbortSignal;
  readonly subject: string;
  readonly headers: MessageHeaders;
}

/** Answers one valid request; throwing a taxonomy error sends that error to the requester. */
export type RequestHandler<Req, Res> = (request: Req, context: RequestContext) => Promise<Res>;

/** What a responder did that a service may want to log; `error` is what the handler threw. */
export type ServeDiagnostic =
  | { readonly type: 'handler_failed'; readonly subject: string; readonly reply: WireError; readonly error: unknown }
  | { readonly type: 'invalid_request'; readonly subject: string; readonly reply: WireError }
  | { readonly type: 'invalid_reply'; readonly subject: string; readonly reply: WireError }
  | { readonly type: 'reply_failed'; readonly subject: string; readonly error: ToolplaneError }
  | { readonly type: 'subscription_failed'; readonly subject: string; readonly error: ToolplaneError };

/** A request/reply endpoint: subject, queue group, the contracts of both directions, and the handler. */
export interface ServeOptions<Req extends z.ZodType, Res extends z.ZodType> {
  /** May contain wildcards, e.g. `toolplane.v1.registry.*.*.get`. */
  readonly subject: string;
  /** Replicas in the same queue group share the requests: each goes to one of them. */
  readonly queue: string;
  readonly requestSchema: Req;
  readonly replySchema: Res;
  readonly handler: RequestHandler<z.output<Req>, z.input<Res>>;
  /** Aborting it stops the responder, as stop() does. */
  readonly signal?: AbortSignal;
  readonly onDiagnostic?: (diagnostic: ServeDiagnostic) => void;
}

/** A running responder. */
export interface ServeHandle extends Stoppable {
  readonly subject: string;
  /** Resolves once the responder has stopped (or its connection closed) and every in-flight request was answered. */
  closed(): Promise<void>;
}

/**
 * Answers requests on a subject in a queue group with a ReplyEnvelope: `{ok:true,data}` with the handler's
 * result, or `{ok:false,error}`: INVALID_ARGUMENT for a request that breaks its contract, the thrown
 * error's code (via toWireError) when the handler fails, TEMPORARY_UNAVAILABLE when it was cut off by stop.
 * Resolves once the server has registered the subscription.
 *
 * Each request is handled in a SERVER span `<operation> process` (the subject's last two tokens, e.g.
 * `adapter.lookupInvocation process`), a child of the trace context in the request's headers and active while the
 * handler runs; an error reply marks it failed with the code as `error.type`.
 */
export async function serve<Req extends z.ZodType, Res extends z.ZodType>(m: Messaging, options: ServeOptions<Req, Res>): Promise<ServeHandle> {
  const what = `serving ${options.subject}`;
  const handlers = new AbortController();
  const inflight = new Set<Promise<void>>();
  const report = (diagnostic: ServeDiagnostic) => {
    try {
      options.onDiagnostic?.(diagnostic);
    } catch {
      // A failing diagnostics sink (a logger) must not break request handling.
    }
  };

  const respond = (msg: Msg, answer: ReplyEnvelope<unknown>) => {
    try {
      msg.respond(JSON.stringify(answer.ok ? answer : { ok: false, error: wireSafe(answer.error) }));
    } catch (error) {
      // Typically a reply over max_payload: tell the requester instead of letting it time out.
      report({ type: 'reply_failed', subject: msg.subject, error: toToolplaneError(error, `replying on ${msg.subject}`) });
      try {
        msg.respond(JSON.stringify({ ok: false, error: { code: 'INTERNAL', message: 'the reply could not be sent', retryable: false } }));
      } catch {
        // The connection is gone; the requester times out.
      }
    }
  };

  const spanName = `${operationOf(options.subject)} process`;
  const answer = (msg: Msg): Promise<void> => {
    if (!msg.reply) return Promise.resolve();
    const headers = fromMsgHdrs(msg.headers);
    const handling = startHandlerSpan(spanName, SpanKind.SERVER, headers, {
      'messaging.system': 'nats',
      'messaging.operation.type': 'process',
      'messaging.destination.name': msg.subject,
      'messaging.destination.template': options.subject,
      'messaging.consumer.group.name': options.queue,
    });
    return handling.run(() => answerIn(msg, headers, handling.span)).finally(() => handling.span.end());
  };

  const answerIn = async (msg: Msg, headers: MessageHeaders, span: Span): Promise<void> => {
    const decoded = decode(options.requestSchema, msg.data, `the request on ${msg.subject}`);
    if (!decoded.ok) {
      report({ type: 'invalid_request', subject: msg.subject, reply: decoded.reason });
      failSpan(span, decoded.reason.code);
      return respond(msg, { ok: false, error: decoded.reason });
    }
    const budgetMs = Number(headers[timeoutHeader]?.[0]);
    const signal = Number.isFinite(budgetMs) && budgetMs > 0 ? AbortSignal.any([handlers.signal, AbortSignal.timeout(budgetMs)]) : handlers.signal;
    let result: unknown;
    try {
      result = await options.handler(decoded.value, { signal, subject: msg.subject, headers });
    } catch (error) {
      const reply: WireError = handlers.signal.aborted
        ? { code: 'TEMPORARY_UNAVAILABLE', message: `the responder on ${msg.subject} is shutting down`, retryable: true }
        : toWireError(error);
      report({ type: 'handler_failed', subject: msg.subject, reply, error });
      failSpan(span, reply.code);
      return respond(msg, { ok: false, error: reply });
    }
    const parsed = options.replySchema.safeParse(result);
    if (!parsed.success) {
      const reply: WireError = { code: 'INTERNAL', message: `the reply on ${msg.subject} does not match its contract`, retryable: false };
      report({ type: 'invalid_reply', subject: msg.subject, reply });
      failSpan(span, reply.code);
      return respond(msg, { ok: false, error: reply });
    }
    respond(msg, { ok: true, data: parsed.data });
  };

  let subscription: Subscription;
  try {
    subscription = m.connection.subscribe(options.subject, {
      queue: options.queue,
      callback: (error, msg) => {
        if (error) {
          report({ type: 'subscription_failed', subject: options.subject, error: toToolplaneError(error, what) });
          return;
        }
        const work = answer(msg).finally(() => inflight.delete(work));
        inflight.add(work);
      },
    });
    // Once the server has the subscription, a request sent after serve() resolves finds a responder.
    await m.connection.flush();
  } catch (error) {
    throw toToolplaneError(error, what);
  }

  const done = subscription.closed.then(async () => {
    if (!handlers.signal.aborted && m.connection.isClosed()) handlers.abort(new ToolplaneError('CANCELLED', `${what}: the connection closed`));
    while (inflight.size > 0) await Promise.all(inflight);
  });

  let stopping = false;
  let unregister: () => void = () => undefined;
  const handle: ServeHandle = {
    subject: options.subject,
    async stop(stopOptions: StopOptions = {}) {
      if (!stopping) {
        stopping = true;
        unregister();
        if (!subscription.isClosed()) {
          try {
            await subscription.drain();
          } catch {
            // Already closed (the connection went away): nothing left to drain.
          }
        }
        const graceMs = stopOptions.graceMs ?? 0;
        if (graceMs > 0 && inflight.size > 0) await settledOrElapsed([...inflight], graceMs);
        handlers.abort(new ToolplaneError('CANCELLED', `${what}: the responder is stopping`));
      }
      await done;
    },
    closed: () => done,
  };
  unregister = m.track(handle);
  if (options.signal?.aborted) await handle.stop();
  else options.signal?.addEventListener('abort', () => void handle.stop(), { once: true });
  return handle;
}

/** A low-cardinality name for what a subject pattern serves: its last two tokens (`<service>.<operation>` of a command subject), or the pattern when those are wildcards. */
function operationOf(pattern: string): string {
  const tokens = pattern.split('.');
  const last = tokens.slice(-2);
  return last.length === 2 && last.every((t) => t !== '*' && t !== '>') ? last.join('.') : pattern;
}
