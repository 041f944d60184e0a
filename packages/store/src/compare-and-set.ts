import type { WithId } from 'mongodb';
import { sleep, throwIfAborted, withDeadline } from '@toolplane/contracts';
import type { Filter } from 'mongodb';
import { casFilter, casUpdate, currentFilter, isPlainWhere, matchesWhere, meetsExpectation, type Transition, type VersionedDocument } from './cas-update.js';
import type { StoreCollection } from './store.js';
import { toStoreError } from './store-error.js';
import { claimTarget, releaseClaim, tryClaim } from './transition-claims.js';

/** The outcome of compareAndSet: the document after the transition, or the document as it is (null if absent). */
export type CasResult<TDoc> = { readonly ok: true; readonly document: WithId<TDoc> } | { readonly ok: false; readonly current: WithId<TDoc> | null };

/** Cancellation and deadline of one compareAndSet. */
export interface CasOptions {
  readonly signal?: AbortSignal;
  /** Overall deadline, including waiting for another writer's claim (default 30 s): TIMEOUT when it passes. */
  readonly timeoutMs?: number;
}

const defaultTimeoutMs = 30_000;

/**
 * Moves a document from the expected version (and state) to the next version in one guarded write.
 * Of concurrent writers with the same expectation exactly one gets `{ ok: true }`; the others get
 * `{ ok: false, current }` with the document as the winner left it. Every write to a document managed this
 * way must go through compareAndSet: on FerretDB 1.x a plain update would bypass the claims that keep writers apart.
 */
export async function compareAndSet<TDoc extends VersionedDocument>(collection: StoreCollection<TDoc>, transition: Transition<TDoc>, options: CasOptions = {}): Promise<CasResult<TDoc>> {
  const what = `compare-and-set on ${collection.name}`;
  // Built (and validated) before anything is sent, so a refused transition writes nothing.
  const filter = casFilter(transition);
  const update = casUpdate(transition);
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  const deadline = Date.now() + timeoutMs;
  const signal = withDeadline(options.signal, timeoutMs);
  throwIfAborted(signal, what);

  // The guarded write itself. Writes are not abandoned half-way on abort: once sent, the server decides,
  // bounded by maxTimeMS, and the caller learns the real outcome.
  const guardedWrite = async (): Promise<CasResult<TDoc>> => {
    const maxTimeMS = Math.max(1, deadline - Date.now());
    const document = await collection.raw.findOneAndUpdate(filter, update, { returnDocument: 'after', maxTimeMS });
    if (document) return { ok: true, document };
    return { ok: false, current: await collection.raw.findOne(currentFilter(transition), { signal }) };
  };

  try {
    if (collection.store.casStrategy === 'atomic') return await guardedWrite();
    const { db, claimLeaseMs } = collection.store;
    const target = claimTarget(collection.name, transition.id, transition.expect.version);
    // FerretDB 1.x (SQLite) uses its primary key only for a filter that is exactly `{ _id }`; any other filter
    // scans the whole collection, so every read and the write itself go by `_id` alone and a plain `where` is
    // checked on the document read. That is as safe as the guarded write: under the claim on this version no
    // other writer may move the document on, and FerretDB's own conditional update is read-then-write by `_id`.
    const byId = isPlainWhere(transition.where);
    const readCurrent = async () => {
      if (!byId) return collection.raw.findOne(currentFilter(transition), { signal });
      const document = await collection.raw.findOne({ _id: transition.id } as Filter<TDoc>, { signal });
      return document !== null && matchesWhere(document, transition.where) ? document : null;
    };
    const claimedWrite = async (): Promise<CasResult<TDoc>> => {
      if (!byId) return guardedWrite();
      const current = await readCurrent();
      if (!current || !meetsExpectation(current, transition)) return { ok: false, current };
      const maxTimeMS = Math.max(1, deadline - Date.now());
      const document = await collection.raw.findOneAndUpdate({ _id: transition.id } as Filter<TDoc>, update, { returnDocument: 'after', maxTimeMS });
      return document ? { ok: true, document } : { ok: false, current: null };
    };
    for (let attempt = 0; ; attempt += 1) {
      // Most losers are settled here: the winner has already moved the document on.
      const current = await readCurrent();
      if (!current || !meetsExpectation(current, transition)) return { ok: false, current };
      const claim = await tryClaim(db, target, claimLeaseMs, Date.now(), signal);
      if (claim) {
        try {
          // A lease that ran out while claiming may already have been taken over: do not write under it.
          if (Date.now() < claim.expiresAt) return await claimedWrite();
        } finally {
          await releaseClaim(db, claim);
        }
      }
      // Another writer holds the claim on this version and is about to move the document on.
      await sleep(Math.min(50, 2 ** Math.min(attempt, 5)) + Math.random() * 3, signal, what);
    }
  } catch (error) {
    throw toStoreError(error, what, signal);
  }
}
