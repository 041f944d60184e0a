import type { McpCapabilitiesSnapshot, McpServer, ToolDefinitionChange, ToolDescriptor } from '@toolplane/contracts';
import { changeAggregate } from '../adapters/aggregate-store.js';
import type { StoredDescriptor } from '../collections.js';
import { decideDescriptor, type DescriptorCommand } from '../core/descriptor-aggregate.js';
import { definitionDrift } from '../core/discovery-diff.js';
import { descriptorKind, publishToReadModel, toDescriptor, type Actor, type RegistryContext } from './registry-context.js';

// What a server's change does to the descriptors bound to it: suspension on a changed definition, retirement when
// a tool disappears or the server retires, health following the server's state.

/** The active descriptors bound to a server. */
export async function activeDescriptorsOf(context: RegistryContext, server: Pick<McpServer, 'tenant' | 'workspace' | 'serverId'>, signal?: AbortSignal): Promise<ToolDescriptor[]> {
  const documents = await context.descriptors.raw
    .find({ tenant: server.tenant, workspace: server.workspace, mcpServerId: server.serverId, active: true }, { signal })
    .toArray();
  return documents.map((document) => toDescriptor(document as StoredDescriptor));
}

/** Applies one command to one descriptor version and refreshes the read model; returns it as it is now. */
export async function changeDescriptor(context: RegistryContext, descriptor: ToolDescriptor, command: DescriptorCommand, who: Actor, signal?: AbortSignal) {
  const changed = await changeAggregate(
    context.outbox,
    descriptorKind(context, who),
    { tenant: descriptor.tenant, workspace: descriptor.workspace, toolId: descriptor.toolId, toolVersion: descriptor.toolVersion },
    (state) => decideDescriptor(command, state),
    { notFound: `no descriptor ${descriptor.toolId} version ${descriptor.toolVersion}`, ...(signal ? { signal } : {}) },
  );
  await publishToReadModel(context, changed.state, signal);
  return changed;
}

/**
 * Suspends every active binding whose pinned definition the new snapshot contradicts (McpToolDefinitionChanged and
 * retirement for DefinitionChanged) and retires those whose tool disappeared (ToolRemoved).
 */
export async function applyDefinitionDrift(context: RegistryContext, server: McpServer, snapshot: McpCapabilitiesSnapshot, who: Actor, signal?: AbortSignal): Promise<ToolDefinitionChange[]> {
  const changes: ToolDefinitionChange[] = [];
  for (const drift of definitionDrift(snapshot, await activeDescriptorsOf(context, server, signal))) {
    const command: DescriptorCommand = { type: 'SuspendDescriptor', change: drift.change, definitionHash: drift.definitionHash, at: who.at };
    const changed = await changeDescriptor(context, drift.descriptor, command, who, signal);
    if (changed.events.length === 0) continue;
    changes.push({
      toolName: drift.descriptor.providerToolName,
      change: drift.change,
      previousDefinitionHash: drift.descriptor.definitionHash,
      ...(drift.definitionHash === undefined ? {} : { definitionHash: drift.definitionHash }),
      toolId: drift.descriptor.toolId,
      toolVersion: drift.descriptor.toolVersion,
      descriptorNow: drift.change === 'Changed' ? 'DefinitionChanged' : 'ToolRemoved',
    });
  }
  return changes;
}

/** Marks the server's active descriptors healthy exactly while the server is Active. */
export async function syncDescriptorHealth(context: RegistryContext, server: McpServer, who: Actor, signal?: AbortSignal): Promise<void> {
  const healthy = server.state === 'Active';
  for (const descriptor of await activeDescriptorsOf(context, server, signal)) {
    if (descriptor.healthy !== healthy) await changeDescriptor(context, descriptor, { type: 'SetDescriptorHealth', healthy, at: who.at }, who, signal);
  }
}

/** Retires every active descriptor of a retired server; returns how many it retired. */
export async function retireDescriptorsOf(context: RegistryContext, server: McpServer, who: Actor, signal?: AbortSignal): Promise<number> {
  let retired = 0;
  for (const descriptor of await activeDescriptorsOf(context, server, signal)) {
    const changed = await changeDescriptor(context, descriptor, { type: 'RetireDescriptor', reason: 'ServerRetired', at: who.at }, who, signal);
    if (changed.events.length > 0) retired++;
  }
  return retired;
}
