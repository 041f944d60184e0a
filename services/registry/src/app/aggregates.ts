import {
  ToolplaneError,
  compareToolVersions,
  flowProviderId,
  hasErrorCode,
  isFlowToolId,
  descriptorStreamId,
  serverStreamId,
  type McpServer,
  type McpServerRecord,
  type RegistryEvent,
  type Scope,
  type ToolDescriptor,
  type ToolDescriptorRecord,
} from '@toolplane/contracts';
import { foldEvents, handleCommand, isVersionConflict, type Decider } from '@toolplane/event-store';
import { descriptorDecider, type DescriptorCommand } from '../core/descriptor-aggregate.js';
import { flowToolVersions } from '../core/flow-tools.js';
import { serverDecider, type ServerAggregate, type ServerChange, type ToolBinding } from '../core/server-aggregate.js';
import { descriptorLifecycleEvents, serverLifecycleEvents } from '../core/wire-events.js';
import type { Actor, RegistryContext } from './registry-context.js';

// The registry's aggregates on the one write path: read the aggregate's events, decide, append at the version read
// (deciding again after a lost race), then publish what the append recorded. The version of a server or descriptor
// document is the stream version of its aggregate (the JetStream sequence of its last append): it only grows, and
// the event ids of an append derive from the aggregate and that sequence, so whoever publishes them (this handler
// now, the publisher consumer after a crash) publishes the same ids.

/** A server as its stream folds, with its version. */
export interface LoadedServer {
  readonly server: McpServer;
  readonly bindings: readonly ToolBinding[];
  readonly version: number;
}

/** What a change of a server did: the server after it and the events it appended (none: nothing to do). */
export interface ChangedServer extends LoadedServer {
  readonly events: readonly McpServerRecord[];
}

/** What a change of a descriptor version did. */
export interface ChangedDescriptor {
  readonly descriptor: ToolDescriptor;
  readonly events: readonly ToolDescriptorRecord[];
}

/** A decider whose events record who decided them. */
export function recordedBy<S, C, E extends { actor?: string | undefined }>(decider: Decider<S, C, E>, actor: string | undefined): Decider<S, C, E> {
  if (actor === undefined) return decider;
  return { ...decider, decide: (command, state) => decider.decide(command, state).map((event) => ({ ...event, actor })) };
}

function notFoundServer(scope: Scope, serverId: string): ToolplaneError {
  return new ToolplaneError('NOT_FOUND', `no MCP server ${serverId} in ${scope.tenant}/${scope.workspace}`);
}

/** The server with the version of its stream. */
export function serverAt(aggregate: ServerAggregate, version: number): McpServer | undefined {
  return aggregate.server === undefined ? undefined : { ...aggregate.server, version };
}

/** Reads a server's aggregate; undefined when the server was never registered. */
export async function readServer(context: RegistryContext, scope: Scope, serverId: string, signal?: AbortSignal): Promise<LoadedServer | undefined> {
  const stored = await context.stores.servers.readStream(serverStreamId(scope, serverId), signal ? { signal } : {});
  const aggregate = foldEvents(serverDecider, stored.events);
  const server = serverAt(aggregate, stored.version);
  return server === undefined ? undefined : { server, bindings: aggregate.bindings, version: stored.version };
}

/** Loads a server of the scope from the record; NOT_FOUND when there is none. */
export async function loadServer(context: RegistryContext, scope: Scope, serverId: string, signal?: AbortSignal): Promise<LoadedServer> {
  const loaded = await readServer(context, scope, serverId, signal);
  if (loaded === undefined) throw notFoundServer(scope, serverId);
  return loaded;
}

/** Publishes what an append recorded; a failure is reported, not thrown (the change is stored; the publisher consumer publishes it). */
async function publishAfterAppend(context: RegistryContext, what: string, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    context.onPublishError?.(error, what);
  }
}

