import type { AuditChainEntry, FlowJournalEntry, ProjectionGenerations, RuntimeToolCallDocument } from '@toolplane/contracts';
import { defineCollection, type CollectionDefinition } from '@toolplane/store';

// The projections that can be rebuilt live in generations: generation 1 under the plain names, generation n in
// `<name>_g<n>`. FerretDB 1.x can neither rename collections atomically nor run transactions, so a rebuild fills
// fresh collections and then moves the pointer (projection_generations) that every reader and writer follows.

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

/** Who appends to a tenant's chain right now; appenders take turns so they do not race for the same positions. */
export interface AuditChainLockDocument {
  _id: string;
  holder: string;
  expiresAt: Date;
}

// Every list query is scoped to a tenant and workspace and ordered by latest activity (then _id, for pages).
const byActivity = { lastEventAt: -1, _id: -1 } as const;

/** The `runtime_tool_calls` collection of a generation, with the indexes `calls list` filters and pages with. */
export function runtimeToolCallsCollection(generation: number): CollectionDefinition<RuntimeToolCallDocument> {
  return defineCollection<RuntimeToolCallDocument>({
    name: generationName('runtime_tool_calls', generation),
    indexes: [
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
export function flowJournalCollection(generation: number): CollectionDefinition<FlowJournalDocument> {
  return defineCollection<FlowJournalDocument>({
    name: generationName('flow_journal', generation),
    indexes: [{ name: 'scope_flow_run_order', key: { tenant: 1, workspace: 1, flowRunId: 1, orderKey: 1, _id: 1 } }],
  });
}

/** The `audit_chain` collection: positions are unique by `_id`, and an event is chained once per tenant. */
export const auditChain = defineCollection<AuditChainDocument>({
  name: 'audit_chain',
  indexes: [{ name: 'tenant_event', key: { tenant: 1, eventId: 1 }, unique: true }],
});

/** The recorded head of each tenant's chain. */
export const auditChainHeads = defineCollection<AuditChainHeadDocument>({ name: 'audit_chain_heads' });

/** The appender lock of each tenant's chain. */
export const auditChainLocks = defineCollection<AuditChainLockDocument>({ name: 'audit_chain_locks' });

/** The pointer to the live generation of the rebuildable projections. */
export const projectionGenerations = defineCollection<ProjectionGenerations>({ name: 'projection_generations' });

/** Every collection the audit-projector service owns (the first generation of the rebuildable ones). */
export const collections = [runtimeToolCallsCollection(1), flowJournalCollection(1), auditChain, auditChainHeads, auditChainLocks, projectionGenerations];
