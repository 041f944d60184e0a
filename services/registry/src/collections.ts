import type { McpServer, ToolDescriptor } from '@toolplane/contracts';
import { defineCollection } from '@toolplane/store';

/**
 * Bookkeeping the registry keeps beside each aggregate document, never shown outside the service: the lifecycle
 * events its last change produced and that may not be published yet (JSON text, in order). They are written in
 * the same compare-and-set as the change, published with deterministic ids, then cleared, so a crash between the
 * write and the publish loses no event and a retry emits none twice.
 */
export interface Outbox {
  outbox: string[];
}

/** An McpServer as stored: keyed by its id, with the name claim that keeps live names unique per workspace. */
export type StoredServer = McpServer &
  Outbox & {
    _id: string;
    /** The name while the server is not retired; afterwards `{name}~{serverId}`, freeing the name for a new server. */
    nameClaim: string;
  };

/** A ToolDescriptor version as stored, keyed by `{tenant}/{workspace}/{toolId}/{toolVersion}`. */
export type StoredDescriptor = ToolDescriptor & Outbox & { _id: string };

/** Who watches which server: one lease per server, held by one replica until it lapses. */
export interface WatchLease {
  _id: string;
  holder: string;
  /** Epoch milliseconds after which another replica may take the lease over. */
  expiresAt: number;
  version: number;
}

/** The `mcp_servers` collection and the indexes its queries and invariants need. */
export const mcpServers = defineCollection<StoredServer>({
  name: 'mcp_servers',
  indexes: [
    { name: 'tenant_workspace_server', key: { tenant: 1, workspace: 1, serverId: 1 }, unique: true },
    { name: 'tenant_workspace_name_claim', key: { tenant: 1, workspace: 1, nameClaim: 1 }, unique: true },
    { name: 'tenant_workspace_registered', key: { tenant: 1, workspace: 1, registeredAt: 1 } },
    { name: 'state', key: { state: 1 } },
  ],
});

/** The `tool_descriptors` collection and the indexes its queries and invariants need. */
export const toolDescriptors = defineCollection<StoredDescriptor>({
  name: 'tool_descriptors',
  indexes: [
    { name: 'tenant_workspace_tool_version', key: { tenant: 1, workspace: 1, toolId: 1, toolVersion: 1 }, unique: true },
    { name: 'server_tool', key: { mcpServerId: 1, providerToolName: 1 } },
  ],
});

/** The `registry_watch_leases` collection: which replica watches which server. */
export const watchLeases = defineCollection<WatchLease>({ name: 'registry_watch_leases' });

/** Every collection the registry service owns. */
export const collections = [mcpServers, toolDescriptors, watchLeases];