/** The lifecycle events of one server append stored at `seq`. */
export function serverAppendEvents(server: McpServer, events: readonly McpServerRecord[], seq: number): RegistryEvent[] {
  return serverLifecycleEvents(events, server, { scope: server, aggregate: `server:${server.serverId}`, seq });
}

/** The lifecycle events of one descriptor append stored at `seq`. */
export function descriptorAppendEvents(descriptor: ToolDescriptor, events: readonly ToolDescriptorRecord[], seq: number): RegistryEvent[] {
  return descriptorLifecycleEvents(events, descriptor, { scope: descriptor, aggregate: `descriptor:${descriptorStreamId(descriptor, descriptor.toolId, descriptor.toolVersion)}`, seq });
}

/** Decides a change of a server against its record and appends it; NOT_FOUND when there is no such server. */
export async function changeServer(context: RegistryContext, scope: Scope, serverId: string, change: ServerChange, who: Actor, signal?: AbortSignal): Promise<ChangedServer> {
  const handled = await handleCommand(context.stores.servers, recordedBy(serverDecider, who.actor), serverStreamId(scope, serverId), change, signal ? { signal } : {}).catch((error: unknown) => {
    throw hasErrorCode(error) && error.code === 'NOT_FOUND' ? notFoundServer(scope, serverId) : error;
  });
  const server = serverAt(handled.newState, handled.nextExpectedVersion);
  if (server === undefined) throw notFoundServer(scope, serverId);
  if (handled.newEvents.length > 0) {
    await publishAfterAppend(context, `events of server ${serverId}`, () => context.publishEvents(serverAppendEvents(server, handled.newEvents, handled.nextExpectedVersion), signal));
  }
  return { server, bindings: handled.newState.bindings, version: handled.nextExpectedVersion, events: handled.newEvents };
}

/** Reads one descriptor version from the record; undefined when it was never bound. */
export async function readDescriptor(context: RegistryContext, scope: Scope, toolId: string, toolVersion: string, signal?: AbortSignal): Promise<ToolDescriptor | undefined> {
  const stored = await context.stores.descriptors.readStream(descriptorStreamId(scope, toolId, toolVersion), signal ? { signal } : {});
  const descriptor = foldEvents(descriptorDecider, stored.events);
  return descriptor === undefined ? undefined : { ...descriptor, version: stored.version };
}

// Versions are allocated 1, 2, … and a version exists only after its predecessor did, so reading them in order until
// the first that was never bound finds them all.
const maxVersionsRead = 1000;

/** Every version of a tool id in the scope, oldest first, from the record. */
export async function descriptorVersions(context: RegistryContext, scope: Scope, toolId: string, signal?: AbortSignal): Promise<ToolDescriptor[]> {
  // A flow tool's versions are its definitions' (not 1, 2, 3…): the reserved provider's record lists them.
  if (isFlowToolId(toolId)) {
    const provider = await readServer(context, scope, flowProviderId(scope), signal);
    return provider === undefined ? [] : listedVersions(context, scope, provider.bindings, toolId, signal);
  }
  const versions: ToolDescriptor[] = [];
  for (let n = 1; n <= maxVersionsRead; n++) {
    const descriptor = await readDescriptor(context, scope, toolId, String(n), signal);
    if (descriptor === undefined) break;
    versions.push(descriptor);
  }
  return versions.sort(compareToolVersions);
}

/** The versions of a tool id a server's binding records name exactly (the reserved flow provider's), oldest first. */
async function listedVersions(context: RegistryContext, scope: Scope, bindings: readonly ToolBinding[], toolId: string, signal?: AbortSignal): Promise<ToolDescriptor[]> {
  const versions: ToolDescriptor[] = [];
  for (const toolVersion of flowToolVersions(bindings, toolId)) {
    const descriptor = await readDescriptor(context, scope, toolId, toolVersion, signal);
    // A version recorded on the provider by a publication that crashed before binding it was never published.
    if (descriptor !== undefined) versions.push(descriptor);
  }
  return versions.sort(compareToolVersions);
}

