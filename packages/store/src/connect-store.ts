import { raceAbort, throwIfAborted, ToolplaneError, withDeadline } from '@toolplane/contracts';
import { MongoClient, type Document } from 'mongodb';
import type { CollectionDefinition } from './define-collection.js';
import { redactMongoUrl, scrubCredentials } from './redact-url.js';
import type { Store, StoreCollection } from './store.js';
import { capabilitiesFromBuildInfo } from './store-capabilities.js';
import { toStoreError } from './store-error.js';

/** How to reach the database. */
export interface ConnectStoreOptions {
  /** `mongodb://` or `mongodb+srv://` connection string; it never appears in errors with its credentials. */
  readonly url: string;
  readonly dbName: string;
  /** Shown by the server in its logs and `currentOp`, e.g. `toolplane-registry`. */
  readonly appName: string;
  /** How long to look for a usable server before failing with TEMPORARY_UNAVAILABLE (default 5000). */
  readonly serverSelectionTimeoutMs?: number;
  readonly signal?: AbortSignal;
}

const defaultSelectionTimeoutMs = 5_000;
const defaultPingTimeoutMs = 5_000;

/**
 * Connects to a MongoDB-protocol server and checks it answers. Fails fast: INVALID_ARGUMENT for a malformed
 * URL or database name, TEMPORARY_UNAVAILABLE when no server can be reached in time; both name the URL
 * without its credentials.
 */
export async function connectStore(options: ConnectStoreOptions): Promise<Store> {
  const displayUrl = redactMongoUrl(options.url);
  const { dbName, signal } = options;
  if (!/^[^/\\. "$*<>:|?\0]{1,63}$/.test(dbName)) {
    throw new ToolplaneError('INVALID_ARGUMENT', `database name ${JSON.stringify(dbName)} is not valid (1 to 63 characters, none of /\\. "$*<>:|?)`);
  }
  throwIfAborted(signal, `connecting to ${displayUrl}`);
  const selectionTimeoutMs = options.serverSelectionTimeoutMs ?? defaultSelectionTimeoutMs;
  let client: MongoClient;
  try {
    client = new MongoClient(options.url, {
      appName: options.appName,
      serverSelectionTimeoutMS: selectionTimeoutMs,
      // A host that drops packets should fail as fast as one that refuses the connection.
      connectTimeoutMS: selectionTimeoutMs,
      // zod's optional fields are `undefined`: leave them out rather than store null, which would not parse back.
      ignoreUndefined: true,
    });
  } catch (error) {
    const reason = error instanceof Error ? scrubCredentials(error.message, options.url) : 'unreadable';
    throw new ToolplaneError('INVALID_ARGUMENT', `${displayUrl} is not a valid MongoDB URL: ${reason}`, { cause: error });
  }
  try {
    await raceAbort(client.connect(), signal, `connecting to ${displayUrl}`);
    const buildInfo = await client.db(dbName).command({ buildInfo: 1 }, { signal });
    return openStore(client, dbName, displayUrl, capabilitiesFromBuildInfo(buildInfo));
  } catch (error) {
    await client.close().catch(() => undefined);
    throw connectError(error, displayUrl, options.url, signal);
  }
}

function connectError(error: unknown, displayUrl: string, url: string, signal: AbortSignal | undefined): ToolplaneError {
  if (error instanceof ToolplaneError) return error;
  const translated = toStoreError(error, `connecting to ${displayUrl}`, signal);
  if (translated.code !== 'TEMPORARY_UNAVAILABLE') return translated;
  const reason = error instanceof Error ? scrubCredentials(error.message, url) : 'no answer';
  return new ToolplaneError('TEMPORARY_UNAVAILABLE', `${displayUrl} is unreachable: ${reason}`, { cause: error, ...(translated.details ? { details: translated.details } : {}) });
}

function openStore(client: MongoClient, dbName: string, displayUrl: string, capabilities: Store['capabilities']): Store {
  const db = client.db(dbName);
  let closing: Promise<void> | undefined;
  const store: Store = {
    db,
    dbName,
    displayUrl,
    capabilities,
    collection<TDoc extends Document>(definition: CollectionDefinition<TDoc>): StoreCollection<TDoc> {
      return { name: definition.name, definition, raw: db.collection<TDoc>(definition.name), store };
    },
    async ping(signal?: AbortSignal): Promise<void> {
      const bounded = withDeadline(signal, defaultPingTimeoutMs);
      try {
        await db.command({ ping: 1 }, { signal: bounded });
      } catch (error) {
        throw toStoreError(error, `pinging ${displayUrl}`, bounded);
      }
    },
    close(): Promise<void> {
      closing ??= client.close().catch(() => undefined);
      return closing;
    },
  };
  return store;
}
