import { sleep, throwIfAborted, ToolplaneError, withDeadline } from '@toolplane/contracts';
import { BSON, type AnyBulkWriteOperation, type Collection, type Document, type Filter, type WithId } from 'mongodb';
import { casFilter, casUpdate, isOperatorValue, matchesWhere, meetsExpectation, type Transition, type VersionedDocument } from './cas-update.js';
import { compareAndSet, type CasOptions, type CasResult } from './compare-and-set.js';
import type { StoreCollection } from './store.js';
import { isDuplicateKeyError, toStoreError } from './store-error.js';
import { claimTarget, transitionClaimsCollection } from './transition-claims.js';

/** Options of compareAndSetMany: those of compareAndSet, plus how many single-document reads run at once. */
export interface CasManyOptions extends CasOptions {
  /** Parallel point reads on servers without usable secondary lookups (FerretDB); default 4. */
  readonly readConcurrency?: number;
  /** Strategy `claim`: documents claimed, read and written together; a claim's lease must cover one chunk. Default 50. */
  readonly chunkSize?: number;
}

interface ClaimDocument {
  _id: string;
  target: string;
  generation: number;
  expiresAt: Date;
}

interface Pending<TDoc extends VersionedDocument> {
  readonly index: number;
  readonly transition: Transition<TDoc>;
  readonly update: Document;
  readonly target: string;
}

const defaultTimeoutMs = 30_000;
const atomicConcurrency = 16;

/**
 * compareAndSet for many documents at once, with the same outcome per transition as compareAndSet would give
 * (results in input order). On servers with atomic conditional updates each transition is one guarded
 * findOneAndUpdate. With strategy `claim` (FerretDB 1.x) it takes part in the same claim protocol as
 * compareAndSet, batched: the claims of all transitions are inserted with one unordered insert, each claimed
 * document is read and its expectation checked while the claim is held, and the writes go out as one
 * unordered bulk write; only the holder of a version's claim ever writes that version, so a document guarded by
 * compareAndSet may be moved on by either function. The ids must be distinct, and `where` may hold plain
 * equality conditions only (they are checked on the document read under the claim).
 */
export async function compareAndSetMany<TDoc extends VersionedDocument>(
  collection: StoreCollection<TDoc>,
  transitions: readonly Transition<TDoc>[],
  options: CasManyOptions = {},
): Promise<CasResult<TDoc>[]> {
  const what = `compare-and-set of ${transitions.length} documents in ${collection.name}`;
  // Built (and validated) before anything is sent, so a refused transition writes nothing.
  const pending: Pending<TDoc>[] = transitions.map((transition, index) => {
    casFilter(transition);
    for (const [field, value] of Object.entries(transition.where ?? {})) {
      if (isOperatorValue(value)) throw new ToolplaneError('INVALID_ARGUMENT', `${what}: where.${field} must be a plain value (compareAndSetMany checks equality only)`);
    }
    return { index, transition, update: casUpdate(transition), target: claimTarget(collection.name, transition.id, transition.expect.version) };
  });
  const ids = new Set(pending.map((entry) => BSON.EJSON.stringify({ id: entry.transition.id }, { relaxed: false })));
  if (ids.size !== pending.length) throw new ToolplaneError('INVALID_ARGUMENT', `${what}: the same document appears twice`);
  if (pending.length === 0) return [];
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  const signal = withDeadline(options.signal, timeoutMs);
  throwIfAborted(signal, what);
  if (collection.store.casStrategy === 'atomic') {
    const results: CasResult<TDoc>[] = new Array<CasResult<TDoc>>(transitions.length);
    await forEachLimited(transitions, atomicConcurrency, async (transition, index) => {
      results[index] = await compareAndSet(collection, transition, { signal, timeoutMs });
    });
    return results;
  }
  try {
    return await claimAndWrite(collection, pending, { readConcurrency: options.readConcurrency ?? 4, chunkSize: options.chunkSize ?? 50 }, signal, what);
  } catch (error) {
    throw toStoreError(error, what, signal);
  }
}

async function claimAndWrite<TDoc extends VersionedDocument>(
  collection: StoreCollection<TDoc>,
  all: readonly Pending<TDoc>[],
  options: { readonly readConcurrency: number; readonly chunkSize: number },
  signal: AbortSignal,
  what: string,
): Promise<CasResult<TDoc>[]> {
  const results: CasResult<TDoc>[] = new Array<CasResult<TDoc>>(all.length);
  let pending = all;
  for (let attempt = 0; ; attempt += 1) {
    throwIfAborted(signal, what);
    const busy: Pending<TDoc>[] = [];
    // Chunk by chunk: a claim's lease only has to outlast the reads and the write of its own chunk.
    for (let start = 0; start < pending.length; start += options.chunkSize) {
      busy.push(...(await claimReadWrite(collection, pending.slice(start, start + options.chunkSize), results, options.readConcurrency, signal)));
    }
    pending = busy;
    if (pending.length === 0) return results;
    await sleep(Math.min(50, 2 ** Math.min(attempt, 5)) + Math.random() * 3, signal, what);
  }
}

