import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { raceAbort, sleep, ToolplaneError } from '@toolplane/contracts';
import { testScope } from '@toolplane/testing';
import { collector, eventually, gate } from '../test/support.js';
import { connectMessaging } from './connect.js';
import { consume } from './consume.js';
import type { ConsumerSpec } from './consumer-spec.js';
import { ensureConsumer } from './ensure-consumer.js';
import { ensureStream } from './ensure-stream.js';
import type { Messaging } from './messaging.js';
import type { ConsumerDiagnostic, DeliveryContext } from './process-message.js';
import { publish } from './publish.js';

const scope = testScope('messaging_consume');
const Order = z.object({ orderId: z.string(), qty: z.number().int().positive() }).strict();
type Order = z.infer<typeof Order>;
let m: Messaging;

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_consume` });
  await ensureStream(m, { name: `${scope.prefix}_DLQ`, subjects: [`${scope.prefix}.dlq.>`], retention: 'limits', storage: 'memory' });
});
afterAll(async () => {
  await m.drain();
});

/** A work-queue stream of its own with a durable consumer `worker`. */
async function workQueue(name: string, consumer: Partial<ConsumerSpec> = {}) {
  const stream = `${scope.prefix}_${name}`;
  await ensureStream(m, { name: stream, subjects: [`${scope.prefix}.${name}.>`], retention: 'workqueue', storage: 'memory' });
  await ensureConsumer(m, stream, { durableName: 'worker', ackWaitMs: 5_000, ...consumer });
  return { stream, subject: `${scope.prefix}.${name}.orders`, deadLetterSubject: `${scope.prefix}.dlq.${name}` };
}

/** Waits until the consumer has nothing pending or unacknowledged and the work queue is empty. */
async function drained(stream: string) {
  await eventually(`${stream} is fully acknowledged`, async () => {
    const [info, state] = await Promise.all([m.manager.consumers.info(stream, 'worker'), m.manager.streams.info(stream)]);
    return info.num_pending === 0 && info.num_ack_pending === 0 && state.state.messages === 0;
  });
}

describe('publish', () => {
  it('stores a valid message and reports where', async () => {
    const q = await workQueue('stored');
    await expect(publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'o1' })).resolves.toEqual({ stream: q.stream, seq: 1, duplicate: false });
  });

  it('refuses a message that breaks its contract with INVALID_ARGUMENT and publishes nothing', async () => {
    const q = await workQueue('invalid');
    await expect(publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: -1 }, msgId: 'o1' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((await m.manager.streams.info(q.stream)).state.messages).toBe(0);
  });

  it('fails with TEMPORARY_UNAVAILABLE when no stream captures the subject', async () => {
    await expect(publish(m, { subject: `${scope.prefix}.nowhere`, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'o1' })).rejects.toMatchObject({
      code: 'TEMPORARY_UNAVAILABLE',
      message: expect.stringContaining(`${scope.prefix}.nowhere`) as unknown,
    });
  });
});

describe('consume', () => {
  it('hands a valid message to the handler with its delivery, and acks only after the handler resolved', async () => {
    const q = await workQueue('happy');
    await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 2 }, msgId: 'order-o1', headers: { 'Toolplane-Correlation-Id': 'c1' } });
    const seen = collector<{ order: Order; context: DeliveryContext }>();
    const release = gate();
    const consumer = await consume(m, {
      ...q,
      consumer: 'worker',
      schema: Order,
      maxDeliver: 3,
      handler: async (order, context) => {
        seen.push({ order, context });
        await release.promise;
      },
    });
    const { order, context } = await seen.next();
    expect(order).toEqual({ orderId: 'o1', qty: 2 });
    expect(context).toMatchObject({ deliveryCount: 1, subject: q.subject, streamSequence: 1, msgId: 'order-o1' });
    expect(context.headers['Toolplane-Correlation-Id']).toEqual(['c1']);
    expect(context.signal.aborted).toBe(false);
    // While the handler runs, the message is delivered but not acknowledged.
    expect((await m.manager.consumers.info(q.stream, 'worker')).num_ack_pending).toBe(1);
    release.open();
    await drained(q.stream);
    await consumer.stop();
    expect(seen.all).toHaveLength(1);
  });

  it('stores a message published twice with the same msgId once, and consumes it once', async () => {
    const q = await workQueue('dedupe');
    const first = await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'order-o1' });
    const second = await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'order-o1' });
    expect(first.duplicate).toBe(false);
    expect(second).toEqual({ stream: q.stream, seq: first.seq, duplicate: true });
    expect((await m.manager.streams.info(q.stream)).state.messages).toBe(1);
    const seen = collector<Order>();
    const consumer = await consume(m, { ...q, consumer: 'worker', schema: Order, maxDeliver: 3, handler: (order) => Promise.resolve(seen.push(order)) });
    await seen.next();
    await drained(q.stream);
    await consumer.stop();
    expect(seen.all).toHaveLength(1);
  });

  it('redelivers after a retryable failure, and the handler sees the second delivery', async () => {
    const q = await workQueue('retry');
    await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'o1' });
    const deliveries = collector<number>();
    const diagnostics: ConsumerDiagnostic[] = [];
    const consumer = await consume(m, {
      ...q,
      consumer: 'worker',
      schema: Order,
      maxDeliver: 3,
      nakBackoffMs: [50],
      onDiagnostic: (d) => diagnostics.push(d),
      handler: (_, { deliveryCount }) => {
        deliveries.push(deliveryCount);
        if (deliveryCount === 1) throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the database is away');
        return Promise.resolve();
      },
    });
    expect(await deliveries.take(2)).toEqual([1, 2]);
    await drained(q.stream);
    await consumer.stop();
    expect(deliveries.all).toEqual([1, 2]);
    expect(diagnostics).toEqual([
      expect.objectContaining({ type: 'retry_scheduled', deliveryCount: 1, delayMs: 50, reason: expect.objectContaining({ code: 'TEMPORARY_UNAVAILABLE' }) as unknown }),
    ]);
  });

  it('keeps a slow handler’s message from being redelivered while it works', async () => {
    const q = await workQueue('slow', { ackWaitMs: 1_500 });
    await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'o1' });
    const deliveries: number[] = [];
    const finished = gate();
    // Concurrency 2 keeps a pull open while the handler runs: a redelivery would reach it.
    const consumer = await consume(m, {
      ...q,
      consumer: 'worker',
      schema: Order,
      maxDeliver: 5,
      concurrency: 2,
      handler: async (_, { deliveryCount }) => {
        deliveries.push(deliveryCount);
        if (deliveryCount === 1) await new Promise((resolve) => setTimeout(resolve, 3_500)); // longer than two ack waits
        finished.open();
      },
    });
    await finished.promise;
    await drained(q.stream);
    await consumer.stop();
    expect(deliveries).toEqual([1]);
    expect((await m.manager.consumers.info(q.stream, 'worker')).num_redelivered).toBe(0);
  });

  it('lets many concurrent handlers wait on the delivery signal at once without a listener-leak warning', async () => {
    const queue = await workQueue('listeners');
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    let handled = 0;
    const handle = await consume(m, {
      stream: queue.stream,
      consumer: 'worker',
      schema: Order,
      // Each handler races four waits on the one signal every in-flight handler shares: 16 × 4 listeners at once.
      handler: async (_order, delivery) => {
        await Promise.all(Array.from({ length: 4 }, () => raceAbort(sleep(100, undefined, 'waiting'), delivery.signal, 'waiting')));
        handled += 1;
      },
      deadLetterSubject: queue.deadLetterSubject,
      maxDeliver: 3,
      concurrency: 16,
    });
    try {
      await Promise.all(Array.from({ length: 32 }, (_, i) => publish(m, { subject: queue.subject, schema: Order, message: { orderId: `l-${i}`, qty: 1 }, msgId: `l-${i}` })));
      await eventually('every order handled', () => handled === 32);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((warning) => warning.startsWith('MaxListenersExceededWarning'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await handle.stop();
    }
  });

  it('handles at most `concurrency` messages at once, and fetches no more than it can handle', async () => {
    const q = await workQueue('concurrent');
    for (const id of ['a', 'b', 'c']) await publish(m, { subject: q.subject, schema: Order, message: { orderId: id, qty: 1 }, msgId: id });
    const started = collector<string>();
    const release = gate();
    let running = 0;
    let most = 0;
    const consumer = await consume(m, {
      ...q,
      consumer: 'worker',
      schema: Order,
      maxDeliver: 3,
      concurrency: 2,
      handler: async ({ orderId }) => {
        most = Math.max(most, ++running);
        started.push(orderId);
        await release.promise;
        running--;
      },
    });
    await started.take(2);
    const info = await m.manager.consumers.info(q.stream, 'worker');
    expect(info.num_ack_pending).toBe(2);
    expect(info.num_pending).toBe(1);
    release.open();
    await started.next();
    await drained(q.stream);
    await consumer.stop();
    expect(most).toBe(2);
    expect([...started.all].sort()).toEqual(['a', 'b', 'c']);
  });

  it('stop() aborts the handler’s signal, waits for it to settle, and hands the message back', async () => {
    const q = await workQueue('stopped');
    await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'o1' });
    const started = gate();
    let settled = false;
    const diagnostics: ConsumerDiagnostic[] = [];
    const first = await consume(m, {
      ...q,
      consumer: 'worker',
      schema: Order,
      maxDeliver: 3,
      onDiagnostic: (d) => diagnostics.push(d),
      handler: async (_, { signal }) => {
        started.open();
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        settled = true;
        throw new ToolplaneError('CANCELLED', 'stopped mid-way');
      },
    });
    await started.promise;
    await first.stop();
    expect(settled).toBe(true);
    await expect(first.closed()).resolves.toBeUndefined();
    expect(diagnostics).toEqual([expect.objectContaining({ type: 'requeued', deliveryCount: 1 })]);

    const redelivered = collector<number>();
    const second = await consume(m, { ...q, consumer: 'worker', schema: Order, maxDeliver: 3, handler: (_, { deliveryCount }) => Promise.resolve(redelivered.push(deliveryCount)) });
    // Well within the 5 s ack wait: the message was handed back, not left to time out.
    expect(await redelivered.next(2_000)).toBe(2);
    await drained(q.stream);
    await second.stop();
  });

  it('stop() with a grace period lets an in-flight handler finish and ack', async () => {
    const q = await workQueue('graceful');
    await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'o1' });
    const started = gate();
    const release = gate();
    let aborted: boolean | undefined;
    const consumer = await consume(m, {
      ...q,
      consumer: 'worker',
      schema: Order,
      maxDeliver: 3,
      handler: async (_, { signal }) => {
        started.open();
        await release.promise;
        aborted = signal.aborted;
      },
    });
    await started.promise;
    const stopping = consumer.stop({ graceMs: 10_000 });
    release.open();
    await stopping;
    expect(aborted).toBe(false);
    await drained(q.stream);
  });

  it('Messaging.drain() stops its consumers first, aborting their handlers', async () => {
    const q = await workQueue('drained');
    await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'o1' });
    const own = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_draining` });
    const started = gate();
    const consumer = await consume(own, {
      ...q,
      consumer: 'worker',
      schema: Order,
      maxDeliver: 3,
      handler: async (_, { signal }) => {
        started.open();
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        throw new ToolplaneError('CANCELLED', 'stopped');
      },
    });
    await started.promise;
    await own.drain();
    await expect(consumer.closed()).resolves.toBeUndefined();
    await expect(own.closed()).resolves.toBeUndefined();
    // The message was handed back: the next consumer gets it at once, as its second delivery.
    const redelivered = collector<number>();
    const next = await consume(m, { ...q, consumer: 'worker', schema: Order, maxDeliver: 3, handler: (_, { deliveryCount }) => Promise.resolve(redelivered.push(deliveryCount)) });
    expect(await redelivered.next(2_000)).toBe(2);
    await drained(q.stream);
    await next.stop();
  });

  it('fails with NOT_FOUND when the consumer does not exist', async () => {
    const q = await workQueue('missing');
    await expect(consume(m, { ...q, consumer: 'nobody', schema: Order, maxDeliver: 3, handler: () => Promise.resolve() })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('refuses a maxDeliver the consumer’s own bound would never let it reach', async () => {
    const q = await workQueue('bounded', { maxDeliver: 2 });
    await expect(consume(m, { ...q, consumer: 'worker', schema: Order, maxDeliver: 3, handler: () => Promise.resolve() })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
