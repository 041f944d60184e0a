import { throwIfAborted, ToolplaneError } from '@toolplane/contracts';
import { BSON, type AnyBulkWriteOperation, type Document } from 'mongodb';
import { assertStorable } from './assert-storable.js';
import type { StoreCollection } from './store.js';
import { toStoreError } from './store-error.js';

// FerretDB 1.24 (SQLite) never answers an update command of 100 statements or more (measured: 99 replacements in
// 2.7 s, 100 without an answer in 20 s); the driver sends a bulk write as one command, so it goes out in chunks.
const chunkSize = 50;

/**
 * Replaces documents whole, each by its `_id` alone (inserting one that is missing), in one unordered bulk write.
 * This is a write for a document's single writer: nothing is compared with what is stored, so of two writers the
 * later one wins. The filter is exactly `{ _id }`, the one filter FerretDB 1.x (SQLite) looks up by its primary key
 * (its updates still read the collection to write: measured in the audit projector's README). Sent in chunks of
 * 50; a failure leaves the chunks before it written.
 */
export async function replaceManyById<TDoc extends Document & { _id: unknown }>(
  collection: StoreCollection<TDoc>,
  documents: readonly TDoc[],
  options: { readonly signal?: AbortSignal } = {},
): Promise<void> {
  const what = `replacing ${documents.length} documents of ${collection.name}`;
  const ids = new Set<string>();
  for (const document of documents) {
    assertStorable(document);
    if (document._id === undefined) throw new ToolplaneError('INVALID_ARGUMENT', `${what}: a document has no _id`);
    ids.add(BSON.EJSON.stringify({ id: document._id }, { relaxed: false }));
  }
  // Unordered writes of one document twice would leave either one: refused rather than guessed.
  if (ids.size !== documents.length) throw new ToolplaneError('INVALID_ARGUMENT', `${what}: the same document appears twice`);
  if (documents.length === 0) return;
  throwIfAborted(options.signal, what);
  const operations = documents.map((document) => {
    const { _id, ...replacement } = document;
    return { replaceOne: { filter: { _id }, replacement, upsert: true } };
  }) as unknown as AnyBulkWriteOperation<TDoc>[];
  try {
    for (let start = 0; start < operations.length; start += chunkSize) {
      throwIfAborted(options.signal, what);
      await collection.raw.bulkWrite(operations.slice(start, start + chunkSize), { ordered: false });
    }
  } catch (error) {
    throw toStoreError(error, what, options.signal);
  }
}
