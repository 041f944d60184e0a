import { hasErrorCode } from '@toolplane/contracts';
import { testScope } from '@toolplane/testing';
import type { Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeFixture } from '../test/store-fixture.js';
import { defineCollection } from './define-collection.js';
import { ensureIndexes } from './ensure-indexes.js';
import type { Store } from './store.js';
import { isDuplicateKeyError } from './store-error.js';

const scope = testScope('store_indexes');
const fixture = storeFixture(scope);
let store: Store;
beforeAll(async () => {
  store = await fixture.open();
});
afterAll(() => fixture.dispose());

interface Invocation {
  _id: string;
  tenant: string;
  workspace: string;
  idempotencyKey: string;
}

const invocations = defineCollection<Invocation>({
  name: 'invocations',
  indexes: [
    { name: 'by_idempotency_key', key: { tenant: 1, workspace: 1, idempotencyKey: 1 }, unique: true },
    { name: 'by_tenant', key: { tenant: 1, _id: -1 } },
  ],
});

async function listed(collection: string): Promise<Document[]> {
  return (await store.db.collection(collection).listIndexes().toArray()) as Document[];
}

async function indexNames(collection: string): Promise<string[]> {
  return (await listed(collection)).map((index) => String(index['name'])).sort();
}

async function conflictOf(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (hasErrorCode(error)) return error;
    throw error;
  }
  throw new Error('expected a failure');
}

describe('ensureIndexes', () => {
  it('creates the declared indexes, then finds them unchanged (idempotent)', async () => {
    const first = await ensureIndexes(store, [invocations]);
    expect(first.indexes.map(({ name, outcome }) => [name, outcome])).toEqual([
      ['by_idempotency_key', 'created'],
      ['by_tenant', 'created'],
    ]);
    expect(await indexNames('invocations')).toEqual(['_id_', 'by_idempotency_key', 'by_tenant']);
    const second = await ensureIndexes(store, [invocations]);
    expect(second.indexes.map(({ outcome }) => outcome)).toEqual(['unchanged', 'unchanged']);
    expect(await indexNames('invocations')).toEqual(['_id_', 'by_idempotency_key', 'by_tenant']);
  });

  it('makes the unique compound index reject a duplicate and accept a different key', async () => {
    await ensureIndexes(store, [invocations]);
    const raw = store.collection(invocations).raw;
    await raw.insertOne({ _id: 'a', tenant: 't', workspace: 'w', idempotencyKey: 'k1' });
    const duplicate = await raw.insertOne({ _id: 'b', tenant: 't', workspace: 'w', idempotencyKey: 'k1' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isDuplicateKeyError(duplicate)).toBe(true);
    await expect(raw.insertOne({ _id: 'c', tenant: 't', workspace: 'w2', idempotencyKey: 'k1' })).resolves.toMatchObject({ insertedId: 'c' });
    expect(await raw.countDocuments({ idempotencyKey: 'k1' })).toBe(2);
  });

  it('is safe when several replicas ensure the same indexes at once', async () => {
    const replicas = await fixture.replicas(4);
    const defs = [defineCollection({ name: 'raced', indexes: [{ name: 'by_a_b', key: { a: 1, b: -1 }, unique: true }] })];
    const reports = await Promise.all(replicas.map((replica) => ensureIndexes(replica, defs)));
    expect(reports.every((report) => report.indexes.length === 1)).toBe(true);
    expect(await indexNames('raced')).toEqual(['_id_', 'by_a_b']);
  });

  it('reports CONFLICT, naming the index, when one exists under the same name with another definition', async () => {
    await store.db.collection('clashing').createIndex({ a: 1 }, { name: 'by_key' });
    const differentKey = defineCollection({ name: 'clashing', indexes: [{ name: 'by_key', key: { b: 1 } }] });
    const error = await conflictOf(ensureIndexes(store, [differentKey]));
    expect(error.code).toBe('CONFLICT');
    expect(error.message).toContain('clashing.by_key');
    expect(error.message).toContain('key is {"a":1}, wanted {"b":1}');

    // FerretDB would silently accept this createIndex; the comparison must catch it.
    const nowUnique = defineCollection({ name: 'clashing', indexes: [{ name: 'by_key', key: { a: 1 }, unique: true }] });
    const uniqueError = await conflictOf(ensureIndexes(store, [nowUnique]));
    expect(uniqueError.code).toBe('CONFLICT');
    expect(uniqueError.message).toContain('unique is false, wanted true');
    const existing = (await listed('clashing')).find((index) => index['name'] === 'by_key');
    expect(existing?.['unique']).toBeUndefined();
  });

  it('reports CONFLICT naming the existing index when the same key is indexed under another name', async () => {
    await store.db.collection('renamed').createIndex({ x: 1 }, { name: 'old_name' });
    const error = await conflictOf(ensureIndexes(store, [defineCollection({ name: 'renamed', indexes: [{ name: 'new_name', key: { x: 1 } }] })]));
    expect(error.code).toBe('CONFLICT');
    expect(error.message).toContain('renamed.new_name');
    expect(error.message).toContain('"old_name"');
  });

  it('lists indexes it does not manage, and leaves them alone', async () => {
    await store.db.collection('extra').createIndex({ z: 1 }, { name: 'hand_made' });
    const report = await ensureIndexes(store, [defineCollection({ name: 'extra', indexes: [{ name: 'by_y', key: { y: 1 } }] })]);
    expect(report.unmanaged).toEqual([{ collection: 'extra', name: 'hand_made' }]);
    expect(await indexNames('extra')).toEqual(['_id_', 'by_y', 'hand_made']);
  });

  it('creates TTL and partial indexes where supported and reports them degraded where not, idempotently', async () => {
    const leases = defineCollection({
      name: 'leases',
      indexes: [
        { name: 'expiry', key: { expiresAt: 1 }, expireAfterSeconds: 0 },
        { name: 'open_by_state', key: { state: 1 }, partialFilterExpression: { open: true } },
      ],
    });
    for (let run = 0; run < 2; run += 1) {
      const report = await ensureIndexes(store, [leases]);
      const degraded = report.indexes.map((index) => index.degraded);
      expect(degraded).toEqual((await store.capabilities()).ttlIndexes ? [[], []] : [['ttl-unsupported'], ['partial-filter-unsupported']]);
      expect(report.indexes.map((index) => index.outcome)).toEqual(run === 0 ? ['created', 'created'] : ['unchanged', 'unchanged']);
    }
    expect(await indexNames('leases')).toEqual(['_id_', 'expiry', 'open_by_state']);
  });

  it('refuses a unique partial index where the server has no partial indexes, creating nothing', async () => {
    const definition = defineCollection({ name: 'unique_partial', indexes: [{ name: 'u', key: { a: 1 }, unique: true, partialFilterExpression: { a: { $exists: true } } }] });
    if ((await store.capabilities()).partialIndexes) {
      await expect(ensureIndexes(store, [definition])).resolves.toMatchObject({ indexes: [{ outcome: 'created' }] });
    } else {
      expect((await conflictOf(ensureIndexes(store, [definition]))).code).toBe('INVALID_ARGUMENT');
      expect(await store.db.listCollections({ name: 'unique_partial' }).toArray()).toEqual([]);
    }
  });
});
