import { hasErrorCode } from '@toolplane/contracts';
import { testScope } from '@toolplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeFixture } from '../test/store-fixture.js';
import { compareAndSet } from './compare-and-set.js';
import { compareAndSetMany } from './compare-and-set-many.js';
import { defineCollection } from './define-collection.js';
import { insertInOrder, insertManyIfAbsent } from './insert-many.js';
import type { CasStrategy, Store, StoreCollection } from './store.js';
import { claimTarget, tryClaim } from './transition-claims.js';

const scope = testScope('store_cas_many');
const fixture = storeFixture(scope);
afterAll(() => fixture.dispose());

interface Counter {
  _id: string;
  version: number;
  state: 'Open' | 'Closed';
  tenant: string;
  counter: number;
  winner?: number;
  note?: string;
}

const counters = defineCollection<Counter>({ name: 'counters', indexes: [] });
let sequence = 0;

async function seed(collection: StoreCollection<Counter>, count: number, fields: Partial<Counter> = {}): Promise<Counter[]> {
  const documents = Array.from({ length: count }, () => {
    sequence += 1;
    return { _id: `c-${sequence}`, version: 1, state: 'Open' as const, tenant: 't1', counter: 0, ...fields };
  });
  await collection.raw.insertMany(documents.map((document) => ({ ...document })));
  return documents;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (hasErrorCode(error)) return error.code;
    throw error;
  }
  throw new Error('expected a failure');
}

describe.each<[CasStrategy | 'auto']>([['auto'], ['claim']])('compareAndSetMany (casStrategy %s)', (casStrategy) => {
  let replicas: Store[];
  let collections: StoreCollection<Counter>[];
  let collection: StoreCollection<Counter>;
  beforeAll(async () => {
    replicas = await fixture.replicas(4, { casStrategy });
    collections = replicas.map((replica) => replica.collection(counters));
    collection = collections[0] as StoreCollection<Counter>;
  });

  it('applies every transition, in input order, each incrementing its version by one', async () => {
    const documents = await seed(collection, 5);
    const results = await compareAndSetMany(
      collection,
      documents.map((document, i) => ({ id: document._id, expect: { version: 1, state: 'Open' as const }, set: { state: 'Closed' as const, note: `n${i}` }, inc: { counter: i } })),
    );
    expect(results).toEqual(documents.map((document, i) => ({ ok: true, document: { ...document, version: 2, state: 'Closed', note: `n${i}`, counter: i } })));
    for (const [i, document] of documents.entries()) {
      expect(await collection.raw.findOne({ _id: document._id })).toEqual({ ...document, version: 2, state: 'Closed', note: `n${i}`, counter: i });
    }
  });

  it('settles stale, missing and out-of-scope transitions like compareAndSet, writing the others', async () => {
    const [fresh, stale, scoped] = (await seed(collection, 3)) as [Counter, Counter, Counter];
    const results = await compareAndSetMany(collection, [
      { id: fresh._id, expect: { version: 1 }, set: { note: 'written' } },
      { id: stale._id, expect: { version: 7 }, set: { note: 'never' } },
      { id: 'missing', expect: { version: 1 }, set: { note: 'never' } },
      { id: scoped._id, expect: { version: 1 }, where: { tenant: 't2' }, set: { note: 'never' } },
    ]);
    expect(results).toEqual([
      { ok: true, document: { ...fresh, version: 2, note: 'written' } },
      { ok: false, current: stale },
      { ok: false, current: null },
      { ok: false, current: null },
    ]);
    expect(await collection.raw.findOne({ _id: stale._id })).toEqual(stale);
    expect(await collection.raw.findOne({ _id: scoped._id })).toEqual(scoped);
  });

  it('unsets fields and refuses an unstorable change or a repeated id before writing anything', async () => {
    const [a, b] = (await seed(collection, 2, { note: 'x' })) as [Counter, Counter];
    const results = await compareAndSetMany(collection, [{ id: a._id, expect: { version: 1 }, unset: ['note'] }]);
    expect(results[0]?.ok && results[0].document.note).toBeUndefined();
    expect(await collection.raw.findOne({ _id: a._id })).not.toHaveProperty('note');
    expect(
      await codeOf(
        compareAndSetMany(collection, [
          { id: b._id, expect: { version: 1 }, set: { note: 'fine' } },
          { id: a._id, expect: { version: 2 }, set: { note: { $where: 'x' } as unknown as string } },
        ]),
      ),
    ).toBe('INVALID_ARGUMENT');
    expect(await codeOf(compareAndSetMany(collection, [{ id: b._id, expect: { version: 1 } }, { id: b._id, expect: { version: 1 } }]))).toBe('INVALID_ARGUMENT');
    expect(await collection.raw.findOne({ _id: b._id })).toEqual(b);
  });

  it('lets exactly one writer win each document when batches and single compareAndSets race on the same expectations', async () => {
    for (let round = 0; round < 5; round += 1) {
      const documents = await seed(collection, 6);
      const transitions = (writer: number) => documents.map((document) => ({ id: document._id, expect: { version: 1, state: 'Open' as const }, set: { state: 'Closed' as const, winner: writer } }));
      const batchResults = await Promise.all([
        ...collections.map((mine, writer) => compareAndSetMany(mine, transitions(writer))),
        ...documents.map((document) => compareAndSet(collection, { id: document._id, expect: { version: 1, state: 'Open' }, set: { state: 'Closed', winner: 99 } }).then((result) => [result])),
      ]);
      for (const document of documents) {
        const stored = await collection.raw.findOne({ _id: document._id });
        expect(stored?.version).toBe(2);
        const outcomes = batchResults.flat().filter((result) => (result.ok ? result.document._id : result.current?._id) === document._id);
        const winners = outcomes.filter((result) => result.ok);
        expect(winners).toHaveLength(1);
        expect(stored).toEqual((winners[0] as { document: Counter }).document);
      }
    }
  });

  it('loses no increment when replicas read, modify and write overlapping batches in a loop', async () => {
    const documents = await seed(collection, 4);
    const rounds = 3;
    await Promise.all(
      collections.map(async (mine) => {
        let remaining = new Map(documents.map((document) => [document._id, rounds]));
        while (remaining.size > 0) {
          const ids = [...remaining.keys()];
          const current = await Promise.all(ids.map((id) => mine.raw.findOne({ _id: id })));
          const results = await compareAndSetMany(
            mine,
            current.map((document) => ({ id: (document as Counter)._id, expect: { version: (document as Counter).version }, set: { counter: (document as Counter).counter + 1 } })),
            // Small chunks: claims, reads and writes go chunk by chunk.
            { chunkSize: 2 },
          );
          const next = new Map(remaining);
          results.forEach((result, i) => {
            const id = ids[i] as string;
            if (!result.ok) return;
            const left = (next.get(id) ?? 0) - 1;
            if (left === 0) next.delete(id);
            else next.set(id, left);
          });
          remaining = next;
        }
      }),
    );
    for (const document of documents) {
      const stored = await collection.raw.findOne({ _id: document._id });
      expect(stored?.counter).toBe(collections.length * rounds);
      expect(stored?.version).toBe(1 + collections.length * rounds);
    }
  });
});

