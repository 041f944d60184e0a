import { throwIfAborted, ToolplaneError } from '@toolplane/contracts';
import type { Document } from 'mongodb';
import type { CollectionDefinition } from './define-collection.js';
import { createIndexOptions, effectiveIndex, indexDifferences, type IndexDegradation } from './index-spec.js';
import type { Store, StoreCapabilities } from './store.js';
import { isIndexConflictError, serverErrorCode, toStoreError } from './store-error.js';

/** What ensureIndexes did with one declared index. */
export interface IndexOutcome {
  readonly collection: string;
  readonly name: string;
  /** `created`: it was missing; `unchanged`: an identical index already existed. */
  readonly outcome: 'created' | 'unchanged';
  /** Features the server lacks, left out of the index (see IndexDefinition). */
  readonly degraded: readonly IndexDegradation[];
}

/** What ensureIndexes found and did, for the service to log. */
export interface EnsureIndexesReport {
  readonly indexes: readonly IndexOutcome[];
  /** Indexes present on the server but not declared: left alone (an older replica may still use them). */
  readonly unmanaged: readonly { readonly collection: string; readonly name: string }[];
}

const namespaceNotFound = 26;

/**
 * Creates every declared index that is missing; idempotent and safe to run from several replicas at once.
 * An index that exists under the same name with a different definition is a CONFLICT naming both
 * definitions: nothing is dropped or rebuilt behind an operator's back.
 */
export async function ensureIndexes(store: Store, definitions: readonly CollectionDefinition[], options: { readonly signal?: AbortSignal } = {}): Promise<EnsureIndexesReport> {
  const { signal } = options;
  const indexes: IndexOutcome[] = [];
  const unmanaged: { collection: string; name: string }[] = [];
  // A service without collections sends the server nothing here.
  if (definitions.length === 0) return { indexes, unmanaged };
  const capabilities = await store.capabilities(signal);
  for (const definition of definitions) {
    throwIfAborted(signal, `ensuring the indexes of ${definition.name}`);
    const existing = await listIndexes(store, definition.name, signal);
    for (const declared of definition.indexes) {
      const { index, degraded } = effectiveIndex(definition.name, declared, capabilities);
      const found = existing.find((candidate) => candidate['name'] === index.name);
      if (found) {
        assertSame(capabilities, definition.name, found, index);
        indexes.push({ collection: definition.name, name: index.name, outcome: 'unchanged', degraded });
        continue;
      }
      throwIfAborted(signal, `creating index ${definition.name}.${index.name}`);
      try {
        await store.db.collection(definition.name).createIndex({ ...index.key }, createIndexOptions(index));
        indexes.push({ collection: definition.name, name: index.name, outcome: 'created', degraded });
      } catch (error) {
        if (!isIndexConflictError(error)) throw toStoreError(error, `creating index ${definition.name}.${index.name}`);
        // Another replica may have created the same index a moment ago; otherwise explain the clash.
        const now = await listIndexes(store, definition.name, signal);
        const raced = now.find((candidate) => candidate['name'] === index.name);
        if (raced) {
          assertSame(capabilities, definition.name, raced, index);
          indexes.push({ collection: definition.name, name: index.name, outcome: 'unchanged', degraded });
          continue;
        }
        const sameKey = now.find((candidate) => JSON.stringify(candidate['key']) === JSON.stringify(index.key));
        throw new ToolplaneError(
          'CONFLICT',
          sameKey
            ? `index ${definition.name}.${index.name} cannot be created: the same key ${JSON.stringify(index.key)} is already indexed as "${String(sameKey['name'])}"; drop or rename one of them`
            : `index ${definition.name}.${index.name} cannot be created: the server reports an index conflict (code ${String(serverErrorCode(error))})`,
          { cause: error, details: { collection: definition.name, index: index.name } },
        );
      }
    }
    const declaredNames = new Set(definition.indexes.map((index) => index.name));
    for (const candidate of existing) {
      const name = String(candidate['name']);
      if (name !== '_id_' && !declaredNames.has(name)) unmanaged.push({ collection: definition.name, name });
    }
  }
  return { indexes, unmanaged };
}

async function listIndexes(store: Store, collection: string, signal: AbortSignal | undefined): Promise<Document[]> {
  // listIndexes takes no signal (driver 7); it is one short round trip, checked for abort before it starts.
  throwIfAborted(signal, `listing the indexes of ${collection}`);
  try {
    return await store.db.collection(collection).listIndexes().toArray() as Document[];
  } catch (error) {
    // A collection that does not exist yet has no indexes; createIndex will create it.
    if (serverErrorCode(error) === namespaceNotFound) return [];
    throw toStoreError(error, `listing the indexes of ${collection}`);
  }
}

function assertSame(capabilities: StoreCapabilities, collection: string, existing: Document, wanted: Parameters<typeof indexDifferences>[1]): void {
  const differences = indexDifferences(existing, wanted, capabilities);
  if (differences.length > 0) {
    throw new ToolplaneError('CONFLICT', `index ${collection}.${wanted.name} already exists with a different definition (${differences.join('; ')}); drop it or give the new index another name`, {
      details: { collection, index: wanted.name, differences },
    });
  }
}
