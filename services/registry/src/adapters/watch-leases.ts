import { hasErrorCode, type WatchLease } from '@toolplane/contracts';
import type { TypedKv } from '@toolplane/messaging';

// One lease per server in a KV bucket: created if absent, renewed or taken over with a compare-and-set on the
// entry's revision, so of several replicas racing for a free or lapsed lease exactly one gets it. A lease lapses at
// `expiresAt` (a holder that stops renewing it, or dies, loses it after that).

/** The bucket key of a server's watch lease. */
function leaseKey(serverId: string): string {
  return serverId;
}

function isConflict(error: unknown): boolean {
  return hasErrorCode(error) && error.code === 'CONFLICT';
}

/**
 * Claims or renews the lease on `serverId` for `holder` until `nowMs + ttlMs`. A lease held by another replica and
 * not yet lapsed is refused, and so is one another replica took in the same instant.
 */
export async function claimLease(leases: TypedKv<WatchLease>, serverId: string, holder: string, ttlMs: number, nowMs: number, signal?: AbortSignal): Promise<boolean> {
  const options = signal ? { signal } : {};
  const lease: WatchLease = { holder, expiresAt: nowMs + ttlMs };
  const current = await leases.get(leaseKey(serverId), options);
  try {
    if (current === undefined) await leases.create(leaseKey(serverId), lease, options);
    else if (current.value.holder !== holder && current.value.expiresAt > nowMs) return false;
    else await leases.update(leaseKey(serverId), lease, current.revision, options);
    return true;
  } catch (error) {
    if (isConflict(error)) return false;
    throw error;
  }
}

/** Gives a lease up early (on shutdown), so another replica takes the watch over without waiting for it to lapse. */
export async function releaseLease(leases: TypedKv<WatchLease>, serverId: string, holder: string, signal?: AbortSignal): Promise<void> {
  const options = signal ? { signal } : {};
  const current = await leases.get(leaseKey(serverId), options);
  if (current === undefined || current.value.holder !== holder) return;
  await leases.update(leaseKey(serverId), { holder, expiresAt: 0 }, current.revision, options).catch((error: unknown) => {
    if (!isConflict(error)) throw error;
  });
}
