import { defineCollection } from '@toolplane/store';

/** The `connections` collection and the indexes its queries and invariants need. */
export const connections = defineCollection({
  name: 'connections',
  indexes: [
    { name: 'tenant_workspace_connection', key: { tenant: 1, workspace: 1, connectionId: 1 }, unique: true },
    { name: 'tenant_workspace_name', key: { tenant: 1, workspace: 1, name: 1 }, unique: true },
  ],
});

/** The `secret_leases` collection and the indexes its queries and invariants need. */
export const secretLeases = defineCollection({
  name: 'secret_leases',
  indexes: [
    { name: 'lease', key: { leaseId: 1 }, unique: true },
    { name: 'connection_expires', key: { connectionId: 1, expiresAt: 1 } },
  ],
});

/** Every collection the secret-broker service owns. */
export const collections = [connections, secretLeases];
