import type { CachedAccessToken, Connection, SecretLease } from '@toolplane/contracts';
import { defineCollection } from '@toolplane/store';

/** A stored connection: `_id` is its connectionId. */
export type ConnectionDocument = Connection & { _id: string };
/** A stored lease: `_id` is its leaseId. */
export type SecretLeaseDocument = SecretLease & { _id: string };
/** A cached access token: `_id` is its connection's id. */
export type AccessTokenDocument = CachedAccessToken & { _id: string };

/** The `connections` collection and the indexes its queries and invariants need. */
export const connections = defineCollection<ConnectionDocument>({
  name: 'connections',
  indexes: [
    { name: 'tenant_workspace_connection', key: { tenant: 1, workspace: 1, connectionId: 1 }, unique: true },
    { name: 'tenant_workspace_name', key: { tenant: 1, workspace: 1, name: 1 }, unique: true },
  ],
});

/** The `secret_leases` collection: at most one lease per invocation and connection, found by expiry for the sweeper. */
export const secretLeases = defineCollection<SecretLeaseDocument>({
  name: 'secret_leases',
  indexes: [
    { name: 'lease', key: { leaseId: 1 }, unique: true },
    { name: 'invocation_connection', key: { tenant: 1, workspace: 1, invocationId: 1, connectionId: 1 }, unique: true },
    { name: 'connection_expires', key: { connectionId: 1, expiresAt: 1 } },
    { name: 'state_expires', key: { state: 1, expiresAt: 1 } },
  ],
});

/** The `access_tokens` collection: the last access token of each oauth2 connection, encrypted, shared by replicas. */
export const accessTokens = defineCollection<AccessTokenDocument>({
  name: 'access_tokens',
  indexes: [{ name: 'tenant_workspace_connection', key: { tenant: 1, workspace: 1, connectionId: 1 }, unique: true }],
});

/** Every collection the secret-broker service owns. */
export const collections = [connections, secretLeases, accessTokens];
