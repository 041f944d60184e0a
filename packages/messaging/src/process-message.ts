import type { z } from 'zod';
import { SpanKind, type Span } from '@opentelemetry/api';
import type { JsMsg } from '@nats-io/jetstream';
import { DeadLetter, type ToolplaneError, type WireError } from '@toolplane/contracts';
import { decode } from './codec.js';
import { buildDeadLetter, deadLetterMsgId, type DeadLetterSource } from './dead-letter.js';
import { fromMsgHdrs, msgIdHeader, type MessageHeaders } from './headers.js';
import type { Messaging } from './messaging.js';
import { toToolplaneError } from './nats-errors.js';
import { publish } from './publish.js';
import { exhaustedOnArrival, retryDelayMs, settle, workingIntervalMs, type Outcome, type RetryPolicy } from './settlement.js';
import { failSpan, startHandlerSpan } from './trace-context.js';

/** What a message handler learns about the delivery besides the message. */
export interface DeliveryContext {
  /** Aborts when the consumer stops (or its connection closes): wind down, the message will be redelivered. */
  readonly signal: AbortSignal;
  /** 1 on the first delivery; counts every delivery, including ack timeouts. */
  readonly deliveryCount: number;
  readonly subject: string;
  readonly streamSequence: number;
  readonly headers: MessageHeaders;
  /** The publisher's Nats-Msg-Id, if it set one. */
  readonly msgId: string | undefined;
}

/** Handles one valid message; resolving acknowledges it, throwing a taxonomy error decides retry or dead letter. */
export type MessageHandler<T> = (message: T, context: DeliveryContext) => Promise<void>;

/** What a consumer did that a service may want to log or count; `error` is what the handler threw. */
export type ConsumerDiagnostic =
  | { readonly type: 'retry_scheduled'; readonly streamSequence: number; readonly deliveryCount: number; readonly delayMs: number; readonly reason: WireError; readonly error: unknown }
  | { readonly type: 'requeued'; readonly streamSequence: number; readonly deliveryCount: number; readonly reason: WireError; readonly error: unknown }
  | { readonly type: 'dead_lettered'; readonly streamSequence: number; readonly deliveryCount: number; readonly reason: WireError; readonly error: unknown; readonly deadLetterSeq: number }
  | { readonly type: 'dead_letter_failed'; readonly streamSequence: number; readonly deliveryCount: number; readonly reason: WireError; readonly error: ToolplaneError }
  | { readonly type: 'settle_failed'; readonly streamSequence: number; readonly action: 'ack' | 'nak' | 'term' | 'working'; readonly error: unknown }
  | { readonly type: 'fetch_failed'; readonly error: ToolplaneError };

/** Everything processing one message needs, fixed for the life of a consumer. */
export interface ProcessingContext<S extends z.ZodType> {
  readonly messaging: Messaging;
  readonly stream: string;
  readonly consumer: string;
  readonly schema: S;
  readonly handler: MessageHandler<z.output<S>>;
  readonly deadLetterSubject: string;
  readonly policy: RetryPolicy;
  readonly ackWaitMs: number;
  readonly serverBackoffMs: readonly number[];
  /** Aborted when the consumer stops: handlers see it, and failures after it requeue instead of counting. */
  readonly signal: AbortSignal;
  readonly now: () => Date;
  readonly report: (diagnostic: ConsumerDiagnostic) => void;
}

/**
 * Decodes, validates and handles one delivered message, then acks, naks or dead-letters it. Never rejects. It runs in
 * a CONSUMER span `<consumer> process`, a child of the trace context the message's headers carry (the span that
 * published it); a message that is not acknowledged marks it failed with the reason's code as `error.type`.
 */
export function processMessage<S extends z.ZodType>(ctx: ProcessingContext<S>, msg: JsMsg): Promise<void> {
  const headers = fromMsgHdrs(msg.headers);
  const handling = startHandlerSpan(`${ctx.consumer} process`, SpanKind.CONSUMER, headers, {
    'messaging.system': 'nats',
    'messaging.operation.type': 'process',
    'messaging.destination.name': msg.subject,
    'messaging.consumer.group.name': ctx.consumer,
  });
  return handling.run(() => processIn(ctx, msg, headers, handling.span)).finally(() => handling.span.end());
}

