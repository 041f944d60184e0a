import type { ToolInvocation } from '@toolplane/contracts';
import { defineCollection } from '@toolplane/store';

/** The `tool_invocations` collection and the indexes its queries and invariants need. */
export const toolInvocations = defineCollection<ToolInvocation>({
  name: 'tool_invocations',
  indexes: [
    // One ToolInvocation per idempotency key in a scope: the authority behind "never executed twice".
    { name: 'tenant_workspace_idempotency_key', key: { tenant: 1, workspace: 1, idempotencyKey: 1 }, unique: true },
    { name: 'invocation', key: { invocationId: 1 }, unique: true },
    { name: 'tenant_workspace_tool_call', key: { tenant: 1, workspace: 1, toolCallId: 1 } },
    { name: 'state_updated', key: { state: 1, updatedAt: 1 } },
  ],
});

/** Every collection the tool-adapter service owns. */
export const collections = [toolInvocations];
