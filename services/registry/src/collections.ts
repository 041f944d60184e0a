import type { McpServer, ToolDescriptor } from '@toolplane/contracts';
import { defineCollection } from '@toolplane/store';

/** The `mcp_servers` collection and the indexes its queries and invariants need. */
export const mcpServers = defineCollection<McpServer>({
  name: 'mcp_servers',
  indexes: [
    { name: 'tenant_workspace_server', key: { tenant: 1, workspace: 1, serverId: 1 }, unique: true },
    { name: 'tenant_workspace_name', key: { tenant: 1, workspace: 1, name: 1 }, unique: true },
    { name: 'state', key: { state: 1 } },
  ],
});

/** The `tool_descriptors` collection and the indexes its queries and invariants need. */
export const toolDescriptors = defineCollection<ToolDescriptor>({
  name: 'tool_descriptors',
  indexes: [
    { name: 'tenant_workspace_tool_version', key: { tenant: 1, workspace: 1, toolId: 1, toolVersion: 1 }, unique: true },
    { name: 'server_tool', key: { mcpServerId: 1, providerToolName: 1 } },
  ],
});

/** Every collection the registry service owns. */
export const collections = [mcpServers, toolDescriptors];