async function processIn<S extends z.ZodType>(ctx: ProcessingContext<S>, msg: JsMsg, headers: MessageHeaders, span: Span): Promise<void> {
  const { deliveryCount, streamSequence } = msg.info;
  const source: DeadLetterSource = { stream: ctx.stream, consumer: ctx.consumer, subject: msg.subject, streamSequence, deliveryCount, data: msg.data, headers };
  const decoded = decode(ctx.schema, msg.data, `message ${ctx.stream}#${streamSequence} on ${msg.subject}`);
  if (!decoded.ok) {
    failSpan(span, decoded.reason.code);
    return deadLetter(ctx, msg, source, decoded.reason, undefined);
  }
  const exhausted = exhaustedOnArrival(deliveryCount, ctx.policy);
  if (exhausted) {
    failSpan(span, exhausted.code);
    return deadLetter(ctx, msg, source, exhausted, undefined);
  }

  // Tell the server the message is still being worked on, so a slow handler is not raced by a redelivery.
  const keepAlive = setInterval(() => act(ctx, msg, 'working', () => msg.working()), workingIntervalMs(ctx.ackWaitMs, ctx.serverBackoffMs));
  let outcome: Outcome;
  try {
    await ctx.handler(decoded.value, {
      signal: ctx.signal,
      deliveryCount,
      subject: msg.subject,
      streamSequence,
      headers,
      msgId: headers[msgIdHeader]?.[0],
    });
    outcome = { ok: true };
  } catch (error) {
    outcome = { ok: false, error };
  } finally {
    clearInterval(keepAlive);
  }

  const settlement = settle(outcome, deliveryCount, ctx.signal.aborted, ctx.policy);
  const error = outcome.ok ? undefined : outcome.error;
  if (settlement.kind !== 'ack') failSpan(span, settlement.reason.code);
  switch (settlement.kind) {
    case 'ack':
      act(ctx, msg, 'ack', () => msg.ack());
      return;
    case 'retry':
      act(ctx, msg, 'nak', () => msg.nak(settlement.delayMs));
      ctx.report({ type: 'retry_scheduled', streamSequence, deliveryCount, delayMs: settlement.delayMs, reason: settlement.reason, error });
      return;
    case 'requeue':
      act(ctx, msg, 'nak', () => msg.nak());
      ctx.report({ type: 'requeued', streamSequence, deliveryCount, reason: settlement.reason, error });
      return;
    case 'dead-letter':
      return deadLetter(ctx, msg, source, settlement.reason, error);
  }
}

async function deadLetter<S extends z.ZodType>(ctx: ProcessingContext<S>, msg: JsMsg, source: DeadLetterSource, reason: WireError, error: unknown): Promise<void> {
  const { streamSequence, deliveryCount } = source;
  const maxPayload = ctx.messaging.connection.info?.max_payload ?? 1024 * 1024;
  try {
    const ack = await publish(ctx.messaging, {
      subject: ctx.deadLetterSubject,
      schema: DeadLetter,
      message: buildDeadLetter(source, reason, ctx.now(), maxPayload),
      msgId: deadLetterMsgId(source),
    });
    // Only once the dead letter is stored: a crash before this line redelivers, and the msgId dedupes the retry.
    act(ctx, msg, 'term', () => msg.term(`${reason.code}: ${reason.message}`.slice(0, 256)));
    ctx.report({ type: 'dead_lettered', streamSequence, deliveryCount, reason, error, deadLetterSeq: ack.seq });
  } catch (failure) {
    // Not stored, so not terminated: the message comes back and dead-lettering is tried again.
    act(ctx, msg, 'nak', () => msg.nak(retryDelayMs(deliveryCount, ctx.policy.backoffMs)));
    ctx.report({ type: 'dead_letter_failed', streamSequence, deliveryCount, reason, error: toToolplaneError(failure, `dead-lettering ${ctx.stream}#${streamSequence}`) });
  }
}

/** Sends an ack/nak/term/working; these only fail when the connection is gone, and then the server redelivers anyway. */
function act<S extends z.ZodType>(ctx: ProcessingContext<S>, msg: JsMsg, action: 'ack' | 'nak' | 'term' | 'working', send: () => void): void {
  try {
    send();
  } catch (error) {
    ctx.report({ type: 'settle_failed', streamSequence: msg.info.streamSequence, action, error });
  }
}
