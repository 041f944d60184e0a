import { throwIfAborted, ToolplaneError } from '@toolplane/contracts';
import type { Document, Filter, WithId } from 'mongodb';
import { decodePageCursor, encodePageCursor } from './page-cursor.js';
import type { StoreCollection } from './store.js';
import { toStoreError } from './store-error.js';

/** One page request: a filter, an ordering by one field (ties broken by `_id`), a size and where to resume. */
export interface PageRequest<TDoc> {
  readonly filter?: Filter<TDoc>;
  /** A field every matching document has, with values of one type (MongoDB compares across types by type first). */
  readonly sortBy: string;
  readonly direction?: 'asc' | 'desc';
  /** 1 to 1000. */
  readonly limit: number;
  /** The `next` cursor of the previous page. */
  readonly after?: string;
  readonly signal?: AbortSignal;
}

/** A page of documents and the cursor of the next one (null on the last page). */
export interface Page<TDoc> {
  readonly items: readonly WithId<TDoc>[];
  readonly next: string | null;
}

const maxLimit = 1000;

/** Reads one page with keyset pagination: stable under inserts, no skip cost, opaque base64 cursors. */
export async function findPage<TDoc extends Document>(collection: StoreCollection<TDoc>, request: PageRequest<TDoc>): Promise<Page<TDoc>> {
  const what = `paging through ${collection.name}`;
  const { sortBy, limit, signal } = request;
  const direction = request.direction === 'desc' ? -1 : 1;
  if (!Number.isInteger(limit) || limit < 1 || limit > maxLimit) throw new ToolplaneError('INVALID_ARGUMENT', `${what}: limit must be a whole number from 1 to ${maxLimit}`);
  if (sortBy === '' || sortBy.startsWith('$')) throw new ToolplaneError('INVALID_ARGUMENT', `${what}: "${sortBy}" is not a field path`);
  const clauses: Document[] = [];
  if (request.filter && Object.keys(request.filter).length > 0) clauses.push(request.filter);
  if (request.after !== undefined) {
    const { value, id } = decodePageCursor(request.after, sortBy, direction);
    const beyond = direction === 1 ? '$gt' : '$lt';
    clauses.push(sortBy === '_id' ? { _id: { [beyond]: id } } : { $or: [{ [sortBy]: { [beyond]: value } }, { [sortBy]: value, _id: { [beyond]: id } }] });
  }
  const query = (clauses.length === 0 ? {} : clauses.length === 1 ? clauses[0] : { $and: clauses }) as Filter<TDoc>;
  const sort: Record<string, 1 | -1> = sortBy === '_id' ? { _id: direction } : { [sortBy]: direction, _id: direction };
  throwIfAborted(signal, what);
  let items: WithId<TDoc>[];
  try {
    // One more than asked tells whether another page exists without a count.
    items = await collection.raw.find(query, { sort, limit: limit + 1, signal }).toArray();
  } catch (error) {
    throw toStoreError(error, what, signal);
  }
  if (items.length <= limit) return { items, next: null };
  items = items.slice(0, limit);
  const last = items[items.length - 1] as WithId<TDoc>;
  const value = valueAt(last, sortBy);
  if (value === undefined || value === null) throw new ToolplaneError('INTERNAL', `${what}: a document has no ${sortBy}; pages need it on every document`);
  return { items, next: encodePageCursor({ sortBy, direction, value, id: last._id }) };
}

function valueAt(document: Document, path: string): unknown {
  let current: unknown = document;
  for (const part of path.split('.')) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Document)[part];
  }
  return current;
}
