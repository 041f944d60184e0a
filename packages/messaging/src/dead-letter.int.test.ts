import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DeadLetter, ToolplaneError } from '@toolplane/contracts';
import { testScope } from '@toolplane/testing';
import { collector, eventually } from '../test/support.js';
import { connectMessaging } from './connect.js';
import { consume } from './consume.js';
import { deadLetterMsgId } from './dead-letter.js';
import { ensureConsumer } from './ensure-consumer.js';
import { ensureStream } from './ensure-stream.js';
import type { Messaging } from './messaging.js';
import type { ConsumerDiagnostic } from './process-message.js';
import { publish } from './publish.js';

const scope = testScope('messaging_dead_letter');
const Order = z.object({ orderId: z.string(), qty: z.number().int().positive() }).strict();
const dlqStream = `${scope.prefix}_DLQ`;
let m: Messaging;

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_dead_letter` });
  await ensureStream(m, { name: dlqStream, subjects: [`${scope.prefix}.dlq.>`], retention: 'limits', storage: 'memory' });
});
afterAll(async () => {
  await m.drain();
});

/** A work queue of its own, its dead-letter subject, and a collector of what arrives there. */
async function poisonCase(name: string) {
  const stream = `${scope.prefix}_${name}`;
  await ensureStream(m, { name: stream, subjects: [`${scope.prefix}.${name}.>`], retention: 'workqueue', storage: 'memory' });
  await ensureConsumer(m, stream, { durableName: 'worker', ackWaitMs: 5_000 });
  const deadLetterSubject = `${scope.prefix}.dlq.${name}`;
  const letters = collector<DeadLetter>();
  m.connection.subscribe(deadLetterSubject, { callback: (_, msg) => letters.push(DeadLetter.parse(msg.json())) });
  await m.connection.flush();
  return { stream, subject: `${scope.prefix}.${name}.orders`, deadLetterSubject, letters };
}

/** The message left the work queue and the consumer for good. */
async function gone(stream: string) {
  await eventually(`${stream} is empty`, async () => {
    const [info, state] = await Promise.all([m.manager.consumers.info(stream, 'worker'), m.manager.streams.info(stream)]);
    return info.num_pending === 0 && info.num_ack_pending === 0 && state.state.messages === 0;
  });
}

const decodePayload = (letter: DeadLetter) => Buffer.from(letter.payloadBase64, 'base64').toString('utf8');

describe('dead-lettering', () => {
  it('dead-letters a message that keeps failing with a retryable error after maxDeliver deliveries', async () => {
    const q = await poisonCase('poison');
    const order = { orderId: 'o1', qty: 1 };
    const { seq } = await publish(m, { subject: q.subject, schema: Order, message: order, msgId: 'order-o1' });
    const deliveries: number[] = [];
    const diagnostics: ConsumerDiagnostic[] = [];
    const consumer = await consume(m, {
      ...q,
      consumer: 'worker',
      schema: Order,
      maxDeliver: 3,
      nakBackoffMs: [20],
      onDiagnostic: (d) => diagnostics.push(d),
      handler: (_, { deliveryCount }) => {
        deliveries.push(deliveryCount);
        throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the provider is down');
      },
    });
    const letter = await q.letters.next();
    expect(letter).toMatchObject({
      stream: q.stream,
      consumer: 'worker',
      subject: q.subject,
      streamSequence: seq,
      deliveryCount: 3,
      reason: { code: 'TEMPORARY_UNAVAILABLE', message: 'the provider is down', retryable: true },
    });
    expect(JSON.parse(decodePayload(letter))).toEqual(order);
    expect(letter.headers?.['Nats-Msg-Id']).toEqual(['order-o1']);
    await gone(q.stream);
    await consumer.stop();
    expect(deliveries).toEqual([1, 2, 3]);
    expect(diagnostics.map((d) => d.type)).toEqual(['retry_scheduled', 'retry_scheduled', 'dead_lettered']);
  });

  it('dead-letters an undecodable message at once, without calling the handler', async () => {
    const q = await poisonCase('bad_json');
    await m.jetstream.publish(q.subject, '{"orderId": "o1", qty');
    let called = false;
    const consumer = await consume(m, { ...q, consumer: 'worker', schema: Order, maxDeliver: 5, handler: () => Promise.resolve(void (called = true)) });
    const letter = await q.letters.next();
    expect(letter).toMatchObject({ deliveryCount: 1, reason: { code: 'INVALID_ARGUMENT', retryable: false } });
    expect(decodePayload(letter)).toBe('{"orderId": "o1", qty');
    await gone(q.stream);
    await consumer.stop();
    expect(called).toBe(false);
  });

  it('dead-letters a message that breaks its contract at once, naming the field', async () => {
    const q = await poisonCase('bad_shape');
    await m.jetstream.publish(q.subject, JSON.stringify({ orderId: 'o1', qty: 'many' }));
    let called = false;
    const consumer = await consume(m, { ...q, consumer: 'worker', schema: Order, maxDeliver: 5, handler: () => Promise.resolve(void (called = true)) });
    const letter = await q.letters.next();
    expect(letter).toMatchObject({ deliveryCount: 1, reason: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('qty') as unknown } });
    await gone(q.stream);
    await consumer.stop();
    expect(called).toBe(false);
  });

  it.each([
    ['a non-retryable taxonomy error', () => new ToolplaneError('CONFLICT', 'already settled'), { code: 'CONFLICT', message: 'already settled', retryable: false }],
    ['an unknown error', () => new TypeError('cannot read properties of undefined'), { code: 'INTERNAL', message: 'internal error', retryable: false }],
  ])('dead-letters a message whose handler throws %s at once, with its reason', async (_, failure, reason) => {
    const q = await poisonCase(`fatal_${reason.code}`);
    await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'o1' });
    const deliveries: number[] = [];
    const consumer = await consume(m, {
      ...q,
      consumer: 'worker',
      schema: Order,
      maxDeliver: 5,
      handler: (_, { deliveryCount }) => {
        deliveries.push(deliveryCount);
        throw failure();
      },
    });
    expect(await q.letters.next()).toMatchObject({ deliveryCount: 1, reason });
    await gone(q.stream);
    await consumer.stop();
    expect(deliveries).toEqual([1]);
  });

  it('does not terminate a message whose dead letter cannot be stored, and dead-letters it once it can', async () => {
    const q = await poisonCase('unstored');
    // No stream captures this subject yet: publishing the dead letter fails.
    const deadLetterSubject = `${scope.prefix}.late_dlq.unstored`;
    await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'o1' });
    const diagnostics = collector<ConsumerDiagnostic>();
    const consumer = await consume(m, {
      ...q,
      deadLetterSubject,
      consumer: 'worker',
      schema: Order,
      maxDeliver: 10,
      nakBackoffMs: [100],
      onDiagnostic: (d) => diagnostics.push(d),
      handler: () => Promise.reject(new ToolplaneError('CONFLICT', 'already settled')),
    });
    expect(await diagnostics.next()).toMatchObject({ type: 'dead_letter_failed', error: { code: 'TEMPORARY_UNAVAILABLE' } });
    expect((await m.manager.streams.info(q.stream)).state.messages).toBe(1);

    await ensureStream(m, { name: `${scope.prefix}_LATE_DLQ`, subjects: [`${scope.prefix}.late_dlq.>`], retention: 'limits', storage: 'memory' });
    await eventually('the dead letter is stored', async () => (await m.manager.streams.info(`${scope.prefix}_LATE_DLQ`)).state.messages === 1);
    await gone(q.stream);
    await consumer.stop();
    expect(diagnostics.all.at(-1)).toMatchObject({ type: 'dead_lettered' });
  });

  it('stores one dead letter even when an earlier attempt stored it and crashed before terminating', async () => {
    const q = await poisonCase('crashed');
    const { seq } = await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'o1' });
    // What the earlier attempt left behind: the dead letter, under the id derived from (stream, consumer, sequence).
    const earlier: DeadLetter = {
      stream: q.stream,
      consumer: 'worker',
      subject: q.subject,
      streamSequence: seq,
      deliveryCount: 1,
      reason: { code: 'CONFLICT', message: 'already settled', retryable: false },
      payloadBase64: '',
      deadLetteredAt: new Date().toISOString(),
    };
    const stored = await publish(m, { subject: q.deadLetterSubject, schema: DeadLetter, message: earlier, msgId: deadLetterMsgId({ stream: q.stream, consumer: 'worker', streamSequence: seq }) });
    const diagnostics = collector<ConsumerDiagnostic>();
    const consumer = await consume(m, {
      ...q,
      consumer: 'worker',
      schema: Order,
      maxDeliver: 5,
      onDiagnostic: (d) => diagnostics.push(d),
      handler: () => Promise.reject(new ToolplaneError('CONFLICT', 'already settled')),
    });
    expect(await diagnostics.next()).toMatchObject({ type: 'dead_lettered', deadLetterSeq: stored.seq });
    await gone(q.stream);
    await consumer.stop();
    const dlq = await m.manager.streams.info(dlqStream, { subjects_filter: q.deadLetterSubject });
    expect(dlq.state.subjects?.[q.deadLetterSubject]).toBe(1);
  });

  it('dead-letters, without running the handler again, a message delivered more often than maxDeliver without being settled', async () => {
    const q = await poisonCase('unsettled');
    await publish(m, { subject: q.subject, schema: Order, message: { orderId: 'o1', qty: 1 }, msgId: 'o1' });
    // Two deliveries that ended without an ack: what crashed handlers leave behind.
    const raw = await m.jetstream.consumers.get(q.stream, 'worker');
    for (let i = 0; i < 2; i++) (await raw.next({ expires: 2_000 }))?.nak();
    let called = false;
    const consumer = await consume(m, { ...q, consumer: 'worker', schema: Order, maxDeliver: 2, handler: () => Promise.resolve(void (called = true)) });
    expect(await q.letters.next()).toMatchObject({ deliveryCount: 3, reason: { code: 'INTERNAL', message: expect.stringContaining('maxDeliver is 2') as unknown } });
    await gone(q.stream);
    await consumer.stop();
    expect(called).toBe(false);
  });
});