/** Claims, reads and writes one chunk; returns the transitions whose version another writer holds. */
async function claimReadWrite<TDoc extends VersionedDocument>(
  collection: StoreCollection<TDoc>,
  chunk: readonly Pending<TDoc>[],
  results: CasResult<TDoc>[],
  readConcurrency: number,
  signal: AbortSignal,
): Promise<Pending<TDoc>[]> {
  const { db, claimLeaseMs } = collection.store;
  const claims = db.collection<ClaimDocument>(transitionClaimsCollection);
  const held = await claimAll(claims, chunk, claimLeaseMs, signal);
  const busy: Pending<TDoc>[] = [];
  try {
    const current = await readAll(collection, chunk, readConcurrency, signal);
    const writable: { entry: Pending<TDoc>; document: WithId<TDoc> }[] = [];
    // A lease that ran out while claiming and reading may already have been taken over: do not write under it.
    const now = Date.now();
    for (const entry of chunk) {
      const document = current.get(entry.index) ?? null;
      const claim = held.get(entry.target);
      if (document === null || !meetsExpectation(document, entry.transition)) {
        // Settled like compareAndSet's losers: the document has moved on (or is gone, or outside `where`).
        results[entry.index] = { ok: false, current: document };
      } else if (claim !== undefined && claim.expiresAt > now) {
        writable.push({ entry, document });
      } else {
        // Another writer holds this version's claim and is about to move the document on (or ours ran out).
        busy.push(entry);
      }
    }
    if (writable.length > 0) await writeClaimed(collection, writable, results, readConcurrency, signal);
  } finally {
    await releaseAll(claims, [...held.values()].map((claim) => claim.id));
  }
  return busy;
}

async function writeClaimed<TDoc extends VersionedDocument>(
  collection: StoreCollection<TDoc>,
  writable: readonly { entry: Pending<TDoc>; document: WithId<TDoc> }[],
  results: CasResult<TDoc>[],
  readConcurrency: number,
  signal: AbortSignal,
): Promise<void> {
  // The expectation was checked on a read made while the claim was held, and only a claim holder moves a
  // version on: filtering by `_id` alone is what the guarded filter amounts to on a server that reads before it
  // writes anyway, and it keeps FerretDB on its `_id` lookup instead of a scan of the collection.
  const operations = writable.map(({ entry }) => ({ updateOne: { filter: { _id: entry.transition.id }, update: entry.update } })) as unknown as AnyBulkWriteOperation<TDoc>[];
  const outcome = await collection.raw.bulkWrite(operations, { ordered: false });
  if (outcome.matchedCount === writable.length) {
    for (const { entry, document } of writable) results[entry.index] = { ok: true, document: applyUpdate(document, entry.update) };
    return;
  }
  // A document vanished between the read and the write: find out which by reading them again.
  const after = await readAll(collection, writable.map(({ entry }) => entry), readConcurrency, signal);
  for (const { entry, document } of writable) {
    const now = after.get(entry.index) ?? null;
    results[entry.index] = now !== null && now.version === document.version + 1 ? { ok: true, document: now } : { ok: false, current: now };
  }
}

interface HeldClaim {
  readonly id: string;
  /** Epoch milliseconds after which other writers may take over. */
  readonly expiresAt: number;
}

/** Inserts, all at once, the claims of every pending transition whose version nobody holds a live claim on; returns those now held, by target. */
async function claimAll<TDoc extends VersionedDocument>(
  claims: Collection<ClaimDocument>,
  pending: readonly Pending<TDoc>[],
  leaseMs: number,
  signal: AbortSignal,
): Promise<Map<string, HeldClaim>> {
  const targets = pending.map((entry) => entry.target);
  const existing = await claims.find({ target: { $in: targets } }, { signal }).toArray();
  const latest = new Map<string, ClaimDocument>();
  for (const claim of existing) {
    const seen = latest.get(claim.target);
    if (!seen || claim.generation > seen.generation) latest.set(claim.target, claim);
  }
  const now = Date.now();
  const wanted: ClaimDocument[] = [];
  for (const target of targets) {
    const last = latest.get(target);
    // Clocks are compared across replicas here, as compareAndSet does: leases are far longer than the skew.
    if (last && last.expiresAt.getTime() > now) continue;
    const generation = last ? last.generation + 1 : 0;
    wanted.push({ _id: `${target}#${generation}`, target, generation, expiresAt: new Date(now + leaseMs) });
  }
  const held = new Map<string, HeldClaim>();
  if (wanted.length === 0) return held;
  const refused = new Set<number>();
  try {
    await claims.insertMany(wanted, { ordered: false });
  } catch (error) {
    // Another writer inserted the same generation first: that claim is theirs.
    for (const index of duplicateIndexes(error)) refused.add(index);
  }
  wanted.forEach((claim, index) => {
    if (!refused.has(index)) held.set(claim.target, { id: claim._id, expiresAt: claim.expiresAt.getTime() });
  });
  return held;
}

