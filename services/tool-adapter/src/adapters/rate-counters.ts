import { throwIfAborted } from '@toolplane/contracts';
import { isDuplicateKeyError, toStoreError, type StoreCollection } from '@toolplane/store';
import type { StoredRateSlot } from '../collections.js';
import type { RateCounterUpdate } from '../core/policy-evaluator.js';
import { windowStartOf, type RateLimitCheck, type RateWindowCounter } from '../core/rate-limit.js';

// Rate-limit counters as insert-only slot records: the n-th call of a counter's window inserts slot n under a
// unique _id. An insert against a unique index is atomic on every MongoDB-protocol server (FerretDB included),
// so of two calls that both saw n-1 slots, exactly one gets slot n; the other re-evaluates.

/** Loads and advances rate-limit counters. */
export class RateCounters {
  readonly #slots: StoreCollection<StoredRateSlot>;

  constructor(slots: StoreCollection<StoredRateSlot>) {
    this.#slots = slots;
  }

  /** The current counter of each check, by key. */
  async load(checks: readonly RateLimitCheck[], nowMs: number, signal?: AbortSignal): Promise<Map<string, RateWindowCounter>> {
    const counters = new Map<string, RateWindowCounter>();
    for (const check of checks) {
      const windowStart = windowStartOf(nowMs, check.windowMs);
      const count = await this.#slots.raw.countDocuments({ key: check.key, windowStart }, signal ? { signal } : {});
      counters.set(check.key, { windowStart, count });
    }
    return counters;
  }

  /** Claims the slot each update counted; false when another call claimed one first (evaluate again). */
  async claim(updates: readonly RateCounterUpdate[], signal?: AbortSignal): Promise<boolean> {
    for (const update of updates) {
      const { windowStart, count } = update.counter;
      throwIfAborted(signal, 'counting the call against its rate limits');
      try {
        await this.#slots.raw.insertOne({ _id: `${update.key}|${windowStart}|${count}`, key: update.key, windowStart, n: count, expiresAt: new Date(windowStart + update.windowMs).toISOString() });
      } catch (error) {
        if (isDuplicateKeyError(error)) return false;
        throw toStoreError(error, 'counting the call against its rate limits', signal);
      }
    }
    return true;
  }

  /** Deletes the slots of windows that have ended (FerretDB has no TTL indexes). */
  async sweep(now: Date, signal?: AbortSignal): Promise<number> {
    throwIfAborted(signal, 'sweeping rate-limit slots');
    const result = await this.#slots.raw.deleteMany({ expiresAt: { $lt: now.toISOString() } });
    return result.deletedCount;
  }
}
