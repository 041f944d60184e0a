export { assertStorable, findUnstorableKey, type UnstorableKey, type UnstorableReason } from './assert-storable.js';
export { connectStore, openStore, type ConnectStoreOptions, type OpenStoreOptions } from './connect-store.js';
export { defineCollection, type CollectionDefinition, type IndexDefinition, type IndexKey } from './define-collection.js';
export { ensureIndexes, type EnsureIndexesReport, type IndexOutcome } from './ensure-indexes.js';
export { findByIds } from './find-by-ids.js';
export { findPage, type Page, type PageRequest } from './find-page.js';
export { decodeFreeJson, encodeFreeJson } from './free-json.js';
export { type IndexDegradation } from './index-spec.js';
export { insertIfAbsent, type CreateResult, type InsertIfAbsentOptions } from './insert-if-absent.js';
export { insertInOrder, insertManyIfAbsent, type InsertInOrderResult, type InsertManyResult } from './insert-many.js';
export { redactMongoUrl } from './redact-url.js';
export { replaceManyById } from './replace-many-by-id.js';
export { type Store, type StoreCapabilities, type StoreCollection } from './store.js';
export { isDuplicateKeyError, storeErrorCode, toStoreError } from './store-error.js';
export { upsertOnce, type UpsertOnce } from './upsert-once.js';
// The driver's query and document types, so that services can type queries without importing mongodb.
export type { Filter, ObjectId, WithId } from 'mongodb';
