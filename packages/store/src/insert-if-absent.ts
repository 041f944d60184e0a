import { throwIfAborted, ToolplaneError } from '@toolplane/contracts';
import type { Document, Filter, OptionalUnlessRequiredId, WithId } from 'mongodb';
import { assertStorable } from './assert-storable.js';
import type { StoreCollection } from './store.js';
import { isDuplicateKeyError, toStoreError } from './store-error.js';

/** The outcome of an idempotent create: the stored document, or the one that was there first. */
export type CreateResult<TDoc> = { readonly created: true; readonly document: WithId<TDoc> } | { readonly created: false; readonly existing: WithId<TDoc> };

/** Options of insertIfAbsent. */
export interface InsertIfAbsentOptions<TDoc> {
  /**
   * How to find the document this one would duplicate: the fields of the unique index that makes it
   * unique, e.g. `{ tenant, workspace, idempotencyKey }`. Defaults to `{ _id: document._id }`.
   */
  readonly key?: Filter<TDoc>;
  readonly signal?: AbortSignal;
}

// A duplicate whose holder then vanished (deleted between our insert and our read) is retried this often.
const attempts = 3;

/**
 * Inserts `document` unless a document with the same key exists: concurrent creators of one key all get
 * an answer, exactly one of them `created: true`. A duplicate on a different unique index than `key` is CONFLICT.
 */
export async function insertIfAbsent<TDoc extends Document & { _id: unknown }>(
  collection: StoreCollection<TDoc>,
  document: OptionalUnlessRequiredId<TDoc>,
  options: InsertIfAbsentOptions<TDoc> = {},
): Promise<CreateResult<TDoc>> {
  const what = `insert into ${collection.name}`;
  const { signal } = options;
  assertStorable(document);
  const key = options.key ?? ({ _id: (document as { _id?: unknown })._id } as Filter<TDoc>);
  assertKey(key, what);
  for (let attempt = 1; ; attempt += 1) {
    throwIfAborted(signal, what);
    try {
      // The driver adds `_id` to the object it is given; the caller's object stays as it was.
      const stored = { ...document };
      await collection.raw.insertOne(stored);
      return { created: true, document: stored as unknown as WithId<TDoc> };
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw toStoreError(error, what, signal);
      const existing = await findExisting(collection, key, signal, what);
      if (existing) return { created: false, existing };
      if (attempt >= attempts) {
        throw new ToolplaneError('CONFLICT', `${what}: the document collides with another one on a unique index other than its key`, { cause: error });
      }
    }
  }
}

/** Refuses a key that could match some other document: empty, or with a field left undefined. */
export function assertKey(key: Document, what: string): void {
  const entries = Object.entries(key);
  if (entries.length === 0 || entries.some(([, value]) => value === undefined)) {
    throw new ToolplaneError('INVALID_ARGUMENT', `${what}: the key must name at least one field and give each a value (a document without _id needs a key)`);
  }
}

/** Reads the document a duplicate-key error was about. */
export async function findExisting<TDoc extends Document>(collection: StoreCollection<TDoc>, key: Filter<TDoc>, signal: AbortSignal | undefined, what: string): Promise<WithId<TDoc> | null> {
  try {
    return await collection.raw.findOne(key, { signal });
  } catch (error) {
    throw toStoreError(error, what, signal);
  }
}
