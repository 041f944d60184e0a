import { throwIfAborted } from '@toolplane/contracts';
import type { Document, OptionalUnlessRequiredId } from 'mongodb';
import { assertStorable } from './assert-storable.js';
import type { StoreCollection } from './store.js';
import { isDuplicateKeyError, toStoreError } from './store-error.js';

/** Which documents of an insertManyIfAbsent were stored (true) and which were already there (false), in input order. */
export interface InsertManyResult {
  readonly inserted: readonly boolean[];
}

// FerretDB 1.x inserts in transactions of up to 100 documents (its default --batch-size); after a failure in an
// ordered insert of more, it goes on with the next 100. Ordered inserts are therefore sent 100 at a time.
const orderedChunk = 100;
const unorderedChunk = 1000;

/**
 * Inserts documents that are keyed by a unique index (usually `_id`), unordered: each one is stored unless a
 * document with the same key exists, and concurrent writers of one key store it exactly once (an insert
 * against a unique index is atomic, on FerretDB too). Any failure other than a duplicate key is thrown.
 */
export async function insertManyIfAbsent<TDoc extends Document>(
  collection: StoreCollection<TDoc>,
  documents: readonly OptionalUnlessRequiredId<TDoc>[],
  options: { readonly signal?: AbortSignal } = {},
): Promise<InsertManyResult> {
  const what = `insert of ${documents.length} documents into ${collection.name}`;
  for (const document of documents) assertStorable(document);
  const inserted = documents.map(() => true);
  for (let start = 0; start < documents.length; start += unorderedChunk) {
    throwIfAborted(options.signal, what);
    // The driver adds `_id` to the objects it is given; the caller's objects stay as they were.
    const chunk = documents.slice(start, start + unorderedChunk).map((document) => ({ ...document }));
    try {
      await collection.raw.insertMany(chunk, { ordered: false });
    } catch (error) {
      let refused: number[];
      try {
        refused = duplicateIndexes(error);
      } catch {
        throw toStoreError(error, what, options.signal);
      }
      for (const index of refused) inserted[start + index] = false;
    }
  }
  return { inserted };
}

/** How far an insertInOrder got: the first `inserted` documents are stored; `duplicateAt` is the one refused, if any. */
export interface InsertInOrderResult {
  readonly inserted: number;
  readonly duplicateAt?: number;
}

/**
 * Inserts documents in order and stops at the first one a unique index refuses: everything before it is stored,
 * nothing after it is. For append-only sequences (a hash chain) where a document is only valid after its predecessor.
 */
export async function insertInOrder<TDoc extends Document>(
  collection: StoreCollection<TDoc>,
  documents: readonly OptionalUnlessRequiredId<TDoc>[],
  options: { readonly signal?: AbortSignal } = {},
): Promise<InsertInOrderResult> {
  const what = `ordered insert of ${documents.length} documents into ${collection.name}`;
  for (const document of documents) assertStorable(document);
  for (let start = 0; start < documents.length; start += orderedChunk) {
    throwIfAborted(options.signal, what);
    const chunk = documents.slice(start, start + orderedChunk).map((document) => ({ ...document }));
    try {
      await collection.raw.insertMany(chunk, { ordered: true });
    } catch (error) {
      const first = firstWriteError(error);
      if (first === undefined || !isDuplicateKeyError({ code: first.code })) throw toStoreError(error, what, options.signal);
      return { inserted: start + first.index, duplicateAt: start + first.index };
    }
  }
  return { inserted: documents.length };
}

function firstWriteError(error: unknown): { index: number; code: unknown } | undefined {
  const writeErrors = (error as { writeErrors?: unknown }).writeErrors;
  if (!Array.isArray(writeErrors) || writeErrors.length === 0) return undefined;
  const sorted = (writeErrors as { index?: unknown; code?: unknown }[]).filter((entry) => typeof entry.index === 'number').sort((a, b) => (a.index as number) - (b.index as number));
  const first = sorted[0];
  return first === undefined ? undefined : { index: first.index as number, code: first.code };
}

/** The indexes of the documents an unordered insert refused as duplicates; any other failure is rethrown. */
export function duplicateIndexes(error: unknown): number[] {
  const writeErrors = (error as { writeErrors?: unknown }).writeErrors;
  const list = Array.isArray(writeErrors) ? (writeErrors as { index?: unknown; code?: unknown }[]) : [];
  if (list.length === 0 || list.some((entry) => !isDuplicateKeyError({ code: entry.code }) || typeof entry.index !== 'number')) throw error;
  return list.map((entry) => entry.index as number);
}
