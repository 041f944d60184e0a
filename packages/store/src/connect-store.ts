import { raceAbort, throwIfAborted, ToolplaneError, withDeadline } from '@toolplane/contracts';
import { MongoClient, type Document } from 'mongodb';
import type { CollectionDefinition } from './define-collection.js';
import { redactMongoUrl, scrubCredentials } from './redact-url.js';
import type { Store, StoreCapabilities, StoreCollection } from './store.js';
import { capabilitiesFromBuildInfo } from './store-capabilities.js';
import { toStoreError } from './store-error.js';

/** How to reach the database. */
export interface OpenStoreOptions {
  /** `mongodb://` or `mongodb+srv://` connection string; it never appears in errors with its credentials. */
  readonly url: string;
  readonly dbName: string;
  /** Shown by the server in its logs and `currentOp`, e.g. `toolplane-registry`. */
  readonly appName: string;
  /** How long an operation looks for a usable server before failing with TEMPORARY_UNAVAILABLE (default 5000). */
  readonly serverSelectionTimeoutMs?: number;
}

/** How to reach the database, and how long connecting may take. */
export interface ConnectStoreOptions extends OpenStoreOptions {
  readonly signal?: AbortSignal;
}

const defaultSelectionTimeoutMs = 5_000;
const defaultPingTimeoutMs = 5_000;

/**
 * A store that connects later: nothing is sent until it is used, and an operation that finds no server within the
 * selection timeout fails with TEMPORARY_UNAVAILABLE. Until a first connection succeeded, `ping` and `capabilities`
 * are what connect (the service kit pings until MongoDB answers); after it, the driver rides out outages itself. Only
 * a malformed URL or database name fails here, with INVALID_ARGUMENT naming the URL without its credentials. For a
 * service that must start while MongoDB is away.
 */
export function openStore(options: OpenStoreOptions): Store {
  const displayUrl = redactMongoUrl(options.url);
  const { dbName } = options;
  if (!/^[^/\\. "$*<>:|?\0]{1,63}$/.test(dbName)) {
    throw new ToolplaneError('INVALID_ARGUMENT', `database name ${JSON.stringify(dbName)} is not valid (1 to 63 characters, none of /\\. "$*<>:|?)`);
  }
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
  return storeOf(client, dbName, displayUrl, options.url);
}

/**
 * Connects to a MongoDB-protocol server and checks it answers. Fails fast: INVALID_ARGUMENT for a malformed
 * URL or database name, TEMPORARY_UNAVAILABLE when no server can be reached in time; both name the URL
 * without its credentials.
 */
export async function connectStore(options: ConnectStoreOptions): Promise<Store> {
  const { signal } = options;
  const store = openStore(options);
  try {
    throwIfAborted(signal, `connecting to ${store.displayUrl}`);
    // Connects, then asks what the server supports: the first answer proves it is reachable.
    await store.capabilities(signal);
    return store;
  } catch (error) {
    await store.close();
    throw connectError(error, store.displayUrl, options.url, signal);
  }
}

function connectError(error: unknown, displayUrl: string, url: string, signal: AbortSignal | undefined): ToolplaneError {
  if (error instanceof ToolplaneError && error.code !== 'TEMPORARY_UNAVAILABLE') return error;
  const translated = toStoreError(error, `connecting to ${displayUrl}`, signal);
  if (translated.code !== 'TEMPORARY_UNAVAILABLE') return translated;
  const cause = error instanceof ToolplaneError && error.cause !== undefined ? error.cause : error;
  const reason = cause instanceof Error ? scrubCredentials(cause.message, url) : 'no answer';
  return new ToolplaneError('TEMPORARY_UNAVAILABLE', `${displayUrl} is unreachable: ${reason}`, { cause, ...(translated.details ? { details: translated.details } : {}) });
}

function storeOf(client: MongoClient, dbName: string, displayUrl: string, url: string): Store {
  const db = client.db(dbName);
  let closing: Promise<void> | undefined;
  // The driver connects on first use too, but a first connection that fails leaves the client's topology closed for
  // good ("Topology is closed"): connect explicitly until one succeeds. One attempt at a time, shared.
  let connected = false;
  let connecting: Promise<void> | undefined;
  const connect = (signal: AbortSignal | undefined, what: string): Promise<void> => {
    if (connected) return Promise.resolve();
    // A closed store stays closed: connecting now would open the client again.
    if (closing !== undefined) return Promise.reject(new ToolplaneError('TEMPORARY_UNAVAILABLE', `${what}: the store is closed`));
    connecting ??= client
      .connect()
      .then(() => void (connected = true))
      .finally(() => (connecting = undefined));
    return raceAbort(connecting, signal, what);
  };
  let known: StoreCapabilities | undefined;
  // One buildInfo at a time, shared by every caller; forgotten when it fails, so the next caller asks again.
  let asking: Promise<StoreCapabilities> | undefined;
  const store: Store = {
    db,
    dbName,
    displayUrl,
    collection<TDoc extends Document>(definition: CollectionDefinition<TDoc>): StoreCollection<TDoc> {
      return { name: definition.name, definition, raw: db.collection<TDoc>(definition.name), store };
    },
    capabilities(signal?: AbortSignal): Promise<StoreCapabilities> {
      if (known !== undefined) return Promise.resolve(known);
      const what = `asking ${displayUrl} what it supports`;
      asking ??= connect(undefined, what)
        .then(() => db.command({ buildInfo: 1 }))
        .then((buildInfo) => (known = capabilitiesFromBuildInfo(buildInfo)))
        .catch((error: unknown) => {
          const translated = toStoreError(error, what);
          throw new ToolplaneError(translated.code, scrubCredentials(translated.message, url), { cause: error, ...(translated.details ? { details: translated.details } : {}) });
        })
        .finally(() => (asking = undefined));
      return raceAbort(asking, signal, what);
    },
    async ping(signal?: AbortSignal): Promise<void> {
      const bounded = withDeadline(signal, defaultPingTimeoutMs);
      try {
        await connect(bounded, `connecting to ${displayUrl}`);
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
