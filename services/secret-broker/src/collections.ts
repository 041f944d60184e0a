import type { ConnectionSummary, SecretLease } from '@toolplane/contracts';
import { defineCollection } from '@toolplane/store';

// Read models only: the record is the broker's private stream, which the projector folds into these. Neither holds
// secret material (a connection's summary names the KEK its secret is wrapped with, nothing more).

/** A connection's summary: `_id` is its connectionId. */
export type ConnectionDocument = ConnectionSummary & { _id: string };
/** A lease record: `_id` is its leaseId. */
export type SecretLeaseDocument = SecretLease & { _id: string };

/** The `connections` read model (listConnections), one document per connection. */
export const connections = defineCollection<ConnectionDocument>({
  name: 'connections',
  indexes: [
    { name: 'tenant_workspace_connection', key: { tenant: 1, workspace: 1, connectionId: 1 }, unique: true },
    { name: 'tenant_workspace_name', key: { tenant: 1, workspace: 1, name: 1 }, unique: true },
  ],
});

/** The `secret_leases` read model: who was leased what until when; the sweeper finds due leases in it. */
export const secretLeases = defineCollection<SecretLeaseDocument>({
  name: 'secret_leases',
  indexes: [
    { name: 'invocation_connection', key: { tenant: 1, workspace: 1, invocationId: 1, connectionId: 1 }, unique: true },
    { name: 'connection_state', key: { connectionId: 1, state: 1 } },
    { name: 'state_expires', key: { state: 1, expiresAt: 1 } },
  ],
});

/** Every collection the secret-broker service owns. */
export const collections = [connections, secretLeases];
