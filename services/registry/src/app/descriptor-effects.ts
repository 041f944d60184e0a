import { mcpCapabilityOf, type McpCapabilitiesSnapshot, type Release, type ToolDefinitionChange } from '@toolplane/contracts';
import { retirementApplies, type DescriptorCommand } from '../core/descriptor-aggregate.js';
import { definitionDrift } from '../core/discovery-diff.js';
import { retirementReasonOf } from '../core/release-aggregate.js';
import { changeDescriptor, descriptorsOfServer, readServer, type LoadedServer } from './aggregates.js';
import type { Actor, RegistryContext } from './registry-context.js';

// What a server's change does to the descriptors bound to it: suspension on a changed definition, retirement when
// a tool disappears or the server retires, health following the server's state. The server's record names the
// tool ids its tools were bound under, so every descriptor version it affects is found in the record, not in a
// read model that may lag; each version then decides against its own stream.

/** The active descriptor versions bound to a server's tools. */
async function activeDescriptorsOf(context: RegistryContext, loaded: Pick<LoadedServer, 'server' | 'bindings'>, signal?: AbortSignal) {
  return (await descriptorsOfServer(context, loaded, signal)).filter((descriptor) => descriptor.active);
}

/**
 * Suspends every active binding whose pinned definition the new snapshot contradicts (McpToolDefinitionChanged and
 * retirement for DefinitionChanged) and retires those whose tool disappeared (ToolRemoved).
 */
export async function applyDefinitionDrift(context: RegistryContext, loaded: Pick<LoadedServer, 'server' | 'bindings'>, snapshot: McpCapabilitiesSnapshot, who: Actor, signal?: AbortSignal): Promise<ToolDefinitionChange[]> {
  const changes: ToolDefinitionChange[] = [];
  for (const drift of definitionDrift(snapshot, await activeDescriptorsOf(context, loaded, signal))) {
    const command: DescriptorCommand = { type: 'SuspendDescriptor', change: drift.change, definitionHash: drift.definitionHash, at: who.at };
    const changed = await changeDescriptor(context, drift.descriptor, command, who, signal);
    if (changed.events.length === 0) continue;
    const capability = mcpCapabilityOf(drift.descriptor);
    changes.push({
      toolName: drift.descriptor.providerToolName,
      ...(capability === 'tool' ? {} : { capability }),
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
export async function syncDescriptorHealth(context: RegistryContext, loaded: Pick<LoadedServer, 'server' | 'bindings'>, who: Actor, signal?: AbortSignal): Promise<void> {
  const healthy = loaded.server.state === 'Active';
  for (const descriptor of await activeDescriptorsOf(context, loaded, signal)) {
    if (descriptor.healthy !== healthy) await changeDescriptor(context, descriptor, { type: 'SetDescriptorHealth', healthy, at: who.at }, who, signal);
  }
}

/** Retires every active descriptor of a retired server; returns how many it retired. */
export async function retireDescriptorsOf(context: RegistryContext, loaded: Pick<LoadedServer, 'server' | 'bindings'>, who: Actor, signal?: AbortSignal): Promise<number> {
  let retired = 0;
  for (const descriptor of await activeDescriptorsOf(context, loaded, signal)) {
    const changed = await changeDescriptor(context, descriptor, { type: 'RetireDescriptor', reason: 'ServerRetired', at: who.at }, who, signal);
    if (changed.events.length > 0) retired++;
  }
  return retired;
}

/**
 * Retires every active descriptor of a deprecated or revoked release in its workspace, with the release's in-flight
 * policy, and on a revocation those its deprecation retired too (the revocation's policy governs the calls left):
 * the release's record names the servers registered with it, and each server's record its bindings, so no
 * descriptor is missed for a read model that lags. Returns how many it retired (none on a repeat that finds them
 * retired already).
 */
export async function retireDescriptorsOfRelease(context: RegistryContext, release: Release, serverIds: readonly string[], who: Actor, signal?: AbortSignal): Promise<number> {
  if (release.state === 'Published') return 0;
  const reason = retirementReasonOf(release.state);
  const inFlight = release.inFlight;
  let retired = 0;
  for (const serverId of new Set(serverIds)) {
    // A server recorded by a registration that did not get as far as recording the server has nothing bound.
    const loaded = await readServer(context, release, serverId, signal);
    if (loaded === undefined) continue;
    for (const descriptor of await descriptorsOfServer(context, loaded, signal)) {
      // Checked here as well as by the decider: a server's long-retired versions cost no stream read.
      if (descriptor.releaseId !== release.releaseId || !retirementApplies(descriptor, reason)) continue;
      const changed = await changeDescriptor(context, descriptor, { type: 'RetireDescriptor', reason, inFlight, at: who.at }, who, signal);
      if (changed.events.length > 0) retired++;
    }
  }
  return retired;
}
