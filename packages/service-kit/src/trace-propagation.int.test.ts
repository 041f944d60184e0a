import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolplaneError } from '@toolplane/contracts';
import { appendToSubject, connectMessaging, consume, ensureConsumer, ensureStream, publish, request, serve, type Messaging } from '@toolplane/messaging';
import { eventually, testScope } from '@toolplane/testing';
import { recordSpansInMemory, type InMemoryTracing, type ReadableSpan } from './tracing.js';

// The messaging kit's trace propagation over a real NATS server, recorded by the kit's in-memory provider: what a
// service gets once startTracing has registered one.

const scope = testScope('trace_propagation');
const Ping = z.object({ n: z.number().int() }).strict();
const Pong = z.object({ n: z.number().int(), traceId: z.string() }).strict();
let m: Messaging;
let tracing: InMemoryTracing;

beforeAll(async () => {
  tracing = recordSpansInMemory('trace-propagation');
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_trace` });
  await ensureStream(m, { name: `${scope.prefix}_DLQ`, subjects: [`${scope.prefix}.dlq.>`], retention: 'limits', storage: 'memory' });
});
afterAll(async () => {
  await m.drain();
  await tracing.stop();
});

const tracer = () => trace.getTracer('trace-propagation-test');

/** Runs `work` inside a fresh INTERNAL span (ended after) and returns its span context with the result. */
async function inSpan<T>(name: string, work: () => Promise<T>): Promise<{ traceId: string; spanId: string; result: T }> {
  const span = tracer().startSpan(name);
  try {
    const result = await context.with(trace.setSpan(context.active(), span), work);
    return { ...span.spanContext(), result };
  } finally {
    span.end();
  }
}

/** Waits until `condition` holds (eventually() waits for a value other than undefined). */
async function until(what: string, condition: () => boolean): Promise<void> {
  await eventually(what, () => (condition() ? true : undefined));
}

function ended(name: string): ReadableSpan {
  const found = tracing.spans().filter((s) => s.name === name);
  expect(found, `exactly one ended span named ${name}`).toHaveLength(1);
  return found[0] as ReadableSpan;
}

describe('request and serve', () => {
  it('carries the requester’s trace to the responder, whose handler runs in a SERVER span that is its child', async () => {
    const subject = `${scope.prefix}.cmd.calls.get`;
    const responder = await serve(m, {
      subject,
      queue: 'trace',
      requestSchema: Ping,
      replySchema: Pong,
      handler: ({ n }) => Promise.resolve({ n, traceId: trace.getActiveSpan()?.spanContext().traceId ?? 'none' }),
    });
    try {
      const caller = await inSpan('caller', () => request(m, { subject, requestSchema: Ping, replySchema: Pong, body: { n: 1 }, timeoutMs: 2_000 }));
      expect(caller.result).toEqual({ n: 1, traceId: caller.traceId });
      await until('the SERVER span ended', () => tracing.spans().some((s) => s.name === 'calls.get process'));
      const server = ended('calls.get process');
      expect(server.kind).toBe(SpanKind.SERVER);
      expect(server.spanContext().traceId).toBe(caller.traceId);
      expect(server.parentSpanContext?.spanId).toBe(caller.spanId);
      expect(server.parentSpanContext?.isRemote).toBe(true);
      expect(server.attributes).toMatchObject({
        'messaging.system': 'nats',
        'messaging.operation.type': 'process',
        'messaging.destination.name': subject,
        'messaging.consumer.group.name': 'trace',
      });
      expect(server.status.code).toBe(SpanStatusCode.UNSET);
    } finally {
      await responder.stop();
    }
  });

  it('marks the SERVER span of an error reply failed with the code, and puts no message text on it', async () => {
    const subject = `${scope.prefix}.cmd.calls.refuse`;
    const responder = await serve(m, {
      subject,
      queue: 'trace',
      requestSchema: Ping,
      replySchema: Pong,
      handler: () => Promise.reject(new ToolplaneError('AUTHORIZATION_DENIED', 'secret-ish detail 7f3a')),
    });
    try {
      await inSpan('refused caller', () => request(m, { subject, requestSchema: Ping, replySchema: Pong, body: { n: 2 }, timeoutMs: 2_000 }).catch(() => undefined));
      await until('the SERVER span ended', () => tracing.spans().some((s) => s.name === 'calls.refuse process'));
      const server = ended('calls.refuse process');
      expect(server.status.code).toBe(SpanStatusCode.ERROR);
      expect(server.attributes['error.type']).toBe('AUTHORIZATION_DENIED');
      expect(JSON.stringify({ attributes: server.attributes, events: server.events, status: server.status })).not.toContain('7f3a');
    } finally {
      await responder.stop();
    }
  });
});

describe('stream publish and consume', () => {
  async function workQueue(name: string) {
    const stream = `${scope.prefix}_${name}`;
    await ensureStream(m, { name: stream, subjects: [`${scope.prefix}.${name}.>`], retention: 'workqueue', storage: 'memory' });
    await ensureConsumer(m, stream, { durableName: `${name}-worker`, ackWaitMs: 5_000 });
    return { stream, consumer: `${name}-worker`, subject: `${scope.prefix}.${name}.items`, deadLetterSubject: `${scope.prefix}.dlq.${name}` };
  }

  it('makes the CONSUMER span of a published message and of an appended one a child of the span that wrote it', async () => {
    const q = await workQueue('published');
    const seen: { n: number; traceId: string | undefined; traceparent: string | undefined }[] = [];
    const handle = await consume(m, {
      ...q,
      schema: Ping,
      maxDeliver: 3,
      handler: (message, delivery) => {
        seen.push({ n: message.n, traceId: trace.getActiveSpan()?.spanContext().traceId, traceparent: delivery.headers['traceparent']?.[0] });
        return Promise.resolve();
      },
    });
    try {
      const published = await inSpan('publisher', () => publish(m, { subject: q.subject, schema: Ping, message: { n: 1 }, msgId: 'p1' }));
      const appended = await inSpan('appender', () => appendToSubject(m, { subject: `${q.subject}.log`, schema: Ping, message: { n: 2 }, expectedLastSequence: 0, msgId: 'a1' }));
      await until('both CONSUMER spans ended', () => tracing.spans().filter((s) => s.name === `${q.consumer} process`).length === 2);
      const consumers = tracing.spans().filter((s) => s.name === `${q.consumer} process`);
      for (const writer of [published, appended]) {
        const span = consumers.find((s) => s.spanContext().traceId === writer.traceId);
        expect(span, `a CONSUMER span in the trace of ${writer.spanId}`).toBeDefined();
        expect(span?.kind).toBe(SpanKind.CONSUMER);
        expect(span?.parentSpanContext?.spanId).toBe(writer.spanId);
        expect(span?.attributes).toMatchObject({ 'messaging.system': 'nats', 'messaging.operation.type': 'process', 'messaging.consumer.group.name': q.consumer });
      }
      expect(seen.map((s) => s.traceId).sort()).toEqual([published.traceId, appended.traceId].sort());
      expect(seen.find((s) => s.n === 1)?.traceparent).toMatch(new RegExp(`^00-${published.traceId}-${published.spanId}-01$`));
    } finally {
      await handle.stop();
    }
  });

  it('adds no trace header to a message published outside any span, whose CONSUMER span is a root', async () => {
    const q = await workQueue('untraced');
    const headers: (string | undefined)[] = [];
    const handle = await consume(m, {
      ...q,
      schema: Ping,
      maxDeliver: 3,
      handler: (_message, delivery) => {
        headers.push(delivery.headers['traceparent']?.[0]);
        return Promise.resolve();
      },
    });
    try {
      await publish(m, { subject: q.subject, schema: Ping, message: { n: 3 }, msgId: 'u1' });
      await until('the CONSUMER span ended', () => tracing.spans().some((s) => s.name === `${q.consumer} process`));
      expect(headers).toEqual([undefined]);
      expect(ended(`${q.consumer} process`).parentSpanContext).toBeUndefined();
    } finally {
      await handle.stop();
    }
  });

  it('marks the CONSUMER span of a dead-lettered message failed with the reason’s code', async () => {
    const q = await workQueue('refused');
    const handle = await consume(m, {
      ...q,
      schema: Ping,
      maxDeliver: 3,
      handler: () => Promise.reject(new ToolplaneError('INVALID_ARGUMENT', 'not this one')),
    });
    try {
      await inSpan('refused publisher', () => publish(m, { subject: q.subject, schema: Ping, message: { n: 4 }, msgId: 'r1' }));
      await until('the CONSUMER span ended', () => tracing.spans().some((s) => s.name === `${q.consumer} process`));
      const span = ended(`${q.consumer} process`);
      expect(span.status.code).toBe(SpanStatusCode.ERROR);
      expect(span.attributes['error.type']).toBe('INVALID_ARGUMENT');
    } finally {
      await handle.stop();
    }
  });
});
