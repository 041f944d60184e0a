import { context, SpanKind, SpanStatusCode, trace, type SpanContext } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ToolplaneError } from '@toolplane/contracts';
import { recordSpansInMemory, type InMemoryTracing } from '@toolplane/service-kit';
import { currentOrigin, inBatchSpan, inWriteSpan } from './write-spans.js';

let tracing: InMemoryTracing;
beforeAll(() => {
  tracing = recordSpansInMemory('audit-projector');
});
afterAll(() => tracing.stop());
beforeEach(() => tracing.reset());

/** The origin a message handler would capture inside its CONSUMER span (ended right after, as the kit does). */
function consumerOrigin(name: string): SpanContext | undefined {
  const span = trace.getTracer('test').startSpan(name, { kind: SpanKind.CONSUMER });
  const origin = context.with(trace.setSpan(context.active(), span), currentOrigin);
  span.end();
  return origin;
}

describe('the write spans', () => {
  it('writes a batch in a span under the first event’s consumer span, linked to the others, with one span per collection', async () => {
    const first = consumerOrigin('a');
    const second = consumerOrigin('b');
    await inBatchSpan([first, second, first], () => inWriteSpan('runtime_tool_calls', () => Promise.resolve()));
    const batch = tracing.spans().find((s) => s.name === 'projector write batch');
    const write = tracing.spans().find((s) => s.name === 'projector write runtime_tool_calls');
    expect(batch?.spanContext().traceId).toBe(first?.traceId);
    expect(batch?.parentSpanContext?.spanId).toBe(first?.spanId);
    expect(batch?.links.map((link) => link.context.spanId)).toEqual([second?.spanId]);
    expect(batch?.attributes['db.operation.batch.size']).toBe(3);
    expect(write?.parentSpanContext?.spanId).toBe(batch?.spanContext().spanId);
    expect(write?.kind).toBe(SpanKind.CLIENT);
    expect(write?.attributes).toEqual({ 'db.system.name': 'mongodb', 'db.collection.name': 'runtime_tool_calls' });
  });

  it('starts no span for a batch without a traced event, nor for a write outside any span', async () => {
    await inBatchSpan([undefined, undefined], () => inWriteSpan('audit_chain', () => Promise.resolve()));
    expect(tracing.spans()).toEqual([]);
  });

  it('marks a failed write with the error’s code and rethrows it', async () => {
    const origin = consumerOrigin('a');
    tracing.reset();
    const failure = new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the store is away');
    await expect(inBatchSpan([origin], () => inWriteSpan('flow_journal', () => Promise.reject(failure)))).rejects.toBe(failure);
    expect(tracing.spans().map((s) => [s.name, s.status.code, s.attributes['error.type']])).toEqual([
      ['projector write flow_journal', SpanStatusCode.ERROR, 'TEMPORARY_UNAVAILABLE'],
      ['projector write batch', SpanStatusCode.ERROR, 'TEMPORARY_UNAVAILABLE'],
    ]);
  });
});
