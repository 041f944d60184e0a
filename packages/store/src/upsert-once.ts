import { throwIfAborted, ToolplaneError } from '@toolplane/contracts';
import { BSON, type Document, type Filter, type OptionalUnlessRequiredId } from 'mongodb';
import { assertStorable } from './assert-storable.js';
import { assertKey, findExisting, insertIfAbsent, type CreateResult } from './insert-if-absent.js';
import type { StoreCollection } from './store.js';
import { isDuplicateKeyError, toStoreError } from './store-error.js';

/** What upsertOnce creates: `document`, unless a document matching `key` exists. */
export interface UpsertOnce<TDoc> {
  /** Equality on the fields of a unique index (required: without one, concurrent upserts both insert). */
  readonly key: Readonly<Partial<TDoc>>;
  /** The whole document to create; its values for the key fields must equal the key's. */
  readonly document: OptionalUnlessRequiredId<TDoc>;
  readonly signal?: AbortSignal;
}

/**
 * Creates a document once per key with one `$setOnInsert` upsert: an existing document is returned
 * untouched, without an error round trip. Two writers racing on a new key both miss, both insert, and the
 * unique index refuses one; that duplicate-key error is turned into `created: false` with the winner's document.
 */
export async function upsertOnce<TDoc extends Document & { _id: unknown }>(collection: StoreCollection<TDoc>, request: UpsertOnce<TDoc>): Promise<CreateResult<TDoc>> {
  const what = `upsert into ${collection.name}`;
  const { key, document, signal } = request;
  assertStorable(key, 'key');
  assertStorable(document);
  assertKey(key, what);
  const onInsert: Document = { ...document };
  for (const [field, value] of Object.entries(key)) {
    if (!sameValue(onInsert[field], value)) throw new ToolplaneError('INVALID_ARGUMENT', `${what}: document.${field} differs from key.${field}`);
    // The server seeds a new document with the filter's equality fields; repeating them in $setOnInsert is redundant.
    delete onInsert[field];
  }
  // `$setOnInsert: {}` is an error on MongoDB: a document that is all key is a plain insert.
  if (Object.keys(onInsert).length === 0) return insertIfAbsent(collection, document, { key: key as Filter<TDoc>, ...(signal ? { signal } : {}) });
  throwIfAborted(signal, what);
  try {
    const result = await collection.raw.findOneAndUpdate(key as Filter<TDoc>, { $setOnInsert: onInsert as Partial<TDoc> }, { upsert: true, returnDocument: 'after', includeResultMetadata: true });
    const stored = result.value;
    if (!stored) throw new ToolplaneError('INTERNAL', `${what}: the server returned no document for an upsert`);
    const created = result.lastErrorObject?.['updatedExisting'] === false;
    return created ? { created: true, document: stored } : { created: false, existing: stored };
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw toStoreError(error, what, signal);
    const existing = await findExisting(collection, key as Filter<TDoc>, signal, what);
    if (existing) return { created: false, existing };
    throw new ToolplaneError('CONFLICT', `${what}: the document collides with another one on a unique index other than its key`, { cause: error });
  }
}

function sameValue(a: unknown, b: unknown): boolean {
  return BSON.EJSON.stringify({ v: a }, { relaxed: false }) === BSON.EJSON.stringify({ v: b }, { relaxed: false });
}
