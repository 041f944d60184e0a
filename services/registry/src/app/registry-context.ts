import type { CheckToolPublicationRequest, McpServerRecord, PublicationConflict, RegistryEvent, ReleaseRecord, Scope, ServerNameRecord, ToolDescriptor, ToolDescriptorRecord } from '@toolplane/contracts';
import type { EventStore, StoredAppend } from '@toolplane/event-store';
import type { StoreCollection } from '@toolplane/store';
import type { McpGateway } from '../adapters/mcp-gateway.js';
import type { ServerReadModel, DescriptorReadModel } from '../collections.js';

/** The registry's record: one event store per aggregate kind, all in the registry's private stream. */
export interface RegistryStores {
  readonly servers: EventStore<McpServerRecord>;
  readonly descriptors: EventStore<ToolDescriptorRecord>;
  readonly names: EventStore<ServerNameRecord>;
  readonly releases: EventStore<ReleaseRecord>;
  /** Every append of the scope's release aggregates, in stream order (releases are few and short: listed from the record). */
  readonly releaseAppends: (scope: Scope, signal?: AbortSignal) => Promise<readonly StoredAppend<ReleaseRecord>[]>;
}

/** What the registry asks the tool adapter, which holds policy bundles and agent profiles. */
export interface PolicyChecks {
  /** Whether calls through a server naming this bundle could be governed (`default` always can). */
  policyBundleExists(scope: Scope, name: string, signal?: AbortSignal): Promise<boolean>;
  /** The agent profiles of the workspace that list the tool but may not use it at this class and risk, or not read it at this classification (D21). */
  publicationConflicts(scope: Scope, tool: CheckToolPublicationRequest, signal?: AbortSignal): Promise<PublicationConflict[]>;
}

/** What the registry's use cases run with: the record, the read models its list queries read, MCP, publication, the clock and ids. */
export interface RegistryContext {
  readonly stores: RegistryStores;
  /** Read models folded from the record by the projector; only list queries read them, never a decision. */
  readonly readModels: { readonly servers: StoreCollection<ServerReadModel>; readonly descriptors: StoreCollection<DescriptorReadModel> };
  /** Resolves once the read models hold every change appended before it was called (bounded: a lagging projector delays a list, never fails it). */
  readonly readModelsCaughtUp: (signal?: AbortSignal) => Promise<void>;
  readonly mcp: McpGateway;
  /** Publishes lifecycle events under their deterministic ids (a republish is dropped as a duplicate). */
  readonly publishEvents: (events: readonly RegistryEvent[], signal?: AbortSignal) => Promise<void>;
  /** Writes a descriptor to the KV read model; a version never overwrites a newer one. */
  readonly publishDescriptor: (descriptor: ToolDescriptor, signal?: AbortSignal) => Promise<void>;
  /** Now, as an ISO instant. */
  readonly now: () => string;
  readonly newId: () => string;
  /** Consecutive failed health checks after which an Active server is Degraded. */
  readonly failureThreshold: number;
  /**
   * The tool adapter's policy checks: a server naming a bundle that does not exist is refused at registration, and
   * a bind reports the agent profiles its tool conflicts with. Without them neither is checked (the adapter still
   * refuses calls through a server whose bundle is missing), and a bind says so in `conflictsUnknown`.
   */
  readonly policies?: PolicyChecks | undefined;
  /** Hears about a registration whose policy bundle could not be checked (the registration goes on). */
  readonly onPolicyCheckError?: (error: unknown, what: string) => void;
  /**
   * Hears about a publication (lifecycle events, the descriptor read model) that failed after its change was
   * appended: the change is stored, and the registry's publisher consumer publishes it from the record.
   */
  readonly onPublishError?: (error: unknown, what: string) => void;
}

/** Who asked and when, for the events a change records. */
export interface Actor {
  readonly actor?: string | undefined;
  readonly at: string;
}
