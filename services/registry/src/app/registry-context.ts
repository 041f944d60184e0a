import { McpServer, ToolDescriptor, type Scope } from '@toolplane/contracts';
import type { StoreCollection } from '@toolplane/store';
import type { AggregateKind } from '../adapters/aggregate-store.js';
import type { OutboxDeps } from '../adapters/event-outbox.js';
import type { McpGateway } from '../adapters/mcp-gateway.js';
import type { StoredDescriptor, StoredServer } from '../collections.js';
import { foldDescriptor, type DescriptorEvent } from '../core/descriptor-aggregate.js';
import { foldServer, type ServerEvent } from '../core/server-aggregate.js';
import { descriptorLifecycleEvents, serverLifecycleEvents } from '../core/wire-events.js';
import type { DescriptorPublisher } from '../read-model/descriptor-publisher.js';

/** What the registry's use cases run with: stores, MCP, the event outbox, the read model, the clock and ids. */
export interface RegistryContext {
  readonly outbox: OutboxDeps;
  readonly servers: StoreCollection<StoredServer>;
  readonly descriptors: StoreCollection<StoredDescriptor>;
  readonly mcp: McpGateway;
  readonly publishDescriptor: DescriptorPublisher;
  /** Now, as an ISO instant. */
  readonly now: () => string;
  readonly newId: () => string;
  /** Consecutive failed health checks after which an Active server is Degraded. */
  readonly failureThreshold: number;
  /** Hears about a read-model write that failed after its change committed (the sweeper writes it again). */
  readonly onReadModelError?: (error: unknown, descriptor: ToolDescriptor) => void;
}

/** Who asked and when, for the events a change produces. */
export interface Actor {
  readonly actor?: string | undefined;
  readonly at: string;
}

/** The `_id` of a descriptor version. */
export function descriptorDocumentId(scope: Scope, toolId: string, toolVersion: string): string {
  return `${scope.tenant}/${scope.workspace}/${toolId}/${toolVersion}`;
}

/** The name claim a server holds: its name while not retired, a unique retired form afterwards. */
export function nameClaimOf(server: Pick<McpServer, 'name' | 'serverId' | 'state'>): string {
  return server.state === 'Retired' ? `${server.name}~${server.serverId}` : server.name;
}

/** The stored server without its bookkeeping. */
export function toServer(document: StoredServer): McpServer {
  return McpServer.parse(document);
}

/** The stored descriptor without its bookkeeping. */
export function toDescriptor(document: StoredDescriptor): ToolDescriptor {
  return ToolDescriptor.parse(document);
}

/** The McpServer aggregate as the aggregate store handles it. */
export function serverKind(context: RegistryContext, who: Actor): AggregateKind<McpServer, ServerEvent, StoredServer> {
  return {
    collection: context.servers,
    toState: toServer,
    fold: (state, events) => foldServer(state, events) ?? state,
    lifecycleEvents: (events, next, versionAfter) =>
      serverLifecycleEvents(events, next, { scope: next, aggregate: `server:${next.serverId}`, versionAfter, at: who.at, actor: who.actor }),
    bookkeeping: (next, document) => (nameClaimOf(next) === document.nameClaim ? {} : { nameClaim: nameClaimOf(next) }),
  };
}

/** The ToolDescriptor aggregate as the aggregate store handles it. */
export function descriptorKind(context: RegistryContext, who: Actor): AggregateKind<ToolDescriptor, DescriptorEvent, StoredDescriptor> {
  return {
    collection: context.descriptors,
    toState: toDescriptor,
    fold: (state, events) => foldDescriptor(state, events) ?? state,
    lifecycleEvents: (events, next, versionAfter) =>
      descriptorLifecycleEvents(events, next, { scope: next, aggregate: `descriptor:${descriptorDocumentId(next, next.toolId, next.toolVersion)}`, versionAfter, at: who.at, actor: who.actor }),
  };
}

/** Writes a descriptor to the read model; a failure is reported, not thrown: the change is committed already. */
export async function publishToReadModel(context: RegistryContext, descriptor: ToolDescriptor, signal?: AbortSignal): Promise<void> {
  try {
    await context.publishDescriptor(descriptor, signal);
  } catch (error) {
    context.onReadModelError?.(error, descriptor);
  }
}
