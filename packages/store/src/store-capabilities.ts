import type { Document } from 'mongodb';
import type { StoreCapabilities } from './store.js';

/** What the server behind a `buildInfo` answer supports; FerretDB identifies itself with `ferretdbVersion`. */
export function capabilitiesFromBuildInfo(buildInfo: Document): StoreCapabilities {
  const ferret: unknown = buildInfo['ferretdbVersion'];
  if (typeof ferret === 'string') {
    // Measured against FerretDB 1.24 (SQLite): updates are read-then-write-by-_id; partialFilterExpression and
    // expireAfterSeconds answer NotImplemented; sparse is accepted but not kept. Later major versions are not
    // assumed to be better until measured.
    return { server: 'ferretdb', version: ferret, atomicConditionalUpdates: false, partialIndexes: false, ttlIndexes: false, sparseIndexes: false };
  }
  const version: unknown = buildInfo['version'];
  return { server: 'mongodb', version: typeof version === 'string' ? version : 'unknown', atomicConditionalUpdates: true, partialIndexes: true, ttlIndexes: true, sparseIndexes: true };
}
