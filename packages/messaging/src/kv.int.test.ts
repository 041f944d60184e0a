import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { hasErrorCode } from '@toolplane/contracts';
import { testScope } from '@toolplane/testing';
import { connectMessaging } from './connect.js';
import { openKv, type KvChange, type KvWatch } from './kv.js';
import type { Messaging } from './messaging.js';

const scope = testScope('messaging_kv');
const Item = z.object({ name: z.string(), count: z.number().int() });
type Item = z.infer<typeof Item>;
let m: Messaging;

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_kv` });
});
afterAll(async () => {
  await m.drain();
});

async function codeOf(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (error) {
    if (hasErrorCode(error)) return error.code;
    throw error;
  }
  return 'OK';
}

/** Collects changes until `until` says stop, within a deadline; the watch goes on (breaking a for-await would end it). */
async function collect(watch: KvWatch<Item>, until: (seen: KvChange<Item>[]) => boolean, timeoutMs = 10_000): Promise<KvChange<Item>[]> {
  const seen: KvChange<Item>[] = [];
  const iterator = watch[Symbol.asyncIterator]();
  const timer = setTimeout(() => watch.stop(), timeoutMs);
  try {
    while (!until(seen)) {
      const next = await iterator.next();
      if (next.done === true) break;
      seen.push(next.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return seen;
}

describe('openKv', () => {
  it('creates a bucket once, and puts, gets, updates and deletes typed values', async () => {
    const spec = { name: `${scope.prefix}_a`, storage: 'memory' as const };
    const kv = await openKv(m, spec, Item);
    await openKv(m, spec, Item);
    const revision = await kv.put('one', { name: 'x', count: 1 });
    expect(await kv.get('one')).toEqual({ key: 'one', value: { name: 'x', count: 1 }, revision });
    expect(await kv.get('missing')).toBeUndefined();
    const next = await kv.update('one', { name: 'x', count: 2 }, revision);
    expect(await codeOf(kv.update('one', { name: 'x', count: 3 }, revision))).toBe('CONFLICT');
    expect(await codeOf(kv.create('one', { name: 'y', count: 0 }))).toBe('CONFLICT');
    expect((await kv.get('one'))?.revision).toBe(next);
    await kv.delete('one');
    expect(await kv.get('one')).toBeUndefined();
    await kv.create('one', { name: 'again', count: 0 });
  });

  it('refuses a value that breaks the contract, writing nothing', async () => {
    const kv = await openKv(m, { name: `${scope.prefix}_b`, storage: 'memory' }, Item);
    expect(await codeOf(kv.put('bad', { name: 'x', count: 1.5 }))).toBe('INVALID_ARGUMENT');
    expect(await kv.get('bad')).toBeUndefined();
  });

  it('watches: the current values, then ready, then changes; ready at once when nothing matches', async () => {
    const kv = await openKv(m, { name: `${scope.prefix}_c`, storage: 'memory' }, Item);
    const empty = await kv.watch({ key: 'nothing.>' });
    expect(await collect(empty, (seen) => seen.length === 1)).toEqual([{ kind: 'ready' }]);
    empty.stop();

    await kv.put('a.1', { name: 'a1', count: 1 });
    await kv.put('a.2', { name: 'a2', count: 2 });
    await kv.put('b.1', { name: 'b1', count: 3 });
    const watch = await kv.watch({ key: 'a.>' });
    const initial = await collect(watch, (seen) => seen.at(-1)?.kind === 'ready');
    expect(initial.map((c) => (c.kind === 'put' ? c.key : c.kind))).toEqual(['a.1', 'a.2', 'ready']);
    await kv.put('a.3', { name: 'a3', count: 4 });
    await kv.delete('a.1');
    const later = await collect(watch, (seen) => seen.length === 2);
    expect(later.map((c) => [c.kind, 'key' in c ? c.key : ''])).toEqual([
      ['put', 'a.3'],
      ['delete', 'a.1'],
    ]);
    watch.stop();
  });

  it('reports a value written around the contract as invalid without ending the watch', async () => {
    const kv = await openKv(m, { name: `${scope.prefix}_d`, storage: 'memory' }, Item);
    await m.jetstream.publish(`$KV.${scope.prefix}_d.bad`, '{"name":1}');
    await kv.put('good', { name: 'g', count: 1 });
    const watch = await kv.watch();
    const seen = await collect(watch, (all) => all.at(-1)?.kind === 'ready');
    expect(seen.map((c) => c.kind)).toEqual(['invalid', 'put', 'ready']);
    watch.stop();
  });

  it('tells the revision of the latest change, which a watch delivers last', async () => {
    const kv = await openKv(m, { name: `${scope.prefix}_f`, storage: 'memory' }, Item);
    expect(await kv.lastRevision()).toBe(0);
    await kv.put('x', { name: 'x', count: 1 });
    const latest = await kv.put('y', { name: 'y', count: 1 });
    await kv.delete('x');
    const deleted = await kv.lastRevision();
    expect(deleted).toBe(latest + 1);
    const watch = await kv.watch();
    const seen = await collect(watch, (all) => all.at(-1)?.kind === 'ready');
    expect(Math.max(...seen.map((c) => ('revision' in c ? c.revision : 0)))).toBe(deleted);
    watch.stop();
  });

  it('ends a watch when its signal aborts', async () => {
    const kv = await openKv(m, { name: `${scope.prefix}_e`, storage: 'memory' }, Item);
    const controller = new AbortController();
    const watch = await kv.watch({ signal: controller.signal });
    const done = collect(watch, () => false, 30_000);
    controller.abort();
    expect(await done).toEqual([{ kind: 'ready' }]);
  });
});
