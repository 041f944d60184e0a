import { describe, expect, it } from 'vitest';
import { ToolplaneError, hasErrorCode } from '@toolplane/contracts';
import { BatchQueue } from './batch-queue.js';

interface Item {
  readonly group: string;
  readonly n: number;
}

function queue(options: { maxItems?: number; lingerMs?: number; fail?: (items: readonly Item[]) => boolean } = {}) {
  const batches: Item[][] = [];
  const q = new BatchQueue<Item>({
    maxItems: options.maxItems ?? 100,
    lingerMs: options.lingerMs ?? 5,
    groupOf: (item) => item.group,
    isolate: (error) => !(hasErrorCode(error) && error.retryable),
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
    expect(batches.map((batch) => batch.map((item) => item.n))).toEqual([[0, 1, 3, 4], [2]]);
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
});
