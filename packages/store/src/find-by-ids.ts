import { BSON, type Document, type Filter, type WithId } from 'mongodb';
import type { StoreCollection } from './store.js';
import { toStoreError } from './store-error.js';

/**
 * Reads documents by `_id`, in the order of `ids` (null for a missing one): one `$in` query on MongoDB, and
 * single-document reads on FerretDB 1.x, which looks a document up by `_id` only when the filter is exactly
 * `{ _id: value }` and scans the whole collection for anything else, `$in` included.
 */
export async function findByIds<TDoc extends Document>(
  collection: StoreCollection<TDoc>,
  ids: readonly unknown[],
  options: { readonly concurrency?: number; readonly signal?: AbortSignal } = {},
): Promise<(WithId<TDoc> | null)[]> {
  const { signal } = options;
  const what = `reading ${ids.length} documents of ${collection.name}`;
  try {
    if ((await collection.store.capabilities(signal)).server === 'mongodb') {
      const documents = await collection.raw.find({ _id: { $in: [...ids] } } as Filter<TDoc>, { signal }).toArray();
      const byId = new Map(documents.map((document) => [idKey(document._id), document]));
      return ids.map((id) => byId.get(idKey(id)) ?? null);
    }
    const found: (WithId<TDoc> | null)[] = ids.map(() => null);
    await forEachLimited(ids, options.concurrency ?? 4, async (id, index) => {
      found[index] = await collection.raw.findOne({ _id: id } as Filter<TDoc>, { signal });
    });
    return found;
  } catch (error) {
    throw toStoreError(error, what, signal);
  }
}

function idKey(id: unknown): string {
  return BSON.EJSON.stringify({ id }, { relaxed: false });
}

/** Runs `work` over the items with at most `limit` in flight; the first failure rejects once all started work settled. */
async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const index = next;
      next += 1;
      try {
        await work(items[index] as T, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failure !== undefined) throw failure.error;
}
