import { hasErrorCode } from '@toolplane/contracts';
import { testScope } from '@toolplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeFixture } from '../test/store-fixture.js';
import { compareAndSet, type CasResult } from './compare-and-set.js';
import { defineCollection } from './define-collection.js';
import type { CasStrategy, Store, StoreCollection } from './store.js';
import { claimTarget, tryClaim } from './transition-claims.js';

const scope = testScope('store_cas');
const fixture = storeFixture(scope);
afterAll(() => fixture.dispose());

interface Invocation {
  _id: string;
  version: number;
  state: 'Received' | 'Validated' | 'Authorized' | 'Executing' | 'Denied';
  tenant: string;
  counter: number;
  winner?: number;
  note?: string;
}

const invocations = defineCollection<Invocation>({ name: 'invocations', indexes: [] });
let sequence = 0;

async function seed(collection: StoreCollection<Invocation>, fields: Partial<Invocation> = {}): Promise<Invocation> {
  sequence += 1;
  const document: Invocation = { _id: `inv-${sequence}`, version: 1, state: 'Received', tenant: 't1', counter: 0, ...fields };
  await collection.raw.insertOne(document);
  return document;
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

describe('compareAndSet', () => {
  let store: Store;
  let collection: StoreCollection<Invocation>;
  beforeAll(async () => {
    store = await fixture.open();
    collection = store.collection(invocations);
  });

  it('applies a transition and increments the version by exactly one', async () => {
    const doc = await seed(collection);
    const result = await compareAndSet(collection, { id: doc._id, expect: { version: 1, state: 'Received' }, set: { state: 'Validated' }, inc: { counter: 2 } });
    expect(result).toEqual({ ok: true, document: { ...doc, version: 2, state: 'Validated', counter: 2 } });
    expect(await collection.raw.findOne({ _id: doc._id })).toEqual({ ...doc, version: 2, state: 'Validated', counter: 2 });
  });

  it('refuses a stale version and returns the current document', async () => {
    const doc = await seed(collection, { version: 5 });
    const result = await compareAndSet(collection, { id: doc._id, expect: { version: 4 }, set: { state: 'Validated' } });
    expect(result).toEqual({ ok: false, current: doc });
  });

  it('refuses a transition from the wrong state, leaving the document untouched', async () => {
    const doc = await seed(collection, { state: 'Denied' });
    const result = await compareAndSet(collection, { id: doc._id, expect: { version: 1, state: ['Received', 'Validated'] }, set: { state: 'Executing' } });
    expect(result).toEqual({ ok: false, current: doc });
    expect(await collection.raw.findOne({ _id: doc._id })).toEqual(doc);
  });

  it('accepts any of a list of states', async () => {
    const doc = await seed(collection, { state: 'Validated' });
    const result = await compareAndSet(collection, { id: doc._id, expect: { version: 1, state: ['Received', 'Validated'] }, set: { state: 'Authorized' } });
    expect(result.ok).toBe(true);
  });

  it('answers null for a missing document, and for one outside the `where` scope', async () => {
    expect(await compareAndSet(collection, { id: 'missing', expect: { version: 1 } })).toEqual({ ok: false, current: null });
    const doc = await seed(collection, { tenant: 't1' });
    expect(await compareAndSet(collection, { id: doc._id, expect: { version: 1 }, where: { tenant: 't2' }, set: { state: 'Validated' } })).toEqual({ ok: false, current: null });
    expect(await collection.raw.findOne({ _id: doc._id })).toEqual(doc);
  });

  it('unsets fields', async () => {
    const doc = await seed(collection, { note: 'temporary' });
    const result = await compareAndSet(collection, { id: doc._id, expect: { version: 1 }, unset: ['note'] });
    expect(result.ok && result.document.note).toBeUndefined();
    expect(await collection.raw.findOne({ _id: doc._id })).not.toHaveProperty('note');
  });

  it('refuses a $-prefixed or dotted key in the change and writes nothing', async () => {
    const doc = await seed(collection);
    expect(await codeOf(compareAndSet(collection, { id: doc._id, expect: { version: 1 }, set: { note: { $where: 'x' } as unknown as string } }))).toBe('INVALID_ARGUMENT');
    expect(await collection.raw.findOne({ _id: doc._id })).toEqual(doc);
  });

  it('is CANCELLED by an aborted signal before anything is written', async () => {
    const doc = await seed(collection);
    const controller = new AbortController();
    controller.abort();
    expect(await codeOf(compareAndSet(collection, { id: doc._id, expect: { version: 1 }, set: { state: 'Validated' } }, { signal: controller.signal }))).toBe('CANCELLED');
    expect(await collection.raw.findOne({ _id: doc._id })).toEqual(doc);
  });
});

// `auto` is what services get; `claim` is forced too so the claim path is covered on MongoDB as well.
describe.each<[CasStrategy | 'auto']>([['auto'], ['claim']])('compareAndSet under concurrency (casStrategy %s)', (casStrategy) => {
  let replicas: Store[];
  let collections: StoreCollection<Invocation>[];
  beforeAll(async () => {
    // Separate clients, like separate service replicas: nothing is serialised by one connection pool.
    replicas = await fixture.replicas(5, { casStrategy });
    collections = replicas.map((replica) => replica.collection(invocations));
  });

  const race = async (writers: number, id: string): Promise<CasResult<Invocation>[]> =>
    Promise.all(
      Array.from({ length: writers }, (_, writer) =>
        compareAndSet(collections[writer % collections.length] as StoreCollection<Invocation>, {
          id,
          expect: { version: 1, state: 'Received' },
          set: { state: 'Validated', winner: writer },
        }),
      ),
    );

  it.each([[2], [10]])('lets exactly one of %i writers with the same expectation win, over 10 rounds', async (writers) => {
    const collection = collections[0] as StoreCollection<Invocation>;
    for (let round = 0; round < 10; round += 1) {
      const doc = await seed(collection);
      const results = await race(writers, doc._id);
      const winners = results.filter((result) => result.ok);
      expect(winners).toHaveLength(1);
      const stored = await collection.raw.findOne({ _id: doc._id });
      expect(stored?.version).toBe(2);
      const winner = winners[0] as { document: Invocation };
      expect(stored).toEqual(winner.document);
      // Every loser sees the document as the winner left it.
      for (const result of results) if (!result.ok) expect(result.current).toEqual(stored);
    }
  });

  it('loses no update when writers read, modify and write the same document in a loop', async () => {
    const collection = collections[0] as StoreCollection<Invocation>;
    const doc = await seed(collection);
    const writers = 8;
    const increments = 3;
    await Promise.all(
      Array.from({ length: writers }, async (_, writer) => {
        const mine = collections[writer % collections.length] as StoreCollection<Invocation>;
        for (let done = 0; done < increments; ) {
          const current = await mine.raw.findOne({ _id: doc._id });
          if (!current) throw new Error('document vanished');
          const result = await compareAndSet(mine, { id: doc._id, expect: { version: current.version }, set: { counter: current.counter + 1 } });
          if (result.ok) done += 1;
        }
      }),
    );
    const stored = await collection.raw.findOne({ _id: doc._id });
    expect(stored?.counter).toBe(writers * increments);
    expect(stored?.version).toBe(1 + writers * increments);
  });
});

describe('compareAndSet claims', () => {
  const leaseMs = 400;
  let store: Store;
  let collection: StoreCollection<Invocation>;
  beforeAll(async () => {
    store = await fixture.open({ casStrategy: 'claim', claimLeaseMs: leaseMs });
    collection = store.collection(invocations);
  });

  it('waits out the lease of a writer that died holding the claim, then takes over', async () => {
    const doc = await seed(collection);
    // A writer that claimed version 1 and crashed before writing or releasing.
    const crashed = await tryClaim(store.db, claimTarget('invocations', doc._id, 1), leaseMs, Date.now());
    expect(crashed).toBeDefined();
    const started = Date.now();
    const result = await compareAndSet(collection, { id: doc._id, expect: { version: 1 }, set: { state: 'Validated' } });
    expect(result.ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(leaseMs - 50);
    expect((await collection.raw.findOne({ _id: doc._id }))?.version).toBe(2);
  });

  it('fails with TIMEOUT when a live claim outlasts the deadline, writing nothing', async () => {
    const doc = await seed(collection);
    await tryClaim(store.db, claimTarget('invocations', doc._id, 1), 60_000, Date.now());
    expect(await codeOf(compareAndSet(collection, { id: doc._id, expect: { version: 1 }, set: { state: 'Validated' } }, { timeoutMs: 200 }))).toBe('TIMEOUT');
    expect(await collection.raw.findOne({ _id: doc._id })).toEqual(doc);
  });

  it('deletes its claim once the transition is written', async () => {
    const doc = await seed(collection);
    expect((await compareAndSet(collection, { id: doc._id, expect: { version: 1 }, set: { state: 'Validated' } })).ok).toBe(true);
    expect(await store.db.collection('store_transition_claims').countDocuments({ target: claimTarget('invocations', doc._id, 1) })).toBe(0);
  });
});
