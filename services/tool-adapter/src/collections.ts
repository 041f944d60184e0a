import type { ApprovalRequested, ToolInvocation } from '@toolplane/contracts';
import { defineCollection } from '@toolplane/store';

/**
 * A stored ToolInvocation. `_id` is derived from (tenant, workspace, idempotencyKey), so one logical call keeps one
 * document across its attempts. `leaseUntil` is the processing lease: while it lies in the future, the handler that
 * last wrote the document may still be working on it (a redelivery joins instead of taking over). `outbox` holds the
 * ApprovalRequested event of a parked call, written with the parking, so a redelivery after a crash can publish it.
 */
export type StoredInvocation = ToolInvocation & { _id: string; leaseUntil?: string; outbox?: ApprovalRequested[] };

/** The `tool_invocations` collection and the indexes its queries and invariants need. */
export const toolInvocations = defineCollection<StoredInvocation>({
  name: 'tool_invocations',
  indexes: [
    // One ToolInvocation per idempotency key in a scope: the authority behind "never executed twice".
    { name: 'tenant_workspace_idempotency_key', key: { tenant: 1, workspace: 1, idempotencyKey: 1 }, unique: true },
    { name: 'invocation', key: { invocationId: 1 }, unique: true },
    { name: 'tenant_workspace_tool_call', key: { tenant: 1, workspace: 1, toolCallId: 1 } },
    { name: 'state_updated', key: { state: 1, updatedAt: 1 } },
    { name: 'tenant_workspace_approval', key: { tenant: 1, workspace: 1, approvalId: 1 } },
  ],
});

/** Every collection the tool-adapter service owns. */
export const collections = [toolInvocations];