/** Gives the claims back; best effort, as in compareAndSet: a claim left behind only delays others until it expires. */
async function releaseAll(claims: Collection<ClaimDocument>, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  try {
    await claims.deleteMany({ _id: { $in: [...ids] } });
  } catch {
    // The transitions' own outcomes are already decided; failing them now would misreport them.
  }
}

/** Reads the documents of the pending transitions, by index; a document outside a transition's `where` reads as null. */
async function readAll<TDoc extends VersionedDocument>(
  collection: StoreCollection<TDoc>,
  pending: readonly Pending<TDoc>[],
  concurrency: number,
  signal: AbortSignal,
): Promise<Map<number, WithId<TDoc> | null>> {
  const documents = await findByIds(collection, pending.map((entry) => entry.transition.id), { concurrency, signal });
  const found = new Map<number, WithId<TDoc> | null>();
  pending.forEach((entry, i) => {
    const document = documents[i] ?? null;
    found.set(entry.index, document !== null && matchesWhere(document, entry.transition.where) ? document : null);
  });
  return found;
}

/**
 * Reads documents by `_id`, in the order of `ids` (null for a missing one): one `$in` query on MongoDB, and
 * single-document reads on FerretDB 1.x, which looks a document up by `_id` only when the filter is exactly
 * `{ _id: value }` and scans the whole collection for anything else, `$in` included.
 */
export async function findByIds<TDoc extends Document>(
  collection: StoreCollection<TDoc>,
  ids: readonly unknown[],
  options: { readonly concurrency?: number; readonly signal?: AbortSignal } = {},
): Promise<(WithId<TDoc> | null)[]> {
  const { signal } = options;
  const what = `reading ${ids.length} documents of ${collection.name}`;
  try {
    if (collection.store.capabilities.server === 'mongodb') {
      const documents = await collection.raw.find({ _id: { $in: [...ids] } } as Filter<TDoc>, { signal }).toArray();
      const byId = new Map(documents.map((document) => [idKey(document._id), document]));
      return ids.map((id) => byId.get(idKey(id)) ?? null);
    }
    const found: (WithId<TDoc> | null)[] = ids.map(() => null);
    await forEachLimited(ids, options.concurrency ?? 4, async (id, index) => {
      found[index] = await collection.raw.findOne({ _id: id } as Filter<TDoc>, { signal });
    });
    return found;
  } catch (error) {
    throw toStoreError(error, what, signal);
  }
}

function idKey(id: unknown): string {
  return BSON.EJSON.stringify({ id }, { relaxed: false });
}

/** The document as the update leaves it: `$set`, `$unset` and `$inc` of top-level fields, as casUpdate builds them. */
function applyUpdate<TDoc extends VersionedDocument>(document: WithId<TDoc>, update: Document): WithId<TDoc> {
  const next: Document = { ...document };
  for (const [field, value] of Object.entries((update['$set'] ?? {}) as Record<string, unknown>)) {
    // The client is created with ignoreUndefined: an undefined value is not written.
    if (value !== undefined) next[field] = value;
  }
  for (const field of Object.keys((update['$unset'] ?? {}) as Document)) delete next[field];
  for (const [field, amount] of Object.entries((update['$inc'] ?? {}) as Record<string, number>)) next[field] = ((next[field] as number | undefined) ?? 0) + amount;
  return next as WithId<TDoc>;
}

/** The indexes of the documents an unordered insert refused as duplicates; any other failure is rethrown. */
export function duplicateIndexes(error: unknown): number[] {
  const writeErrors = (error as { writeErrors?: unknown }).writeErrors;
  const list = Array.isArray(writeErrors) ? (writeErrors as { index?: unknown; code?: unknown }[]) : [];
  if (list.length === 0 || list.some((entry) => !isDuplicateKeyError({ code: entry.code }) || typeof entry.index !== 'number')) throw error;
  return list.map((entry) => entry.index as number);
}

/** Runs `work` over the items with at most `limit` in flight; the first failure rejects once all started work settled. */
export async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const index = next;
      next += 1;
      try {
        await work(items[index] as T, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failure !== undefined) throw failure.error;
}
