import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectMessaging, ensureStream, readSubject, type Messaging } from '@toolplane/messaging';
import { testScope } from '@toolplane/testing';
import { handleCommand } from './command-handler.js';
import type { Decider } from './decider.js';
import { isVersionConflict } from './event-store.js';
import { jetStreamEventStore, storedAppendSchema } from './jetstream-event-store.js';

const scope = testScope('event_store');
const Event = z.object({ type: z.literal('Counted'), data: z.object({ by: z.number().int() }) });
type Event = z.infer<typeof Event>;
const stream = `${scope.prefix}_AGG`.toUpperCase();
const subjectOf = (id: string) => `${scope.prefix}.agg.${id}`;
let m: Messaging;

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_es` });
  await ensureStream(m, { name: stream, subjects: [`${scope.prefix}.agg.>`], retention: 'limits', storage: 'file', allowDirect: true });
});
afterAll(async () => {
  await m.drain();
});

const counted = (by: number): Event => ({ type: 'Counted', data: { by } });

describe('jetStreamEventStore', () => {
  it('reads an empty stream as version 0, then appends and reads back in order', async () => {
    const store = jetStreamEventStore(m, { stream, subjectOf, schema: Event });
    expect(await store.readStream('a')).toEqual({ events: [], version: 0 });
    const first = await store.appendToStream('a', [counted(1), counted(2)], { expectedVersion: 0 });
    const second = await store.appendToStream('a', [counted(3)], { expectedVersion: first.nextExpectedVersion });
    expect(await store.readStream('a')).toEqual({ events: [counted(1), counted(2), counted(3)], version: second.nextExpectedVersion });
    expect(await store.readStream('a', { afterVersion: first.nextExpectedVersion })).toEqual({ events: [counted(3)], version: second.nextExpectedVersion });
  });

  it('refuses an append at a stale version, and stores a retried identical append once', async () => {
    const store = jetStreamEventStore(m, { stream, subjectOf, schema: Event });
    const first = await store.appendToStream('b', [counted(1)], { expectedVersion: 0 });
    const stale = await store.appendToStream('b', [counted(5)], { expectedVersion: 0 }).catch((error: unknown) => error);
    expect(isVersionConflict(stale)).toBe(true);
    // The same decision sent again (its acknowledgement was lost): the expectation is checked first, so the retry is a
    // version conflict (its writer reads again and finds its own events), and the events are stored once.
    const again = await store.appendToStream('b', [counted(1)], { expectedVersion: 0 }).catch((error: unknown) => error);
    expect(isVersionConflict(again)).toBe(true);
    expect(await store.readStream('b')).toEqual({ events: [counted(1)], version: first.nextExpectedVersion });
  });

  it('gives exactly one winner per aggregate when writers race on the same version', async () => {
    const store = jetStreamEventStore(m, { stream, subjectOf, schema: Event });
    const ids = Array.from({ length: 50 }, (_, i) => `race-${i}`);
    const results = await Promise.allSettled(ids.flatMap((id) => Array.from({ length: 8 }, (_, writer) => store.appendToStream(id, [counted(writer + 1)], { expectedVersion: 0 }))));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(ids.length);
    expect(results.filter((result) => result.status === 'rejected').every((result) => isVersionConflict(result.reason))).toBe(true);
    for (const id of ids.slice(0, 5)) expect((await store.readStream(id)).events).toHaveLength(1);
  });

  it('keeps a rule across concurrent command handlers: every lost race is decided again', async () => {
    const store = jetStreamEventStore(m, { stream, subjectOf, schema: Event });
    const limited: Decider<number, number, Event> = {
      decide: (by, state) => (state + by > 10 ? [] : [counted(by)]),
      evolve: (state, event) => state + event.data.by,
      initialState: () => 0,
    };
    await Promise.all(Array.from({ length: 20 }, () => handleCommand(store, limited, 'limited', 1, { maxAttempts: 40 })));
    expect((await store.readStream('limited')).events).toHaveLength(10);
  });

  it('refuses events that break the contract before anything is sent', async () => {
    const store = jetStreamEventStore(m, { stream, subjectOf, schema: Event });
    await expect(store.appendToStream('c', [{ type: 'Counted', data: { by: 1.5 } }], { expectedVersion: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await store.readStream('c')).toEqual({ events: [], version: 0 });
  });

  it('stores each append as one message that storedAppendSchema reads (what a consumer of the stream sees)', async () => {
    const store = jetStreamEventStore(m, { stream, subjectOf, schema: Event });
    const first = await store.appendToStream('d', [counted(1), counted(2)], { expectedVersion: 0 });
    await store.appendToStream('d', [counted(3)], { expectedVersion: first.nextExpectedVersion });
    const log = await readSubject(m, { stream, subject: subjectOf('d'), schema: storedAppendSchema(Event) });
    expect(log.entries.map((entry) => entry.value)).toEqual([{ events: [counted(1), counted(2)] }, { events: [counted(3)] }]);
    expect(storedAppendSchema(Event).safeParse({ events: [] }).success).toBe(false);
  });

  it('with trusted appends and its own message ids: stores unvalidated events, validates them on read, and a duplicate id is a version conflict', async () => {
    const store = jetStreamEventStore(m, { stream, subjectOf, schema: Event, trustAppends: true, msgIdOf: (id, version) => `${id}:${version}` });
    const first = await store.appendToStream('trusted', [counted(1)], { expectedVersion: 0 });
    // Another decision under an id already used: JetStream drops it as a duplicate, the store says version conflict.
    const reused = jetStreamEventStore(m, { stream, subjectOf, schema: Event, trustAppends: true, msgIdOf: () => 'trusted:0' });
    expect(isVersionConflict(await reused.appendToStream('trusted', [counted(2)], { expectedVersion: first.nextExpectedVersion }).catch((error: unknown) => error))).toBe(true);
    await store.appendToStream('trusted', [{ type: 'Counted', data: { by: 1.5 } }], { expectedVersion: first.nextExpectedVersion });
    await expect(store.readStream('trusted')).rejects.toMatchObject({ code: 'INTERNAL' });
  });

  it('reads a long stream across direct-get batches', async () => {
    const store = jetStreamEventStore(m, { stream, subjectOf, schema: Event });
    let version = 0;
    for (let i = 0; i < 300; i += 1) version = (await store.appendToStream('long', [counted(i)], { expectedVersion: version })).nextExpectedVersion;
    const read = await store.readStream('long');
    expect(read.events.map((event) => event.data.by)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(read.version).toBe(version);
  });
});
