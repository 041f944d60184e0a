// The projector's spans. A batch holds the events of many messages, each handled in its own CONSUMER span (started by
// the messaging kit, a child of the span that appended the event). The batch's write is one span: a child of the first
// event's consumer span, linked to the others' (the OpenTelemetry batch pattern), so each call's trace reaches the
// read-model write. Inside it, one span per collection written. Never event contents: names, counts and codes only.
import { context, isSpanContextValid, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Link, type Span, type SpanContext } from '@opentelemetry/api';
import { hasErrorCode } from '@toolplane/contracts';

const tracerName = '@toolplane/audit-projector';

/** The span context the calling code runs in (an event's CONSUMER span), if there is a valid one. */
export function currentOrigin(): SpanContext | undefined {
  const origin = trace.getSpanContext(context.active());
  return origin !== undefined && isSpanContextValid(origin) ? origin : undefined;
}

async function endedAfter<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const code = hasErrorCode(error) ? error.code : 'INTERNAL';
    span.setAttribute('error.type', code);
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Runs a batch's write in a span `projector write batch`, a child of the first origin and linked to the other distinct
 * ones. Without any origin (tracing off, or events that came without a trace) it runs as it is.
 */
export function inBatchSpan<T>(origins: readonly (SpanContext | undefined)[], work: () => Promise<T>): Promise<T> {
  const seen = new Set<string>();
  const traced: SpanContext[] = [];
  for (const origin of origins) {
    if (origin === undefined || seen.has(origin.spanId)) continue;
    seen.add(origin.spanId);
    traced.push(origin);
  }
  const [parent, ...others] = traced;
  if (parent === undefined) return work();
  const links: Link[] = others.map((other) => ({ context: other }));
  const parentContext = trace.setSpanContext(ROOT_CONTEXT, parent);
  const span = trace.getTracer(tracerName).startSpan('projector write batch', { kind: SpanKind.INTERNAL, links, attributes: { 'db.operation.batch.size': origins.length } }, parentContext);
  return context.with(trace.setSpan(parentContext, span), () => endedAfter(span, work));
}

/** Runs the write of one collection in a span `projector write <collection>` under the active span; without one, as it is. */
export function inWriteSpan<T>(collection: string, work: () => Promise<T>): Promise<T> {
  const active = context.active();
  if (trace.getSpan(active) === undefined) return work();
  const span = trace.getTracer(tracerName).startSpan(
    `projector write ${collection}`,
    { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'mongodb', 'db.collection.name': collection } },
    active,
  );
  return context.with(trace.setSpan(active, span), () => endedAfter(span, work));
}
