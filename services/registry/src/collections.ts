import type { McpServer, ToolDescriptor } from '@toolplane/contracts';
import { defineCollection } from '@toolplane/store';

// MongoDB holds read models only: the projector folds the registry's stream into these, one document per aggregate,
// written whole by `_id`. No decision reads them; the list queries do.

/**
 * An McpServer as the list queries read it, keyed by its id. `nameClaim` (the name while live, `{name}~{serverId}`
 * once retired) keeps the unique index of databases written before the read model satisfied.
 */
export type ServerReadModel = McpServer & { _id: string; nameClaim: string };

/** A ToolDescriptor version as the list queries read it, keyed by `{tenant}/{workspace}/{toolId}/{toolVersion}`. */
export type DescriptorReadModel = ToolDescriptor & { _id: string };

/** The `mcp_servers` read model and the indexes its queries need. */
export const mcpServers = defineCollection<ServerReadModel>({
  name: 'mcp_servers',
  indexes: [
    { name: 'tenant_workspace_registered', key: { tenant: 1, workspace: 1, registeredAt: 1 } },
    { name: 'state', key: { state: 1 } },
  ],
});

/** The `tool_descriptors` read model and the indexes its queries need. */
export const toolDescriptors = defineCollection<DescriptorReadModel>({
  name: 'tool_descriptors',
  indexes: [{ name: 'tenant_workspace_server', key: { tenant: 1, workspace: 1, mcpServerId: 1 } }],
});

/** Every collection the registry service owns. */
export const collections = [mcpServers, toolDescriptors];

/** The `_id` of a descriptor version's read-model document. */
export function descriptorDocumentId(descriptor: Pick<ToolDescriptor, 'tenant' | 'workspace' | 'toolId' | 'toolVersion'>): string {
  return `${descriptor.tenant}/${descriptor.workspace}/${descriptor.toolId}/${descriptor.toolVersion}`;
}

/** The name claim a server's read model carries: its name while not retired, a unique retired form afterwards. */
export function nameClaimOf(server: Pick<McpServer, 'name' | 'serverId' | 'state'>): string {
  return server.state === 'Retired' ? `${server.name}~${server.serverId}` : server.name;
}
