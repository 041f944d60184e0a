import type { Approval } from '@toolplane/contracts';
import { defineCollection } from '@toolplane/store';

/** The `approvals` collection and the indexes its queries and invariants need. */
export const approvals = defineCollection<Approval>({
  name: 'approvals',
  indexes: [
    { name: 'approval', key: { approvalId: 1 }, unique: true },
    { name: 'tenant_workspace_state_requested', key: { tenant: 1, workspace: 1, state: 1, requestedAt: -1 } },
    // The expiry sweeper's query: pending approvals by deadline.
    { name: 'state_expires', key: { state: 1, expiresAt: 1 } },
  ],
});

/** Every collection the approval service owns. */
export const collections = [approvals];
