import { testScope } from '@toolplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeFixture } from '../test/store-fixture.js';
import { defineCollection } from './define-collection.js';
import { decodeFreeJson, encodeFreeJson } from './free-json.js';
import { insertIfAbsent } from './insert-if-absent.js';
import { replaceManyById } from './replace-many-by-id.js';
import type { StoreCollection } from './store.js';
import { upsertOnce } from './upsert-once.js';

const scope = testScope('store_storable');
const fixture = storeFixture(scope);

interface Descriptor {
  _id: string;
  version: number;
  name: string;
  inputSchema?: unknown;
  inputSchemaJson?: string;
}

const descriptors = defineCollection<Descriptor>({ name: 'descriptors', indexes: [] });
let collection: StoreCollection<Descriptor>;
beforeAll(async () => {
  collection = (await fixture.open()).collection(descriptors);
});
afterAll(() => fixture.dispose());

const schema = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { 'user.name': { $ref: '#/$defs/name' } }, $defs: { name: { type: 'string' } } };

async function refusal(promise: Promise<unknown>): Promise<{ code?: unknown; message?: unknown; details?: unknown }> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: unknown };
  }
  throw new Error('expected a refusal');
}

describe('what may be stored', () => {
  it('refuses a document with a $-prefixed key, naming its path, and writes nothing', async () => {
    const error = await refusal(insertIfAbsent(collection, { _id: 'd1', version: 1, name: 'x', inputSchema: { type: 'object', $schema: 'x' } }));
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'document.inputSchema["$schema"]' } });
    expect(await collection.raw.countDocuments({})).toBe(0);
  });

  it('refuses a dotted key deep inside an array, and writes nothing', async () => {
    const error = await refusal(insertIfAbsent(collection, { _id: 'd2', version: 1, name: 'x', inputSchema: { anyOf: [{ ok: 1 }, { 'a.b': 1 }] } }));
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'document.inputSchema.anyOf[1]["a.b"]' } });
    expect(await collection.raw.countDocuments({})).toBe(0);
  });

  it('refuses such keys in upserts and replacements too', async () => {
    expect(await refusal(upsertOnce(collection, { key: { _id: 'd3' }, document: { _id: 'd3', version: 1, name: 'x', inputSchema: schema } }))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await collection.raw.countDocuments({})).toBe(0);
    await insertIfAbsent(collection, { _id: 'd4', version: 1, name: 'x' });
    expect(await refusal(replaceManyById(collection, [{ _id: 'd4', version: 2, name: 'x', inputSchema: schema }]))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await collection.raw.findOne({ _id: 'd4' })).toEqual({ _id: 'd4', version: 1, name: 'x' });
  });

  it('stores free-form JSON as a string and reads it back intact', async () => {
    await insertIfAbsent(collection, { _id: 'd5', version: 1, name: 'x', inputSchemaJson: encodeFreeJson(schema) });
    const stored = await collection.raw.findOne({ _id: 'd5' });
    expect(typeof stored?.inputSchemaJson).toBe('string');
    expect(decodeFreeJson(stored?.inputSchemaJson ?? '')).toEqual(schema);
  });
});