describe('compareAndSetMany claims', () => {
  const leaseMs = 400;
  let store: Store;
  let collection: StoreCollection<Counter>;
  beforeAll(async () => {
    store = await fixture.open({ casStrategy: 'claim', claimLeaseMs: leaseMs });
    collection = store.collection(counters);
  });

  it('waits out the lease of a writer that died holding a claim, writing the unclaimed documents meanwhile', async () => {
    const [claimed, free] = (await seed(collection, 2)) as [Counter, Counter];
    await tryClaim(store.db, claimTarget('counters', claimed._id, 1), leaseMs, Date.now());
    const started = Date.now();
    const results = await compareAndSetMany(collection, [
      { id: claimed._id, expect: { version: 1 }, set: { note: 'late' } },
      { id: free._id, expect: { version: 1 }, set: { note: 'early' } },
    ]);
    expect(results.map((result) => result.ok)).toEqual([true, true]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(leaseMs - 50);
    expect(await store.db.collection('store_transition_claims').countDocuments({ target: claimTarget('counters', free._id, 1) })).toBe(0);
  });

  it('fails with TIMEOUT when a live claim outlasts the deadline, leaving that document untouched', async () => {
    const [claimed] = (await seed(collection, 1)) as [Counter];
    await tryClaim(store.db, claimTarget('counters', claimed._id, 1), 60_000, Date.now());
    expect(await codeOf(compareAndSetMany(collection, [{ id: claimed._id, expect: { version: 1 }, set: { note: 'never' } }], { timeoutMs: 200 }))).toBe('TIMEOUT');
    expect(await collection.raw.findOne({ _id: claimed._id })).toEqual(claimed);
  });
});

describe('insertManyIfAbsent and insertInOrder', () => {
  interface Entry {
    _id: string;
    position: number;
  }
  const entries = defineCollection<Entry>({ name: 'entries', indexes: [{ name: 'position', key: { position: 1 }, unique: true }] });
  let replicas: Store[];
  beforeAll(async () => {
    replicas = await fixture.replicas(3);
    await replicas[0]?.db.collection('entries').createIndex({ position: 1 }, { unique: true, name: 'position' });
  });

  it('stores each key exactly once when writers insert overlapping sets at the same time', async () => {
    const keys = Array.from({ length: 30 }, (_, i) => `k-${i}`);
    const outcomes = await Promise.all(
      replicas.map((replica) =>
        insertManyIfAbsent(
          replica.collection(entries),
          keys.map((key, i) => ({ _id: key, position: 1000 + i })),
        ),
      ),
    );
    keys.forEach((_, i) => expect(outcomes.filter((outcome) => outcome.inserted[i]).length).toBe(1));
    expect(await replicas[0]?.collection(entries).raw.countDocuments({ _id: { $in: keys } })).toBe(keys.length);
  });

  it('stops an ordered insert at the first duplicate, storing everything before it and nothing after', async () => {
    const collection = (replicas[0] as Store).collection(entries);
    await collection.raw.insertOne({ _id: 'taken', position: 5003 });
    const documents = Array.from({ length: 6 }, (_, i) => ({ _id: `o-${i}`, position: 5000 + i }));
    expect(await insertInOrder(collection, documents)).toEqual({ inserted: 3, duplicateAt: 3 });
    expect((await collection.raw.find({ _id: { $in: documents.map((document) => document._id) } }).toArray()).map((document) => document._id).sort()).toEqual(['o-0', 'o-1', 'o-2']);
    expect(await insertInOrder(collection, [{ _id: 'o-3b', position: 6000 }])).toEqual({ inserted: 1 });
  });
});