/** The descriptor versions bound to a server's tools (any tool id its bindings recorded), oldest first per id. */
export async function descriptorsOfServer(context: RegistryContext, loaded: Pick<LoadedServer, 'server' | 'bindings'>, signal?: AbortSignal): Promise<ToolDescriptor[]> {
  const { server } = loaded;
  const out: ToolDescriptor[] = [];
  for (const toolId of new Set(loaded.bindings.map((binding) => binding.toolId))) {
    const listed = loaded.bindings.some((binding) => binding.toolId === toolId && binding.toolVersion !== undefined);
    const versions = listed ? await listedVersions(context, server, loaded.bindings, toolId, signal) : await descriptorVersions(context, server, toolId, signal);
    for (const descriptor of versions) {
      if (descriptor.mcpServerId === server.serverId) out.push(descriptor);
    }
  }
  return out;
}

async function publishDescriptorAppend(context: RegistryContext, descriptor: ToolDescriptor, events: readonly ToolDescriptorRecord[], seq: number, signal?: AbortSignal): Promise<void> {
  const what = `descriptor ${descriptor.toolId} version ${descriptor.toolVersion}`;
  await publishAfterAppend(context, `events of ${what}`, () => context.publishEvents(descriptorAppendEvents(descriptor, events, seq), signal));
  await publishAfterAppend(context, `read model of ${what}`, () => context.publishDescriptor(descriptor, signal));
}

/** Decides a command on one descriptor version and appends it; the read model follows. NOT_FOUND when the version was never bound. */
export async function changeDescriptor(context: RegistryContext, descriptor: Pick<ToolDescriptor, 'tenant' | 'workspace' | 'toolId' | 'toolVersion'>, command: DescriptorCommand, who: Actor, signal?: AbortSignal): Promise<ChangedDescriptor> {
  const handled = await handleCommand(context.stores.descriptors, recordedBy(descriptorDecider, who.actor), descriptorStreamId(descriptor, descriptor.toolId, descriptor.toolVersion), command, signal ? { signal } : {}).catch(
    (error: unknown) => {
      throw hasErrorCode(error) && error.code === 'NOT_FOUND' ? new ToolplaneError('NOT_FOUND', `no descriptor ${descriptor.toolId} version ${descriptor.toolVersion}`) : error;
    },
  );
  if (handled.newState === undefined) throw new ToolplaneError('NOT_FOUND', `no descriptor ${descriptor.toolId} version ${descriptor.toolVersion}`);
  const after: ToolDescriptor = { ...handled.newState, version: handled.nextExpectedVersion };
  if (handled.newEvents.length > 0) await publishDescriptorAppend(context, after, handled.newEvents, handled.nextExpectedVersion, signal);
  return { descriptor: after, events: handled.newEvents };
}

/**
 * Records a new descriptor version whose first events are decided already (a bind), if the version does not exist
 * yet. `created` false hands back the version another writer bound first, untouched.
 */
export async function createDescriptor(
  context: RegistryContext,
  descriptor: ToolDescriptor,
  events: readonly ToolDescriptorRecord[],
  who: Actor,
  signal?: AbortSignal,
): Promise<{ readonly created: boolean; readonly descriptor: ToolDescriptor }> {
  const recorded = who.actor === undefined ? events : events.map((event) => ({ ...event, actor: who.actor }));
  try {
    const appended = await context.stores.descriptors.appendToStream(descriptorStreamId(descriptor, descriptor.toolId, descriptor.toolVersion), recorded, { expectedVersion: 0, ...(signal ? { signal } : {}) });
    const after: ToolDescriptor = { ...descriptor, version: appended.nextExpectedVersion };
    await publishDescriptorAppend(context, after, recorded, appended.nextExpectedVersion, signal);
    return { created: true, descriptor: after };
  } catch (error) {
    if (!isVersionConflict(error)) throw error;
    const existing = await readDescriptor(context, descriptor, descriptor.toolId, descriptor.toolVersion, signal);
    if (existing === undefined) throw error;
    return { created: false, descriptor: existing };
  }
}
