import { compareAndSet, insertIfAbsent, type StoreCollection } from '@toolplane/store';
import type { WatchLease } from '../collections.js';

/**
 * Claims or renews the lease `id` for `holder` until `nowMs + ttlMs`. Exactly one of several replicas racing for a
 * free or lapsed lease gets it (an insert against the unique `_id`, then compare-and-set on the lease's version);
 * a lease held by another replica and not yet lapsed is refused.
 */
export async function claimLease(collection: StoreCollection<WatchLease>, id: string, holder: string, ttlMs: number, nowMs: number, signal?: AbortSignal): Promise<boolean> {
  const expiresAt = nowMs + ttlMs;
  let current = await collection.raw.findOne({ _id: id }, { signal });
  if (current === null) {
    const inserted = await insertIfAbsent(collection, { _id: id, holder, expiresAt, version: 1 }, signal ? { signal } : {});
    if (inserted.created) return true;
    current = inserted.existing;
  }
  if (current.holder !== holder && current.expiresAt > nowMs) return false;
  const renewed = await compareAndSet(collection, { id, expect: { version: current.version }, set: { holder, expiresAt } }, signal ? { signal } : {});
  return renewed.ok;
}

/** Gives a lease up early (on shutdown), so another replica takes the watch over without waiting for it to lapse. */
export async function releaseLease(collection: StoreCollection<WatchLease>, id: string, holder: string, signal?: AbortSignal): Promise<void> {
  const current = await collection.raw.findOne({ _id: id }, { signal });
  if (current === null || current.holder !== holder) return;
  await compareAndSet(collection, { id, expect: { version: current.version }, set: { expiresAt: 0 } }, signal ? { signal } : {});
}
