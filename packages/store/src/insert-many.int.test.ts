import { testScope } from '@toolplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeFixture } from '../test/store-fixture.js';
import { defineCollection } from './define-collection.js';
import { insertInOrder, insertManyIfAbsent } from './insert-many.js';
import type { Store } from './store.js';

const scope = testScope('store_insert_many');
const fixture = storeFixture(scope);
afterAll(() => fixture.dispose());

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
