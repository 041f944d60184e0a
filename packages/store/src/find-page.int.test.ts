import { testScope } from '@toolplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeFixture } from '../test/store-fixture.js';
import { defineCollection } from './define-collection.js';
import { findPage, type PageRequest } from './find-page.js';
import type { StoreCollection } from './store.js';

const scope = testScope('store_page');
const fixture = storeFixture(scope);

interface Call {
  _id: string;
  tenant: string;
  createdAt: Date;
  attempt: number;
}

const calls = defineCollection<Call>({ name: 'calls', indexes: [{ name: 'by_tenant_created', key: { tenant: 1, createdAt: 1, _id: 1 } }] });
let collection: StoreCollection<Call>;
const all: Call[] = [];

beforeAll(async () => {
  collection = (await fixture.open()).collection(calls);
  // Three calls share each timestamp, so the _id tie-break matters; a second tenant must never show up.
  for (let i = 0; i < 25; i += 1) all.push({ _id: `call-${String(i).padStart(2, '0')}`, tenant: 't1', createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, Math.floor(i / 3))), attempt: i % 4 });
  await collection.raw.insertMany([...all].reverse());
  await collection.raw.insertMany([{ _id: 'other-1', tenant: 't2', createdAt: new Date(Date.UTC(2026, 0, 1)), attempt: 0 }]);
});
afterAll(() => fixture.dispose());

async function readAll(request: Omit<PageRequest<Call>, 'after'>): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let after: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await findPage(collection, { ...request, ...(after === undefined ? {} : { after }) });
    pages += 1;
    ids.push(...page.items.map((item) => item._id));
    if (page.next === null) return { ids, pages };
    after = page.next;
  }
}

const byCreated = (a: Call, b: Call) => a.createdAt.getTime() - b.createdAt.getTime() || a._id.localeCompare(b._id);

describe('findPage', () => {
  it('walks every matching document exactly once, in order, by a date with ties', async () => {
    const { ids, pages } = await readAll({ filter: { tenant: 't1' }, sortBy: 'createdAt', limit: 10 });
    expect(ids).toEqual([...all].sort(byCreated).map((call) => call._id));
    expect(pages).toBe(3);
  });

  it('walks backwards', async () => {
    const { ids } = await readAll({ filter: { tenant: 't1' }, sortBy: 'createdAt', direction: 'desc', limit: 7 });
    expect(ids).toEqual([...all].sort(byCreated).reverse().map((call) => call._id));
  });

  it('pages by a number field and by _id alone', async () => {
    const byAttempt = await readAll({ filter: { tenant: 't1' }, sortBy: 'attempt', limit: 4 });
    expect(byAttempt.ids).toEqual([...all].sort((a, b) => a.attempt - b.attempt || a._id.localeCompare(b._id)).map((call) => call._id));
    const byId = await readAll({ filter: { tenant: 't1' }, sortBy: '_id', limit: 6 });
    expect(byId.ids).toEqual(all.map((call) => call._id));
  });

  it('says there is no next page when the last page is exactly full', async () => {
    const page = await findPage(collection, { filter: { tenant: 't1' }, sortBy: '_id', limit: 25 });
    expect(page.items).toHaveLength(25);
    expect(page.next).toBeNull();
  });

  it('refuses a cursor made for another ordering', async () => {
    const first = await findPage(collection, { filter: { tenant: 't1' }, sortBy: 'createdAt', limit: 5 });
    await expect(findPage(collection, { filter: { tenant: 't1' }, sortBy: 'attempt', limit: 5, after: first.next ?? '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
