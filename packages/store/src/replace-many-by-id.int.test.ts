import { testScope } from '@toolplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeFixture } from '../test/store-fixture.js';
import { defineCollection } from './define-collection.js';
import { findByIds } from './find-by-ids.js';
import { replaceManyById } from './replace-many-by-id.js';
import type { StoreCollection } from './store.js';

const scope = testScope('store_replace_by_id');
const fixture = storeFixture(scope);
afterAll(() => fixture.dispose());

interface Call {
  _id: string;
  state: string;
  note?: string;
}
const calls = defineCollection<Call>({ name: 'calls', indexes: [] });
let collection: StoreCollection<Call>;

beforeAll(async () => {
  collection = (await fixture.open()).collection(calls);
});

describe('findByIds', () => {
  it('reads documents in the order of the ids asked for, null for a missing one', async () => {
    await collection.raw.insertMany([
      { _id: 'f-1', state: 'Open' },
      { _id: 'f-2', state: 'Closed' },
    ]);
    expect(await findByIds(collection, ['f-2', 'missing', 'f-1'])).toEqual([{ _id: 'f-2', state: 'Closed' }, null, { _id: 'f-1', state: 'Open' }]);
    expect(await findByIds(collection, [])).toEqual([]);
  });
});

describe('replaceManyById', () => {
  it('replaces documents whole by _id (a field left out is gone) and inserts a missing one', async () => {
    await collection.raw.insertMany([
      { _id: 'r-1', state: 'Open', note: 'first' },
      { _id: 'r-2', state: 'Open' },
    ]);
    await replaceManyById(collection, [
      { _id: 'r-1', state: 'Closed' },
      { _id: 'r-3', state: 'Open', note: 'new' },
    ]);
    expect(await findByIds(collection, ['r-1', 'r-2', 'r-3'])).toEqual([{ _id: 'r-1', state: 'Closed' }, { _id: 'r-2', state: 'Open' }, { _id: 'r-3', state: 'Open', note: 'new' }]);
  });

  it('replaces more documents than FerretDB answers in one update command (100 or more)', async () => {
    const ids = Array.from({ length: 130 }, (_, i) => `m-${i}`);
    await collection.raw.insertMany(ids.map((_id) => ({ _id, state: 'Open' })));
    await replaceManyById(collection, ids.map((_id) => ({ _id, state: 'Closed' })));
    expect((await findByIds(collection, ids)).every((document) => document?.state === 'Closed')).toBe(true);
  }, 60_000);

  it('refuses a document without _id, one listed twice or one with an unstorable key, writing nothing', async () => {
    await expect(replaceManyById(collection, [{ _id: 'r-4', state: 'Open' }, { _id: 'r-4', state: 'Closed' }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(replaceManyById(collection, [{ state: 'Open' } as Call])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(replaceManyById(collection, [{ _id: 'r-5', state: 'Open', note: { $where: 'x' } as unknown as string }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await findByIds(collection, ['r-4', 'r-5'])).toEqual([null, null]);
  });
});
