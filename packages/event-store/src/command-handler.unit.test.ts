import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasErrorCode, ToolplaneError } from '@toolplane/contracts';
import { handleCommand, handlePreparedCommand } from './command-handler.js';
import type { Decider } from './decider.js';
import { isVersionConflict, type EventStore } from './event-store.js';
import { inMemoryEventStore } from './in-memory-event-store.js';

// A counter that may not pass its limit: small enough to reason about, with a rule a lost race could break.
type Counted = { readonly type: 'Counted'; readonly data: { readonly by: number } };
type Count = { readonly type: 'Count'; readonly data: { readonly by: number; readonly limit: number } };
const counter: Decider<number, Count, Counted> = {
  decide: (command, state) => {
    if (state + command.data.by > command.data.limit) throw new ToolplaneError('CONFLICT', 'over the limit');
    return command.data.by === 0 ? [] : [{ type: 'Counted', data: { by: command.data.by } }];
  },
  evolve: (state, event) => state + event.data.by,
  initialState: () => 0,
};
const count = (by: number, limit = 100): Count => ({ type: 'Count', data: { by, limit } });

describe('handleCommand', () => {
  it('appends what was decided at the version it read, and returns the new state and version', async () => {
    const store = inMemoryEventStore<Counted>();
    const first = await handleCommand(store, counter, 'c-1', count(2));
    const second = await handleCommand(store, counter, 'c-1', count(3));
    expect(first.newState).toBe(2);
    expect(second.newState).toBe(5);
    expect(second.nextExpectedVersion).toBeGreaterThan(first.nextExpectedVersion);
    expect((await store.readStream('c-1')).events).toEqual([
      { type: 'Counted', data: { by: 2 } },
      { type: 'Counted', data: { by: 3 } },
    ]);
  });

  it('appends nothing when the decision is to do nothing', async () => {
    const store = inMemoryEventStore<Counted>();
    const handled = await handleCommand(store, counter, 'c-1', count(0));
    expect(handled).toEqual({ newEvents: [], newState: 0, nextExpectedVersion: 0 });
    expect(store.streams().size).toBe(0);
  });

  it('lets a refusal through unchanged and stores nothing', async () => {
    const store = inMemoryEventStore<Counted>();
    await expect(handleCommand(store, counter, 'c-1', count(5, 4))).rejects.toMatchObject({ code: 'CONFLICT', message: 'over the limit' });
    expect(store.streams().size).toBe(0);
  });

  it('decides again against what won when another writer appended first', async () => {
    const inner = inMemoryEventStore<Counted>();
    let raced = false;
    // The first append finds that another writer took the stream to 9 since it was read.
    const racing: EventStore<Counted> = {
      readStream: (id, options) => inner.readStream(id, options),
      appendToStream: async (id, events, options) => {
        if (!raced) {
          raced = true;
          await inner.appendToStream(id, [{ type: 'Counted', data: { by: 9 } }], { expectedVersion: options.expectedVersion });
        }
        return inner.appendToStream(id, events, options);
      },
    };
    await expect(handleCommand(racing, counter, 'c-1', count(2, 10))).rejects.toMatchObject({ message: 'over the limit' });
    expect((await inner.readStream('c-1')).events).toEqual([{ type: 'Counted', data: { by: 9 } }]);
  });

  it('prepares a command from the state again after a lost race', async () => {
    const inner = inMemoryEventStore<Counted>();
    let raced = false;
    const racing: EventStore<Counted> = {
      readStream: (id, options) => inner.readStream(id, options),
      appendToStream: async (id, events, options) => {
        if (!raced) {
          raced = true;
          await inner.appendToStream(id, [{ type: 'Counted', data: { by: 5 } }], { expectedVersion: options.expectedVersion });
        }
        return inner.appendToStream(id, events, options);
      },
    };
    const seen: number[] = [];
    // Doubles whatever the count is when decided: prepared against 0 first, then against the 5 that won.
    const handled = await handlePreparedCommand(racing, counter, 'c-1', (state: number) => {
      seen.push(state);
      return count(state === 0 ? 1 : state);
    });
    expect(seen).toEqual([0, 5]);
    expect(handled.newState).toBe(10);
  });

  it('gives up as retryable when the stream keeps moving', async () => {
    const inner = inMemoryEventStore<Counted>();
    const restless: EventStore<Counted> = {
      readStream: (id, options) => inner.readStream(id, options),
      appendToStream: async (id, events, options) => {
        await inner.appendToStream(id, [{ type: 'Counted', data: { by: 0 } }], { expectedVersion: options.expectedVersion });
        return inner.appendToStream(id, events, options);
      },
    };
    const failure = await handleCommand(restless, counter, 'c-1', count(1), { maxAttempts: 3 }).catch((error: unknown) => error);
    expect(hasErrorCode(failure) && failure.code).toBe('TEMPORARY_UNAVAILABLE');
    expect((await inner.readStream('c-1')).events).toHaveLength(3);
  });

  it('never passes the limit however concurrent commands interleave (every race decided again)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 20 }), fc.integer({ min: 1, max: 30 }), async (increments, limit) => {
        const store = inMemoryEventStore<Counted>();
        const results = await Promise.allSettled(increments.map((by) => handleCommand(store, counter, 'c', count(by, limit), { maxAttempts: 50 })));
        const total = (await store.readStream('c')).events.reduce((sum, event) => sum + event.data.by, 0);
        const admitted = results.flatMap((result, i) => (result.status === 'fulfilled' ? [increments[i] ?? 0] : []));
        expect(total).toBeLessThanOrEqual(limit);
        expect(total).toBe(admitted.reduce((sum, by) => sum + by, 0));
      }),
    );
  });
});

describe('inMemoryEventStore', () => {
  it('refuses a stale expected version as a version conflict and keeps what was stored', async () => {
    const store = inMemoryEventStore<Counted>();
    const { nextExpectedVersion } = await store.appendToStream('s', [{ type: 'Counted', data: { by: 1 } }], { expectedVersion: 0 });
    const stale = await store.appendToStream('s', [{ type: 'Counted', data: { by: 2 } }], { expectedVersion: 0 }).catch((error: unknown) => error);
    expect(isVersionConflict(stale)).toBe(true);
    expect(await store.readStream('s')).toEqual({ events: [{ type: 'Counted', data: { by: 1 } }], version: nextExpectedVersion });
  });

  it('reads only what came after a version', async () => {
    const store = inMemoryEventStore<Counted>();
    const first = await store.appendToStream('s', [{ type: 'Counted', data: { by: 1 } }], { expectedVersion: 0 });
    await store.appendToStream('s', [{ type: 'Counted', data: { by: 2 } }], { expectedVersion: first.nextExpectedVersion });
    expect((await store.readStream('s', { afterVersion: first.nextExpectedVersion })).events).toEqual([{ type: 'Counted', data: { by: 2 } }]);
  });
});
