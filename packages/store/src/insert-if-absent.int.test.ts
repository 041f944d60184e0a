import { hasErrorCode } from '@toolplane/contracts';
import { testScope } from '@toolplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeFixture } from '../test/store-fixture.js';
import { defineCollection } from './define-collection.js';
import { ensureIndexes } from './ensure-indexes.js';
import { insertIfAbsent, type CreateResult } from './insert-if-absent.js';
import type { Store, StoreCollection } from './store.js';
import { upsertOnce } from './upsert-once.js';

const scope = testScope('store_create');
const fixture = storeFixture(scope);

interface Invocation {
  _id: string;
  tenant: string;
  workspace: string;
  idempotencyKey: string;
  requestHash: string;
  createdBy: number;
}

const invocations = defineCollection<Invocation>({
  name: 'invocations',
  indexes: [{ name: 'by_idempotency_key', key: { tenant: 1, workspace: 1, idempotencyKey: 1 }, unique: true }],
});

let replicas: Store[];
let collections: StoreCollection<Invocation>[];
beforeAll(async () => {
  replicas = await fixture.replicas(5);
  await ensureIndexes(replicas[0] as Store, [invocations]);
  collections = replicas.map((replica) => replica.collection(invocations));
});
afterAll(() => fixture.dispose());

let sequence = 0;
const fresh = (createdBy = 0, fields: Partial<Invocation> = {}): Invocation => {
  sequence += 1;
  return { _id: `inv-${sequence}`, tenant: 't1', workspace: 'w1', idempotencyKey: `key-${sequence}`, requestHash: `hash-${sequence}`, createdBy, ...fields };
};
const collectionOf = (writer: number) => collections[writer % collections.length] as StoreCollection<Invocation>;

function expectOneCreated(results: CreateResult<Invocation>[]): Invocation {
  const created = results.filter((result) => result.created);
  expect(created).toHaveLength(1);
  const winner = (created[0] as { document: Invocation }).document;
  for (const result of results) if (!result.created) expect(result.existing).toEqual(winner);
  return winner;
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

describe('insertIfAbsent', () => {
  it('creates once, then returns the document that was there first', async () => {
    const collection = collectionOf(0);
    const first = fresh(1);
    expect(await insertIfAbsent(collection, first)).toEqual({ created: true, document: first });
    const second = await insertIfAbsent(collection, { ...first, requestHash: 'other', createdBy: 2 });
    expect(second).toEqual({ created: false, existing: first });
    expect(await collection.raw.countDocuments({ _id: first._id })).toBe(1);
  });

  it('lets exactly one of 10 concurrent creators of one _id create it', async () => {
    const base = fresh();
    const results = await Promise.all(Array.from({ length: 10 }, (_, writer) => insertIfAbsent(collectionOf(writer), { ...base, createdBy: writer })));
    const winner = expectOneCreated(results);
    expect(await collectionOf(0).raw.find({ _id: base._id }).toArray()).toEqual([winner]);
  });

  it('finds the existing document by a unique key other than _id (idempotency key)', async () => {
    const base = fresh();
    const key = { tenant: base.tenant, workspace: base.workspace, idempotencyKey: base.idempotencyKey };
    // Each creator makes its own _id, as two replicas handling the same request would.
    const results = await Promise.all(Array.from({ length: 10 }, (_, writer) => insertIfAbsent(collectionOf(writer), { ...base, _id: `${base._id}-${writer}`, createdBy: writer }, { key })));
    expectOneCreated(results);
    expect(await collectionOf(0).raw.countDocuments(key)).toBe(1);
  });

  it('reports CONFLICT when the document collides on a unique index other than its key', async () => {
    const first = fresh();
    await insertIfAbsent(collectionOf(0), first);
    // Same idempotency key, different _id, looked up by _id: the duplicate is not the one its key finds.
    expect(await codeOf(insertIfAbsent(collectionOf(1), { ...first, _id: `${first._id}-other` }))).toBe('CONFLICT');
    expect(await collectionOf(0).raw.countDocuments({ idempotencyKey: first.idempotencyKey })).toBe(1);
  });

  it("leaves the caller's object as it was", async () => {
    const document = { tenant: 't1', workspace: 'w1', idempotencyKey: `no-id-${sequence}`, requestHash: 'h', createdBy: 0 };
    const copy = { ...document };
    const result = await insertIfAbsent(collectionOf(0), document as Invocation, { key: { tenant: 't1', workspace: 'w1', idempotencyKey: document.idempotencyKey } });
    expect(result.created).toBe(true);
    expect(document).toEqual(copy);
  });

  it('refuses a document without _id when no key says how to find a duplicate', async () => {
    const { _id: _unused, ...withoutId } = fresh();
    expect(await codeOf(insertIfAbsent(collectionOf(0), withoutId as Invocation))).toBe('INVALID_ARGUMENT');
  });
});

describe('upsertOnce', () => {
  it('creates once; a second upsert returns the first document untouched', async () => {
    const collection = collectionOf(0);
    const first = fresh(1);
    const key = { tenant: first.tenant, workspace: first.workspace, idempotencyKey: first.idempotencyKey };
    expect(await upsertOnce(collection, { key, document: first })).toEqual({ created: true, document: first });
    const second = await upsertOnce(collection, { key, document: { ...first, _id: 'ignored', requestHash: 'other', createdBy: 2 } });
    expect(second).toEqual({ created: false, existing: first });
  });

  it('lets exactly one of 10 concurrent upserts of one key create it; one document is stored', async () => {
    for (let round = 0; round < 5; round += 1) {
      const base = fresh();
      const key = { tenant: base.tenant, workspace: base.workspace, idempotencyKey: base.idempotencyKey };
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, writer) => upsertOnce(collectionOf(writer), { key, document: { ...base, _id: `${base._id}-${writer}`, createdBy: writer } })),
      );
      const winner = expectOneCreated(results);
      expect(await collectionOf(0).raw.find(key).toArray()).toEqual([winner]);
    }
  });

  it('works with _id as the key', async () => {
    const base = fresh();
    const results = await Promise.all(Array.from({ length: 6 }, (_, writer) => upsertOnce(collectionOf(writer), { key: { _id: base._id }, document: { ...base, createdBy: writer } })));
    expectOneCreated(results);
    expect(await collectionOf(0).raw.countDocuments({ _id: base._id })).toBe(1);
  });

  it('refuses a document whose key fields differ from the key', async () => {
    const base = fresh();
    expect(await codeOf(upsertOnce(collectionOf(0), { key: { idempotencyKey: 'a' }, document: { ...base, idempotencyKey: 'b' } }))).toBe('INVALID_ARGUMENT');
    expect(await collectionOf(0).raw.countDocuments({ _id: base._id })).toBe(0);
  });
});
