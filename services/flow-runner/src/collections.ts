import { defineCollection } from '@toolplane/store';

/** The `flows` collection and the indexes its queries and invariants need. */
export const flows = defineCollection({
  name: 'flows',
  indexes: [
    { name: 'tenant_workspace_flow_version', key: { tenant: 1, workspace: 1, flowId: 1, flowVersion: 1 }, unique: true },
  ],
});

/** The `tool_definitions` collection and the indexes its queries and invariants need. */
export const toolDefinitions = defineCollection({
  name: 'tool_definitions',
  indexes: [
    { name: 'tenant_workspace_name', key: { tenant: 1, workspace: 1, name: 1 }, unique: true },
  ],
});

/** The `flow_runs` collection and the indexes its queries and invariants need. */
export const flowRuns = defineCollection({
  name: 'flow_runs',
  indexes: [
    { name: 'flow_run', key: { flowRunId: 1 }, unique: true },
  ],
});

/** Every collection the flow-runner service owns. */
export const collections = [flows, toolDefinitions, flowRuns];
