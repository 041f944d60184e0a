// The pointer to the live generation of the rebuildable projections, read before and after every batch and
// moved only by compare-and-set.
import { ToolplaneError, type ProjectionGenerations } from '@toolplane/contracts';
import { compareAndSet, insertIfAbsent, type Store, type Transition } from '@toolplane/store';
import { projectionGenerations } from './collections.js';

/** The pointer document's id. */
export const POINTER_ID = 'audit-projector';

/** The pointer as it is before any rebuild. */
export const initialGenerations: ProjectionGenerations = { _id: POINTER_ID, live: 1, version: 1 };

/** Reads the pointer (the initial one when none was written yet). */
export async function readGenerations(store: Store, signal?: AbortSignal): Promise<ProjectionGenerations> {
  const found = await store.collection(projectionGenerations).raw.findOne({ _id: POINTER_ID }, { signal });
  return found ?? initialGenerations;
}

/** The generation queries read and live writers write. */
export async function liveGeneration(store: Store, signal?: AbortSignal): Promise<number> {
  return (await readGenerations(store, signal)).live;
}

/**
 * Moves the pointer on from what `change` is given: re-reads and retries when another writer moved it first,
 * so `change` must decide from the pointer it receives. `change` returning undefined leaves it as it is.
 */
export async function updateGenerations(
  store: Store,
  change: (current: ProjectionGenerations) => Pick<Transition<ProjectionGenerations>, 'set' | 'unset'> | undefined,
  signal?: AbortSignal,
): Promise<ProjectionGenerations> {
  const collection = store.collection(projectionGenerations);
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const created = await insertIfAbsent(collection, initialGenerations, signal ? { signal } : {});
    const current = created.created ? created.document : created.existing;
    const update = change(current);
    if (update === undefined) return current;
    const result = await compareAndSet(collection, { id: POINTER_ID, expect: { version: current.version }, ...update }, signal ? { signal } : {});
    if (result.ok) return result.document;
  }
  throw new ToolplaneError('CONFLICT', 'the projection pointer keeps changing under this writer');
}
