import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  type SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import type { MsgHdrs } from '@nats-io/nats-core';
import type { MessageHeaders } from './headers.js';

// W3C trace context travels in message headers (`traceparent`, `tracestate`). Everything here goes through the
// OpenTelemetry API only: a service that registers no provider gets the API's no-ops, so with tracing off a publish
// adds no header (there is no valid active span to inject) and a handler's span is a non-recording one.

// A tracer is looked up once per registered provider, not once per message. The API's tracer forwards to the provider
// registered after it was made, but keeps forwarding to that one after it is unregistered; a test that registers a
// fresh provider gets a fresh tracer here, because the API hands out a new global provider then.
let cached: { readonly provider: TracerProvider; readonly tracer: Tracer } | undefined;

function tracer(): Tracer {
  const provider = trace.getTracerProvider();
  if (cached?.provider !== provider) cached = { provider, tracer: provider.getTracer('@toolplane/messaging') };
  return cached.tracer;
}

const msgHdrsSetter: TextMapSetter<MsgHdrs> = {
  set: (carrier, key, value) => carrier.set(key, value),
};

const recordSetter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

const headersGetter: TextMapGetter<MessageHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key]?.[0],
};

/** The active context when it holds a span context worth propagating; else undefined (nothing to send). */
function propagatedContext(): Context | undefined {
  const active = context.active();
  const spanContext = trace.getSpanContext(active);
  return spanContext !== undefined && isSpanContextValid(spanContext) ? active : undefined;
}

/** Writes the active trace context into NATS headers; without an active valid span it writes nothing. */
export function injectTraceContext(hdrs: MsgHdrs): void {
  const active = propagatedContext();
  if (active !== undefined) propagation.inject(active, hdrs, msgHdrsSetter);
}

/**
 * The active trace context as plain headers (`traceparent`, and `tracestate` when set), for a carrier other than a
 * NATS message (an MCP request's `_meta`); empty without an active valid span.
 */
export function traceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  const active = propagatedContext();
  if (active !== undefined) propagation.inject(active, carrier, recordSetter);
  return carrier;
}

/** The trace context a message's headers carry, over the root context: a message without one starts a new trace. */
export function contextFromHeaders(headers: MessageHeaders): Context {
  return propagation.extract(ROOT_CONTEXT, headers, headersGetter);
}

/** The messaging span a handler runs in, and the context that makes it the parent of what the handler does. */
export interface HandlerSpan {
  readonly span: Span;
  /** Runs `work` with the span active. */
  run<T>(work: () => Promise<T>): Promise<T>;
}

/**
 * Starts the SERVER or CONSUMER span of one received message, a child of the context its headers carry. With tracing
 * off and no incoming context, `run` calls `work` as it is (no context to switch to).
 */
export function startHandlerSpan(name: string, kind: SpanKind, headers: MessageHeaders, attributes: Attributes): HandlerSpan {
  const parent = contextFromHeaders(headers);
  const span = tracer().startSpan(name, { kind, attributes }, parent);
  if (!span.isRecording() && !isSpanContextValid(span.spanContext())) return { span, run: (work) => work() };
  const active = trace.setSpan(parent, span);
  return { span, run: (work) => context.with(active, work) };
}

/** Marks a handler's span failed with the taxonomy code (never the message, which may quote input). */
export function failSpan(span: Span, code: string): void {
  span.setAttribute('error.type', code);
  span.setStatus({ code: SpanStatusCode.ERROR });
}
