import type { Collection, Db, Document } from 'mongodb';
import type { CollectionDefinition } from './define-collection.js';

/** Which MongoDB features the connected server has; FerretDB 1.x lacks several that the kit works around. */
export interface StoreCapabilities {
  readonly server: 'mongodb' | 'ferretdb';
  /** The server's own version (FerretDB's, not the MongoDB version it emulates). */
  readonly version: string;
  /** An update re-checks its filter atomically with the write (not on FerretDB 1.x: it reads, then writes by `_id`). */
  readonly atomicConditionalUpdates: boolean;
  readonly partialIndexes: boolean;
  readonly ttlIndexes: boolean;
  /** The `sparse` index option is kept (FerretDB 1.x accepts it, drops it, and never indexes missing fields anyway). */
  readonly sparseIndexes: boolean;
}

/** A collection of a Store, typed by its definition. */
export interface StoreCollection<TDoc extends Document> {
  readonly name: string;
  readonly definition: CollectionDefinition<TDoc>;
  /** The driver's collection, for queries the helpers do not cover. Write through the helpers. */
  readonly raw: Collection<TDoc>;
  readonly store: Store;
}

/** A connection to one database of a MongoDB-protocol server. */
export interface Store {
  readonly db: Db;
  readonly dbName: string;
  /** The server URL without credentials or options: safe for logs and messages. */
  readonly displayUrl: string;
  /**
   * What the server can do: asked once (`buildInfo`) by the first call that reaches it, then remembered.
   * TEMPORARY_UNAVAILABLE while no server answers.
   */
  capabilities(signal?: AbortSignal): Promise<StoreCapabilities>;
  /** The collection a definition describes. */
  collection<TDoc extends Document>(definition: CollectionDefinition<TDoc>): StoreCollection<TDoc>;
  /** Resolves when the server answers; TEMPORARY_UNAVAILABLE, TIMEOUT or CANCELLED otherwise. */
  ping(signal?: AbortSignal): Promise<void>;
  /** Closes the connection pool; later calls resolve too. */
  close(): Promise<void>;
}
