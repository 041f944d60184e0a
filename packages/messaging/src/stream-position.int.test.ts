import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasErrorCode } from '@toolplane/contracts';
import { testScope } from '@toolplane/testing';
import { connectMessaging } from './connect.js';
import { ensureConsumer } from './ensure-consumer.js';
import { ensureStream } from './ensure-stream.js';
import type { Messaging } from './messaging.js';
import { consumerProgress, deleteConsumer, streamPosition } from './stream-position.js';

const scope = testScope('messaging_position');
let m: Messaging;

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_position` });
});
afterAll(async () => {
  await m.drain();
});

describe('streamPosition, consumerProgress and deleteConsumer', () => {
  it('follow a stream and a consumer through publishing and acknowledging, and delete the consumer once', async () => {
    const stream = `${scope.prefix}_log`;
    await ensureStream(m, { name: stream, subjects: [`${scope.prefix}.log.>`], retention: 'limits', storage: 'file', duplicateWindowMs: 60_000 });
    expect(await streamPosition(m, stream)).toEqual({ firstSequence: 0, lastSequence: 0, messages: 0 });
    for (let i = 0; i < 3; i += 1) await m.jetstream.publish(`${scope.prefix}.log.${i}`, '{}');
    expect(await streamPosition(m, stream)).toEqual({ firstSequence: 1, lastSequence: 3, messages: 3 });

    await ensureConsumer(m, stream, { durableName: 'reader' });
    expect(await consumerProgress(m, stream, 'reader')).toEqual({ ackFloor: 0, delivered: 0, pending: 3, ackPending: 0, redelivered: 0 });
    const consumer = await m.jetstream.consumers.get(stream, 'reader');
    const first = await consumer.next({ expires: 5_000 });
    const second = await consumer.next({ expires: 5_000 });
    await first?.ackAck();
    expect(await consumerProgress(m, stream, 'reader')).toEqual({ ackFloor: 1, delivered: 2, pending: 1, ackPending: 1, redelivered: 0 });
    await second?.ackAck();
    expect((await consumerProgress(m, stream, 'reader')).ackFloor).toBe(2);
    const third = await consumer.next({ expires: 5_000 });
    third?.nak();
    const again = await consumer.next({ expires: 5_000 });
    expect(again?.redelivered).toBe(true);
    expect(await consumerProgress(m, stream, 'reader')).toMatchObject({ pending: 0, ackPending: 1, redelivered: 1 });
    await again?.ackAck();
    expect(await consumerProgress(m, stream, 'reader')).toMatchObject({ ackFloor: 3, ackPending: 0, redelivered: 0 });

    expect(await deleteConsumer(m, stream, 'reader')).toBe(true);
    expect(await deleteConsumer(m, stream, 'reader')).toBe(false);
    const missing = await consumerProgress(m, stream, 'reader').catch((error: unknown) => error);
    expect(hasErrorCode(missing) && missing.code).toBe('NOT_FOUND');
  });
});
