import { Connection, SecretLease, ToolplaneError, type Scope } from '@toolplane/contracts';
import { compareAndSet, toStoreError, type Filter, type StoreCollection } from '@toolplane/store';
import type { ConnectionDocument, SecretLeaseDocument } from './collections.js';
import { refIsId } from './core/connection-rules.js';

// Reads of connections and leases, always inside a scope, parsed against their contracts (which drops `_id`).

/** Finds the connection a ref (name or id) names in a scope; null if there is none. */
export async function findConnection(collection: StoreCollection<ConnectionDocument>, scope: Scope, ref: string, signal?: AbortSignal): Promise<Connection | null> {
  const filter: Filter<ConnectionDocument> = refIsId(ref) ? { tenant: scope.tenant, workspace: scope.workspace, connectionId: ref } : { tenant: scope.tenant, workspace: scope.workspace, name: ref };
  let document: ConnectionDocument | null;
  try {
    document = await collection.raw.findOne(filter, { signal });
  } catch (error) {
    throw toStoreError(error, 'reading a connection', signal);
  }
  return document === null ? null : parseConnection(document);
}

/** Finds a connection or fails with NOT_FOUND (a connection of another scope is not found either). */
export async function requireConnection(collection: StoreCollection<ConnectionDocument>, scope: Scope, ref: string, signal?: AbortSignal): Promise<Connection> {
  const connection = await findConnection(collection, scope, ref, signal);
  if (connection === null) throw new ToolplaneError('NOT_FOUND', `no connection ${ref} in this workspace`);
  return connection;
}

/** A stored connection checked against its contract. */
export function parseConnection(document: unknown): Connection {
  const parsed = Connection.safeParse(document);
  if (!parsed.success) throw new ToolplaneError('INTERNAL', 'a stored connection does not match its contract');
  return parsed.data;
}

/** A stored lease checked against its contract. */
export function parseLease(document: unknown): SecretLease {
  const parsed = SecretLease.safeParse(document);
  if (!parsed.success) throw new ToolplaneError('INTERNAL', 'a stored lease does not match its contract');
  return parsed.data;
}

/** Ends one active lease (Expired or Revoked) with a guarded write; false if another writer ended it first. */
export async function endLease(collection: StoreCollection<SecretLeaseDocument>, lease: SecretLease, state: 'Expired' | 'Revoked', now: Date, signal?: AbortSignal): Promise<boolean> {
  const result = await compareAndSet(
    collection,
    { id: lease.leaseId, expect: { version: lease.version, state: 'Active' }, where: { tenant: lease.tenant, workspace: lease.workspace }, set: { state, endedAt: now.toISOString() } },
    signal === undefined ? {} : { signal },
  );
  return result.ok;
}

/** Revokes every active lease of a connection; returns how many this call revoked. */
export async function revokeActiveLeases(collection: StoreCollection<SecretLeaseDocument>, connection: Connection, now: Date, signal?: AbortSignal): Promise<number> {
  let revoked = 0;
  for (;;) {
    let batch: SecretLeaseDocument[];
    try {
      batch = await collection.raw
        .find({ tenant: connection.tenant, workspace: connection.workspace, connectionId: connection.connectionId, state: 'Active' }, { limit: 200, signal })
        .toArray();
    } catch (error) {
      throw toStoreError(error, 'finding the leases of a connection', signal);
    }
    if (batch.length === 0) return revoked;
    for (const document of batch) if (await endLease(collection, parseLease(document), 'Revoked', now, signal)) revoked += 1;
  }
}
