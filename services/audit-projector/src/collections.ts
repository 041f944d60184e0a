import type { AuditChainEntry, FlowJournalEntry, RuntimeToolCallDocument } from '@toolplane/contracts';
import { defineCollection, ensureIndexes, type CollectionDefinition, type Store, type StoreCapabilities } from '@toolplane/store';

// The projections that can be rebuilt live in generations: generation 1 under the plain names, generation n in
// `<name>_g<n>`. FerretDB 1.x can neither rename collections atomically nor run transactions, so a rebuild fills
// fresh collections and then moves the pointer (generations.ts, in JetStream) that every reader and writer follows.

const generationName = (base: string, generation: number) => (generation === 1 ? base : `${base}_g${generation}`);

/** Stored journal entries carry their id. */
export type FlowJournalDocument = FlowJournalEntry & { _id: string };

/** Stored chain entries carry their id (`{tenant}/{position}`). */
export type AuditChainDocument = AuditChainEntry & { _id: string };

/** Where a tenant's chain ended when an appender last recorded it: a hint, never trusted over the entries. */
export interface AuditChainHeadDocument {
  _id: string;
  position: number;
  hash: string;
  updatedAt: string;
}

// Every list query is scoped to a tenant and workspace and ordered by latest activity (then _id, for pages).
const byActivity = { lastEventAt: -1, _id: -1 } as const;

/**
 * Whether the server's queries use secondary indexes. FerretDB 1.x (SQLite) answers every query but an exact
 * `{_id}` with a scan, so there the query indexes would only be paid for on every insert (measured: 400 call
 * documents take 270-475 ms with the six indexes, 120-175 ms without), and they are not created.
 */
export function usesQueryIndexes(capabilities: StoreCapabilities): boolean {
  return capabilities.server === 'mongodb';
}

/** The `runtime_tool_calls` collection of a generation, with the indexes `calls list` filters and pages with. */
export function runtimeToolCallsCollection(generation: number, queryIndexes = true): CollectionDefinition<RuntimeToolCallDocument> {
  return defineCollection<RuntimeToolCallDocument>({
    name: generationName('runtime_tool_calls', generation),
    indexes: !queryIndexes ? [] : [
      { name: 'scope_activity', key: { tenant: 1, workspace: 1, ...byActivity } },
      { name: 'scope_flow_run_activity', key: { tenant: 1, workspace: 1, flowRunId: 1, ...byActivity } },
      { name: 'scope_agent_activity', key: { tenant: 1, workspace: 1, agentId: 1, ...byActivity } },
      { name: 'scope_tool_activity', key: { tenant: 1, workspace: 1, toolId: 1, ...byActivity } },
      { name: 'scope_state_activity', key: { tenant: 1, workspace: 1, state: 1, ...byActivity } },
      { name: 'scope_idempotency_key_activity', key: { tenant: 1, workspace: 1, idempotencyKey: 1, ...byActivity } },
    ],
  });
}

/** The `flow_journal` collection of a generation: entries keyed by event, read per FlowRun in order. */
export function flowJournalCollection(generation: number, queryIndexes = true): CollectionDefinition<FlowJournalDocument> {
  return defineCollection<FlowJournalDocument>({
    name: generationName('flow_journal', generation),
    indexes: !queryIndexes ? [] : [{ name: 'scope_flow_run_order', key: { tenant: 1, workspace: 1, flowRunId: 1, orderKey: 1, _id: 1 } }],
  });
}

/** The `audit_chain` collection: positions are unique by `_id`, and an event is chained once per tenant. */
export const auditChain = defineCollection<AuditChainDocument>({
  name: 'audit_chain',
  indexes: [{ name: 'tenant_event', key: { tenant: 1, eventId: 1 }, unique: true }],
});

/** The recorded head of each tenant's chain. */
export const auditChainHeads = defineCollection<AuditChainHeadDocument>({ name: 'audit_chain_heads' });

/**
 * Every collection the audit-projector service owns (the first generation of the rebuildable ones), with the
 * indexes every server needs; the query indexes come from `collectionsFor` (and `ensureQueryIndexes` for a rebuild's
 * generation), where the server uses them.
 */
export const collections = [runtimeToolCallsCollection(1, false), flowJournalCollection(1, false), auditChain, auditChainHeads];

/** Every collection the service owns with the first generation's query indexes where the server uses them: what the service kit ensures. */
export function collectionsFor(capabilities: StoreCapabilities): readonly CollectionDefinition[] {
  const queryIndexes = usesQueryIndexes(capabilities);
  return [runtimeToolCallsCollection(1, queryIndexes), flowJournalCollection(1, queryIndexes), auditChain, auditChainHeads];
}

/** Creates a generation's query indexes, on servers whose queries use them. */
export async function ensureQueryIndexes(store: Store, generation: number, signal?: AbortSignal): Promise<void> {
  const queryIndexes = usesQueryIndexes(await store.capabilities(signal));
  const definitions = [runtimeToolCallsCollection(generation, queryIndexes), flowJournalCollection(generation, queryIndexes)];
  await ensureIndexes(store, definitions, signal ? { signal } : {});
}
