import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectMessaging, ensureStream, type Messaging } from '@toolplane/messaging';
import { testScope } from '@toolplane/testing';
import { jetStreamEventStore } from './jetstream-event-store.js';
import { readAppendsMatching } from './read-matching.js';

const scope = testScope('read_matching');
// Events that name their aggregate, as readAppendsMatching needs.
const Event = z.object({ type: z.literal('Noted'), data: z.object({ id: z.string(), n: z.number().int() }) });
type Event = z.infer<typeof Event>;
const stream = `${scope.prefix}_AGG`.toUpperCase();
const subjectOf = (id: string) => `${scope.prefix}.agg.${id}`;

let m: Messaging;

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_rm` });
  await ensureStream(m, { name: stream, subjects: [`${scope.prefix}.agg.>`], retention: 'limits', storage: 'file', allowDirect: true });
});

afterAll(async () => {
  await m.drain();
});

const noted = (id: string, n: number): Event => ({ type: 'Noted', data: { id, n } });

describe('readAppendsMatching', () => {
  it('reads every append under a wildcard filter in stream order, with the sequences readStream calls versions, and nothing outside it', async () => {
    const store = jetStreamEventStore(m, { stream, subjectOf, schema: Event });
    const a1 = await store.appendToStream('ws1.a', [noted('a', 1), noted('a', 2)], { expectedVersion: 0 });
    const b1 = await store.appendToStream('ws1.b', [noted('b', 1)], { expectedVersion: 0 });
    await store.appendToStream('ws2.c', [noted('c', 1)], { expectedVersion: 0 });
    const a2 = await store.appendToStream('ws1.a', [noted('a', 3)], { expectedVersion: a1.nextExpectedVersion });

    const appends = await readAppendsMatching(m, { stream, filter: `${scope.prefix}.agg.ws1.>`, schema: Event });
    expect(appends).toEqual([
      { seq: a1.nextExpectedVersion, events: [noted('a', 1), noted('a', 2)] },
      { seq: b1.nextExpectedVersion, events: [noted('b', 1)] },
      { seq: a2.nextExpectedVersion, events: [noted('a', 3)] },
    ]);
    expect((await store.readStream('ws1.a')).version).toBe(a2.nextExpectedVersion);
    expect(await readAppendsMatching(m, { stream, filter: `${scope.prefix}.agg.ws3.>`, schema: Event })).toEqual([]);
  });

  it('reads a selection longer than one direct-get batch', async () => {
    const store = jetStreamEventStore(m, { stream, subjectOf, schema: Event });
    for (let i = 0; i < 300; i += 1) await store.appendToStream(`many.s${i}`, [noted(`s${i}`, i)], { expectedVersion: 0 });
    const appends = await readAppendsMatching(m, { stream, filter: `${scope.prefix}.agg.many.*`, schema: Event });
    expect(appends.map((append) => append.events[0]?.data.n)).toEqual(Array.from({ length: 300 }, (_, i) => i));
  });
});
