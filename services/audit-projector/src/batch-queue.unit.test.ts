import { describe, expect, it } from 'vitest';
import { ToolplaneError, hasErrorCode } from '@toolplane/contracts';
import { BatchQueue } from './batch-queue.js';

interface Item {
  readonly group: string;
  readonly n: number;
}

function queue(
  options: { maxItems?: number; lingerMs?: number; fail?: (items: readonly Item[]) => boolean; ready?: (items: readonly Item[]) => boolean; holdMs?: number; maxHeld?: number } = {},
) {
  const batches: Item[][] = [];
  const q = new BatchQueue<Item>({
    maxItems: options.maxItems ?? 100,
    lingerMs: options.lingerMs ?? 5,
    groupOf: (item) => item.group,
    isolate: (error) => !(hasErrorCode(error) && error.retryable),
    ...(options.ready ? { ready: options.ready } : {}),
    ...(options.holdMs === undefined ? {} : { holdMs: options.holdMs }),
    ...(options.maxHeld === undefined ? {} : { maxHeld: options.maxHeld }),
    write: (items) => {
      batches.push([...items]);
      if (options.fail?.(items)) return Promise.reject(new ToolplaneError('INTERNAL', 'bad group'));
      return Promise.resolve();
    },
  });
  return { q, batches };
}

const settle = (promise: Promise<void>) => promise.then(() => 'ok', (error: unknown) => (hasErrorCode(error) ? error.code : 'unknown'));

describe('BatchQueue', () => {
  it('writes items in batches of at most the limit, one batch at a time, resolving each item once its batch is written', async () => {
    const { q, batches } = queue({ maxItems: 3 });
    const items = Array.from({ length: 7 }, (_, n) => ({ group: `g${n}`, n }));
    expect(await Promise.all(items.map((item) => settle(q.add(item))))).toEqual(items.map(() => 'ok'));
    expect(batches.map((batch) => batch.map((item) => item.n))).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
  });

  it('keeps a group in one batch when the rest of it is already waiting', async () => {
    const { q, batches } = queue({ maxItems: 2 });
    const items = [
      { group: 'a', n: 0 },
      { group: 'b', n: 1 },
      { group: 'c', n: 2 },
      { group: 'a', n: 3 },
      { group: 'b', n: 4 },
    ];
    await Promise.all(items.map((item) => q.add(item)));
    // Whole groups, oldest first, up to the limit: a and its later item, then b and its later item, then c.
    expect(batches.map((batch) => batch.map((item) => item.n))).toEqual([[0, 3], [1, 4], [2]]);
  });

  it('retries a failed batch group by group, failing only the group that fails again', async () => {
    const { q } = queue({ fail: (items) => items.some((item) => item.group === 'bad') });
    const outcomes = await Promise.all([q.add({ group: 'good', n: 0 }), q.add({ group: 'bad', n: 1 }), q.add({ group: 'other', n: 2 })].map(settle));
    expect(outcomes).toEqual(['ok', 'INTERNAL', 'ok']);
  });

  it('hands waiting items back with CANCELLED when their signal aborts, and refuses items once closed', async () => {
    const { q, batches } = queue({ lingerMs: 60_000 });
    const controller = new AbortController();
    const waiting = settle(q.add({ group: 'a', n: 0 }, controller.signal));
    controller.abort();
    expect(await waiting).toBe('CANCELLED');
    expect(q.size).toBe(0);
    const other = settle(q.add({ group: 'b', n: 1 }));
    await q.close(new ToolplaneError('CANCELLED', 'stopping'));
    expect(await other).toBe('CANCELLED');
    expect(await settle(q.add({ group: 'c', n: 2 }))).toBe('CANCELLED');
    expect(batches).toEqual([]);
  });

  // Group `a` is ready once it has two items (a call once it has settled); every other group at once.
  const pairs = (items: readonly Item[]) => items[0]?.group !== 'a' || items.length >= 2;

  it('holds a group that is not ready while others are written, and writes it whole once it is', async () => {
    const { q, batches } = queue({ ready: pairs, holdMs: 60_000 });
    const first = q.add({ group: 'a', n: 0 });
    await q.add({ group: 'b', n: 1 });
    expect(batches.map((batch) => batch.map((item) => item.n))).toEqual([[1]]);
    await Promise.all([first, q.add({ group: 'a', n: 2 })]);
    expect(batches.map((batch) => batch.map((item) => item.n))).toEqual([[1], [0, 2]]);
  });

  it('writes a group that is not ready once its hold has run out', async () => {
    const { q, batches } = queue({ ready: pairs, holdMs: 30 });
    const started = performance.now();
    await q.add({ group: 'a', n: 0 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    expect(batches.map((batch) => batch.map((item) => item.n))).toEqual([[0]]);
  });

  it('writes the oldest held groups when more items than maxHeld are held', async () => {
    const { q, batches } = queue({ ready: () => false, holdMs: 60_000, maxHeld: 2 });
    const adds = [q.add({ group: 'x', n: 0 }), q.add({ group: 'y', n: 1 }), q.add({ group: 'z', n: 2 })];
    await adds[0];
    expect(batches[0]?.map((item) => item.n)).toEqual([0]);
    await q.close(new ToolplaneError('CANCELLED', 'stopping'));
    expect(await Promise.all(adds.slice(1).map(settle))).toEqual(['CANCELLED', 'CANCELLED']);
  });
});
