import { ToolplaneError } from '@toolplane/contracts';
import type { Document } from 'mongodb';
import type { IndexDefinition } from './define-collection.js';
import type { StoreCapabilities } from './store.js';

/** A feature of an index definition the server could not honour; the index was created without it. */
export type IndexDegradation = 'ttl-unsupported' | 'partial-filter-unsupported';

/** The index as it will be created on this server, and what had to be left out. */
export interface EffectiveIndex {
  readonly index: IndexDefinition;
  readonly degraded: readonly IndexDegradation[];
}

/**
 * Adapts an index definition to the server. A TTL index becomes a plain index (the owner sweeps expired
 * documents itself); a non-unique partial index becomes a full one (same answers, bigger index); a unique
 * partial index is refused, because without its filter it would reject documents the filter lets through.
 */
export function effectiveIndex(collection: string, index: IndexDefinition, capabilities: StoreCapabilities): EffectiveIndex {
  const degraded: IndexDegradation[] = [];
  let effective: IndexDefinition = index;
  if (index.expireAfterSeconds !== undefined && !capabilities.ttlIndexes) {
    const { expireAfterSeconds: _ttl, ...rest } = effective;
    effective = rest;
    degraded.push('ttl-unsupported');
  }
  if (index.partialFilterExpression !== undefined && !capabilities.partialIndexes) {
    if (index.unique) {
      throw new ToolplaneError(
        'INVALID_ARGUMENT',
        `index ${collection}.${index.name}: ${capabilities.server} ${capabilities.version} has no partial indexes, and a unique index without its filter would refuse documents the filter admits; use sparse: true instead`,
      );
    }
    const { partialFilterExpression: _filter, ...rest } = effective;
    effective = rest;
    degraded.push('partial-filter-unsupported');
  }
  return { index: effective, degraded };
}

/** The driver's createIndex options for an index definition. */
export function createIndexOptions(index: IndexDefinition): Document {
  const options: Document = { name: index.name };
  if (index.unique) options['unique'] = true;
  if (index.sparse) options['sparse'] = true;
  if (index.partialFilterExpression !== undefined) options['partialFilterExpression'] = index.partialFilterExpression;
  if (index.expireAfterSeconds !== undefined) options['expireAfterSeconds'] = index.expireAfterSeconds;
  return options;
}

/**
 * How an existing index (as listIndexes returns it) differs from the wanted one; empty when they are the same.
 * Options the kit does not declare (collation, hidden, …) are not compared.
 */
export function indexDifferences(existing: Document, wanted: IndexDefinition, capabilities: StoreCapabilities): string[] {
  const differences: string[] = [];
  const existingKey = Object.entries((existing['key'] ?? {}) as Document).map(([field, direction]) => [field, Number(direction)]);
  const wantedKey = Object.entries(wanted.key);
  if (JSON.stringify(existingKey) !== JSON.stringify(wantedKey)) {
    differences.push(`key is ${JSON.stringify(Object.fromEntries(existingKey))}, wanted ${JSON.stringify(wanted.key)}`);
  }
  if (Boolean(existing['unique']) !== Boolean(wanted.unique)) differences.push(`unique is ${Boolean(existing['unique'])}, wanted ${Boolean(wanted.unique)}`);
  // FerretDB 1.x forgets `sparse`, so there it cannot be compared.
  if (capabilities.sparseIndexes && Boolean(existing['sparse']) !== Boolean(wanted.sparse)) differences.push(`sparse is ${Boolean(existing['sparse'])}, wanted ${Boolean(wanted.sparse)}`);
  const rawTtl: unknown = existing['expireAfterSeconds'];
  const existingTtl = rawTtl === undefined ? undefined : Number(rawTtl);
  if (existingTtl !== wanted.expireAfterSeconds) {
    differences.push(`expireAfterSeconds is ${existingTtl ?? 'unset'}, wanted ${wanted.expireAfterSeconds ?? 'unset'}`);
  }
  if (!sameValue(existing['partialFilterExpression'], wanted.partialFilterExpression)) {
    differences.push(`partialFilterExpression is ${JSON.stringify(existing['partialFilterExpression'] ?? null)}, wanted ${JSON.stringify(wanted.partialFilterExpression ?? null)}`);
  }
  return differences;
}

// Structural equality where object key order does not matter (servers may echo a filter reordered).
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === 'number' || typeof b === 'number') return Number(a) === Number(b);
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => sameValue(item, b[i]));
  const ak = Object.keys(a);
  const bk = Object.keys(b);
  return ak.length === bk.length && ak.every((k) => Object.hasOwn(b, k) && sameValue((a as Document)[k], (b as Document)[k]));
}
