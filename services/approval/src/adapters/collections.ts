import type { Approval } from '@toolplane/contracts';
import { defineCollection } from '@toolplane/store';

/** An approval as the read model holds it: the approval as folded from its stream, keyed by its approvalId. */
export type StoredApproval = Approval & { _id: string };

/** The `approvals` read model (folded by the projector, its only writer) and the indexes its queries need. */
export const approvals = defineCollection<StoredApproval>({
  name: 'approvals',
  indexes: [
    { name: 'tenant_workspace_state_requested', key: { tenant: 1, workspace: 1, state: 1, requestedAt: -1 } },
    // The expiry sweeper's query: pending approvals by deadline.
    { name: 'state_expires', key: { state: 1, expiresAt: 1 } },
    // Voiding: the approvals bound to a tool version the registry suspended or retired.
    { name: 'tenant_workspace_tool_version', key: { tenant: 1, workspace: 1, toolId: 1, toolVersion: 1 } },
  ],
});

/** Every collection the approval service owns. */
export const collections = [approvals];
