import { defineCollection } from '@toolplane/store';

/** The `runtime_tool_calls` collection and the indexes its queries and invariants need. */
export const runtimeToolCalls = defineCollection({
  name: 'runtime_tool_calls',
  indexes: [
    { name: 'tenant_workspace_tool_call', key: { tenant: 1, workspace: 1, toolCallId: 1 }, unique: true },
  ],
});

/** The `flow_journal` collection and the indexes its queries and invariants need. */
export const flowJournal = defineCollection({
  name: 'flow_journal',
  indexes: [
    { name: 'tenant_workspace_flow_run_sequence', key: { tenant: 1, workspace: 1, flowRunId: 1, sequence: 1 } },
    { name: 'event', key: { eventId: 1 }, unique: true },
  ],
});

/** The `audit_chain` collection and the indexes its queries and invariants need. */
export const auditChain = defineCollection({
  name: 'audit_chain',
  indexes: [
    // Each position of a tenant's chain is taken once: two replicas cannot fork it.
    { name: 'tenant_position', key: { tenant: 1, position: 1 }, unique: true },
    { name: 'tenant_event', key: { tenant: 1, eventId: 1 }, unique: true },
  ],
});

/** Every collection the audit-projector service owns. */
export const collections = [runtimeToolCalls, flowJournal, auditChain];
