import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nanos } from '@nats-io/nats-core';
import { testScope } from '@toolplane/testing';
import { connectMessaging } from './connect.js';
import { ensureConsumer } from './ensure-consumer.js';
import { ensureStream } from './ensure-stream.js';
import type { Messaging } from './messaging.js';
import type { StreamSpec } from './stream-spec.js';

const scope = testScope('messaging_declare');
let m: Messaging;

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_declare` });
});
afterAll(async () => {
  await m.drain();
});

const streamSpec = (name: string): StreamSpec => ({
  name: `${scope.prefix}_${name}`,
  subjects: [`${scope.prefix}.${name}.>`],
  retention: 'workqueue',
  storage: 'file',
  duplicateWindowMs: 60_000,
});

describe('ensureStream', () => {
  it('creates once, then reports unchanged, then updates a changed setting in place', async () => {
    const spec = streamSpec('orders');
    await expect(ensureStream(m, spec)).resolves.toEqual({ action: 'created', changed: [] });
    await expect(ensureStream(m, spec)).resolves.toEqual({ action: 'unchanged', changed: [] });

    await m.jetstream.publish(`${scope.prefix}.orders.1`, '{}');
    await expect(ensureStream(m, { ...spec, maxAgeMs: 3_600_000, subjects: [...spec.subjects, `${scope.prefix}.more.>`] })).resolves.toEqual({
      action: 'updated',
      changed: ['subjects', 'max_age'],
    });
    const info = await m.manager.streams.info(spec.name);
    expect(info.config.max_age).toBe(nanos(3_600_000));
    expect(info.config.subjects).toEqual([...spec.subjects, `${scope.prefix}.more.>`]);
    expect(info.state.messages).toBe(1);
    await expect(ensureStream(m, { ...spec, maxAgeMs: 3_600_000, subjects: [...spec.subjects, `${scope.prefix}.more.>`] })).resolves.toMatchObject({ action: 'unchanged' });
  });

  it('lets two replicas declare the same stream at once', async () => {
    const spec = streamSpec('raced');
    const results = await Promise.all([ensureStream(m, spec), ensureStream(m, spec), ensureStream(m, spec)]);
    expect(results.map((r) => r.action)).toContain('created');
    await expect(ensureStream(m, spec)).resolves.toMatchObject({ action: 'unchanged' });
  });

  it('refuses a change the server cannot make with CONFLICT, and keeps the stream and its messages', async () => {
    const spec = streamSpec('immutable');
    await ensureStream(m, spec);
    await m.jetstream.publish(`${scope.prefix}.immutable.1`, '{}');
    await expect(ensureStream(m, { ...spec, retention: 'limits' })).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('retention') as unknown });
    const info = await m.manager.streams.info(spec.name);
    expect(info.config.retention).toBe('workqueue');
    expect(info.state.messages).toBe(1);
  });
});

describe('ensureConsumer', () => {
  it('creates once, then reports unchanged, then updates changed settings in place, keeping its position', async () => {
    const spec = streamSpec('jobs');
    await ensureStream(m, spec);
    const consumer = { durableName: 'worker', filterSubject: `${scope.prefix}.jobs.>`, ackWaitMs: 10_000, maxAckPending: 50 };
    await expect(ensureConsumer(m, spec.name, consumer)).resolves.toEqual({ action: 'created', changed: [] });
    await expect(ensureConsumer(m, spec.name, consumer)).resolves.toEqual({ action: 'unchanged', changed: [] });

    await m.jetstream.publish(`${scope.prefix}.jobs.1`, '{}');
    const before = await m.manager.consumers.info(spec.name, 'worker');
    expect(before.num_pending).toBe(1);
    const changed = { ...consumer, ackWaitMs: 20_000, maxDeliver: 10, filterSubjects: [`${scope.prefix}.jobs.a.>`, `${scope.prefix}.jobs.b.>`], filterSubject: undefined };
    await expect(ensureConsumer(m, spec.name, changed)).resolves.toEqual({ action: 'updated', changed: ['filterSubjects', 'ack_wait', 'max_deliver'] });
    const after = await m.manager.consumers.info(spec.name, 'worker');
    expect(after.config).toMatchObject({ ack_wait: nanos(20_000), max_deliver: 10, filter_subjects: [`${scope.prefix}.jobs.a.>`, `${scope.prefix}.jobs.b.>`] });
    expect(after.config.filter_subject ?? '').toBe('');
    expect(after.created).toBe(before.created);
    await expect(ensureConsumer(m, spec.name, changed)).resolves.toMatchObject({ action: 'unchanged' });
  });

  it('refuses a change the server cannot make with CONFLICT', async () => {
    const spec = streamSpec('fixed');
    await ensureStream(m, spec);
    await ensureConsumer(m, spec.name, { durableName: 'worker' });
    await expect(ensureConsumer(m, spec.name, { durableName: 'worker', deliverPolicy: 'new' })).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('fails with NOT_FOUND on a stream that does not exist', async () => {
    await expect(ensureConsumer(m, `${scope.prefix}_missing`, { durableName: 'worker' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
