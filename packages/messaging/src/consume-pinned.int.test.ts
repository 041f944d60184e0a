import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { testScope } from '@toolplane/testing';
import { eventually } from '../test/support.js';
import { connectMessaging } from './connect.js';
import { consume, type ConsumerHandle, type PinChange } from './consume.js';
import type { ConsumerSpec } from './consumer-spec.js';
import { ensureConsumer } from './ensure-consumer.js';
import { ensureStream } from './ensure-stream.js';
import type { Messaging } from './messaging.js';
import { publish } from './publish.js';

// A consumer with one active client (a pinned priority group) over a real nats-server: of two consuming
// connections only the pinned one receives; once it is gone the other is pinned within the pin timeout and
// receives the rest, including what the first one held unacknowledged; nothing is lost.

const scope = testScope('messaging_pinned');
const Order = z.object({ orderId: z.string() }).strict();
let admin: Messaging;
const connections: Messaging[] = [];

beforeAll(async () => {
  admin = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_admin` });
  await ensureStream(admin, { name: `${scope.prefix}_DLQ`, subjects: [`${scope.prefix}.dlq.>`], retention: 'limits', storage: 'memory' });
});
afterAll(async () => {
  await Promise.all(connections.map((connection) => connection.close().catch(() => undefined)));
  await admin.drain();
});

async function pinnedStream(name: string, consumer: Partial<ConsumerSpec> = {}) {
  const stream = `${scope.prefix}_${name}`;
  await ensureStream(admin, { name: stream, subjects: [`${scope.prefix}.${name}.>`], retention: 'limits', storage: 'memory' });
  const spec: ConsumerSpec = { durableName: 'projector', ackWaitMs: 3_000, maxAckPending: 100, pinned: { group: 'writers', timeoutMs: 2_000 }, ...consumer };
  await ensureConsumer(admin, stream, spec);
  return { stream, subject: `${scope.prefix}.${name}.orders`, deadLetterSubject: `${scope.prefix}.dlq.${name}` };
}

async function publishOrders(subject: string, ids: readonly string[]): Promise<void> {
  for (const orderId of ids) await publish(admin, { subject, schema: Order, message: { orderId }, msgId: orderId });
}

const range = (label: string, from: number, to: number) => Array.from({ length: to - from }, (_, i) => `${label}-${from + i}`);

describe('a pinned consumer', () => {
  it('is declared with its priority group and timeout, and a change of either (or dropping it) is an update', async () => {
    const q = await pinnedStream('declare');
    const info = await admin.manager.consumers.info(q.stream, 'projector');
    expect(info.config).toMatchObject({ priority_groups: ['writers'], priority_policy: 'pinned_client', priority_timeout: 2_000_000_000 });
    const base: ConsumerSpec = { durableName: 'projector', ackWaitMs: 3_000, maxAckPending: 100 };
    await expect(ensureConsumer(admin, q.stream, { ...base, pinned: { group: 'writers', timeoutMs: 2_000 } })).resolves.toEqual({ action: 'unchanged', changed: [] });
    await expect(ensureConsumer(admin, q.stream, { ...base, pinned: { group: 'writers', timeoutMs: 5_000 } })).resolves.toEqual({ action: 'updated', changed: ['pinned'] });
    await expect(ensureConsumer(admin, q.stream, base)).resolves.toEqual({ action: 'updated', changed: ['pinned'] });
    expect((await admin.manager.consumers.info(q.stream, 'projector')).config.priority_policy ?? 'none').toBe('none');
    await expect(ensureConsumer(admin, q.stream, { ...base, pinned: { group: 'w', timeoutMs: 2_000 } })).resolves.toEqual({ action: 'updated', changed: ['pinned'] });
    await expect(ensureConsumer(admin, q.stream, { ...base, pinned: { group: 'a group name too long', timeoutMs: 2_000 } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(ensureConsumer(admin, q.stream, { ...base, pinned: { group: 'w', timeoutMs: 500 } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('keeps its pin from pull to pull: one client with few slots drains far faster than the pin timeout per pull', async () => {
    const q = await pinnedStream('steady', { pinned: { group: 'writers', timeoutMs: 5_000 } });
    await publishOrders(q.subject, range('s', 0, 60));
    const seen: string[] = [];
    const started = Date.now();
    const connection = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_steady` });
    connections.push(connection);
    const handle = await consume(connection, { ...q, consumer: 'projector', schema: Order, maxDeliver: 3, concurrency: 5, handler: (order) => Promise.resolve(void seen.push(order.orderId)) });
    await eventually('all 60 orders to be handled', () => seen.length >= 60, 20_000);
    // Twelve rounds of five: a client that lost its pin between pulls would wait out 5 s on each.
    expect(Date.now() - started).toBeLessThan(4_000);
    await handle.stop();
  });

  it('delivers to one of two clients only, and after that one is gone to the other within the timeout, losing nothing', async () => {
    const q = await pinnedStream('failover');
    const received = { a: [] as string[], b: [] as string[] };
    const pins = { a: [] as PinChange[], b: [] as PinChange[] };
    // The first client to receive one of these never finishes it: they stay unacknowledged until it is gone.
    const held = new Set(range('first', 45, 50));
    const hanging = new Set<string>();
    const handles = new Map<'a' | 'b', { connection: Messaging; handle: ConsumerHandle }>();
    for (const label of ['a', 'b'] as const) {
      const connection = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_${label}` });
      connections.push(connection);
      const handle = await consume(connection, {
        ...q,
        consumer: 'projector',
        schema: Order,
        maxDeliver: 5,
        concurrency: 20,
        onPinChange: (change) => pins[label].push(change),
        handler: async (order) => {
          received[label].push(order.orderId);
          if (held.has(order.orderId) && !hanging.has(order.orderId)) {
            hanging.add(order.orderId);
            await new Promise<never>(() => undefined);
          }
        },
      });
      handles.set(label, { connection, handle });
    }
    await publishOrders(q.subject, range('first', 0, 50));
    await eventually('the first 50 orders to be received', () => received.a.length + received.b.length >= 50, 20_000);
    const winner = received.a.length > 0 ? 'a' : 'b';
    const other = winner === 'a' ? 'b' : 'a';
    // Only the pinned client received, and it was told it was pinned; the other was never pinned.
    expect(received[winner]).toHaveLength(50);
    expect(received[other]).toEqual([]);
    expect(pins[winner]).toEqual([{ pinned: true, id: expect.any(String) as unknown }]);
    expect(pins[other]).toEqual([]);

    // The pinned client's connection goes away with five orders unacknowledged.
    const gone = handles.get(winner) as { connection: Messaging };
    const closedAt = Date.now();
    await gone.connection.close();
    await publishOrders(q.subject, range('second', 0, 50));
    await eventually('the other client to be pinned', () => pins[other].length > 0, 10_000);
    // The pin moves once the timeout (2 s) passed without a pull from the pinned client.
    expect(Date.now() - closedAt).toBeLessThan(2_000 + 4_000);
    const everything = [...range('first', 0, 50), ...range('second', 0, 50)];
    await eventually('every order to be acknowledged', async () => {
      const info = await admin.manager.consumers.info(q.stream, 'projector');
      return info.num_pending === 0 && info.num_ack_pending === 0 && info.ack_floor.stream_seq === 100;
    }, 20_000);
    // The survivor got everything the first client did not finish: the 50 new orders and the 5 it held.
    const acknowledged = new Set([...received[winner].filter((id) => !held.has(id)), ...received[other]]);
    expect([...acknowledged].sort()).toEqual([...everything].sort());
    expect(received[other]).toEqual(expect.arrayContaining([...held, ...range('second', 0, 50)]));
    await (handles.get(other) as { handle: ConsumerHandle }).handle.stop();
  }, 60_000);

  it('hands the pin over at once when the pinned client stops, rather than after the timeout', async () => {
    const q = await pinnedStream('handover', { pinned: { group: 'writers', timeoutMs: 20_000 } });
    const received = { a: [] as string[], b: [] as string[] };
    const handles: Record<string, ConsumerHandle> = {};
    for (const label of ['a', 'b'] as const) {
      const connection = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_handover_${label}` });
      connections.push(connection);
      handles[label] = await consume(connection, { ...q, consumer: 'projector', schema: Order, maxDeliver: 3, concurrency: 10, handler: (order) => Promise.resolve(void received[label].push(order.orderId)) });
    }
    await publishOrders(q.subject, range('before', 0, 10));
    await eventually('the first orders to be received', () => received.a.length + received.b.length >= 10, 20_000);
    const pinnedOne = received.a.length > 0 ? 'a' : 'b';
    const other = pinnedOne === 'a' ? 'b' : 'a';
    const stoppedAt = Date.now();
    await (handles[pinnedOne] as ConsumerHandle).stop();
    await publishOrders(q.subject, range('after', 0, 10));
    await eventually('the other client to receive the new orders', () => received[other].length >= 10, 15_000);
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    expect(received[other].sort()).toEqual(range('after', 0, 10).sort());
    await (handles[other] as ConsumerHandle).stop();
  }, 60_000);
});
