import { mcpCapabilityOf, type EventMetadata, type McpServer, type McpServerRecord, type RegistryEvent, type Release, type ReleaseRecord, type Scope, type ToolDescriptor } from '@toolplane/contracts';
import type { DescriptorEvent } from './descriptor-aggregate.js';
import { deterministicEventId } from './event-ids.js';

/** Where an append's events come from: the aggregate (its stable key) and the stream sequence the append was stored at. */
export interface EventOrigin {
  readonly scope: Scope;
  /** A stable key of the aggregate, e.g. `server:{serverId}`. */
  readonly aggregate: string;
  /** The JetStream sequence of the append: with `aggregate`, it makes the event ids deterministic (one append per sequence). */
  readonly seq: number;
}

/** When and by whom a recorded event happened. */
interface Occurrence {
  readonly at: string;
  readonly actor?: string | undefined;
}

function metadataFor(origin: EventOrigin, index: number, occurred: Occurrence): EventMetadata {
  return {
    eventId: deterministicEventId(`${origin.aggregate}@${origin.seq}`, index),
    tenant: origin.scope.tenant,
    workspace: origin.scope.workspace,
    occurredAt: occurred.at,
    ...(occurred.actor === undefined ? {} : { actor: occurred.actor }),
  };
}

/** The lifecycle events a server change publishes (health bookkeeping and exceptions are recorded, not published). */
export function serverLifecycleEvents(events: readonly McpServerRecord[], server: McpServer, origin: EventOrigin): RegistryEvent[] {
  const out: RegistryEvent[] = [];
  for (const event of events) {
    const metadata = () => metadataFor(origin, out.length, event.type === 'ServerRegistered' ? { at: event.server.registeredAt, actor: event.actor } : event);
    switch (event.type) {
      case 'ServerRegistered':
        out.push({
          type: 'McpServerRegistered',
          data: {
            serverId: server.serverId,
            name: server.name,
            direction: server.direction,
            transport: server.transport,
            authentication: server.authentication,
            governancePolicyRef: server.governancePolicyRef,
          },
          metadata: metadata(),
        });
        break;
      case 'CapabilitiesDiscovered':
        out.push({
          type: 'McpCapabilitiesDiscovered',
          data: {
            serverId: server.serverId,
            protocolVersion: event.snapshot.protocolVersion,
            snapshotHash: event.snapshot.snapshotHash,
            toolCount: event.snapshot.tools.length,
            resourceCount: event.snapshot.resources.length,
            promptCount: event.snapshot.prompts.length,
          },
          metadata: metadata(),
        });
        break;
      case 'ServerStateChanged':
        out.push({
          type: 'McpServerStateChanged',
          data: {
            serverId: server.serverId,
            from: event.from,
            to: event.to,
            reason: (event.reason === undefined ? event.trigger : `${event.trigger}: ${event.reason}`).slice(0, 1024),
            version: origin.seq,
          },
          metadata: metadata(),
        });
        break;
      case 'HealthRecorded':
      case 'AuthenticationExceptionGranted':
      case 'ToolBindingRecorded':
        break;
    }
  }
  return out;
}

/** The lifecycle events a descriptor change publishes. */
export function descriptorLifecycleEvents(events: readonly DescriptorEvent[], descriptor: ToolDescriptor, origin: EventOrigin): RegistryEvent[] {
  const out: RegistryEvent[] = [];
  for (const event of events) {
    const metadata = () => metadataFor(origin, out.length, event.type === 'DescriptorBound' ? { at: event.descriptor.boundAt, actor: event.actor } : event);
    switch (event.type) {
      case 'DescriptorBound':
        // A flow tool published from a disabled definition never became invocable: it is listed, as retired (Disabled).
        if (!event.descriptor.active) {
          out.push({ type: 'ToolDescriptorRetired', data: { toolId: descriptor.toolId, toolVersion: descriptor.toolVersion, reason: event.descriptor.inactiveReason ?? 'Disabled' }, metadata: metadata() });
          break;
        }
        out.push({
          type: 'ToolDescriptorActivated',
          data: {
            toolId: descriptor.toolId,
            toolVersion: descriptor.toolVersion,
            kind: descriptor.kind,
            ...capabilityField(descriptor),
            sideEffectClass: descriptor.sideEffectClass,
            riskClass: descriptor.riskClass,
            ...(descriptor.mcpServerId === undefined ? {} : { mcpServerId: descriptor.mcpServerId }),
            definitionHash: descriptor.definitionHash,
          },
          metadata: metadata(),
        });
        break;
      case 'DescriptorSuspended':
        if (descriptor.mcpServerId === undefined) break;
        out.push({
          type: 'McpToolDefinitionChanged',
          data: {
            serverId: descriptor.mcpServerId,
            toolName: descriptor.providerToolName,
            ...capabilityField(descriptor),
            change: event.change,
            previousDefinitionHash: event.previousDefinitionHash,
            ...(event.definitionHash === undefined ? {} : { definitionHash: event.definitionHash }),
            toolId: descriptor.toolId,
            toolVersion: descriptor.toolVersion,
          },
          metadata: metadata(),
        });
        break;
      case 'DescriptorRetired':
        out.push({
          type: 'ToolDescriptorRetired',
          data: {
            toolId: descriptor.toolId,
            toolVersion: descriptor.toolVersion,
            reason: event.reason,
            // A release's retirement names the release and its in-flight policy: the approval service keeps or voids by it.
            ...(event.inFlight === undefined || descriptor.releaseId === undefined ? {} : { releaseId: descriptor.releaseId }),
            ...(event.inFlight === undefined ? {} : { inFlight: event.inFlight }),
          },
          metadata: metadata(),
        });
        break;
      case 'DescriptorHealthChanged':
        break;
    }
  }
  return out;
}

/** The `capability` of a resource or prompt descriptor's events; nothing for a tool. */
function capabilityField(descriptor: ToolDescriptor): { capability?: 'resource' | 'prompt' } {
  const capability = mcpCapabilityOf(descriptor);
  return capability === 'tool' ? {} : { capability };
}

/** The lifecycle events a release change publishes (the servers it records are not published). */
export function releaseLifecycleEvents(events: readonly ReleaseRecord[], release: Release, origin: EventOrigin): RegistryEvent[] {
  const out: RegistryEvent[] = [];
  for (const event of events) {
    const metadata = () => metadataFor(origin, out.length, event.type === 'ReleasePublished' ? { at: event.release.publishedAt, actor: event.actor } : event);
    switch (event.type) {
      case 'ReleasePublished':
        out.push({ type: 'ReleasePublished', data: { releaseId: release.releaseId, version: origin.seq }, metadata: metadata() });
        break;
      case 'ReleaseDeprecated':
      case 'ReleaseRevoked':
        out.push({
          type: event.type,
          data: { releaseId: release.releaseId, inFlight: event.inFlight, ...(event.reason === undefined ? {} : { reason: event.reason }), version: origin.seq },
          metadata: metadata(),
        });
        break;
      case 'ReleaseServerRecorded':
        break;
    }
  }
  return out;
}
