// The read side: calls, FlowRun journals and chain verification, always in the scope the request's subject
// names and in the live generation.
import {
  ToolplaneError,
  type FlowJournalReply,
  type FlowJournalRequest,
  type GetCallReply,
  type ListCallsReply,
  type ListCallsRequest,
  type RuntimeToolCallDocument,
  type RuntimeToolCallSummary,
  type Scope,
  type VerifyChainReply,
} from '@toolplane/contracts';
import { findByIds, findPage, toStoreError, type Filter, type Store } from '@toolplane/store';
import { ChainVerifier, chainIdRange } from './audit-chain.js';
import { attemptViews, compact } from './call-fold.js';
import { auditChain, auditChainHeads, flowJournalCollection, runtimeToolCallsCollection, type AuditChainDocument } from './collections.js';
import type { Generations } from './generations.js';

function summaryOf(document: RuntimeToolCallDocument): RuntimeToolCallSummary {
  const { _id, version: _version, attempts: _attempts, sequenceHighWater: _marks, ...summary } = document;
  return summary;
}

/** One call of the scope; NOT_FOUND when there is none. */
export async function getCall(store: Store, generations: Generations, scope: Scope, toolCallId: string, signal?: AbortSignal): Promise<GetCallReply> {
  const generation = await generations.live(signal);
  const [document] = await findByIds(store.collection(runtimeToolCallsCollection(generation)), [`${scope.tenant}/${scope.workspace}/${toolCallId}`], signal ? { signal } : {});
  if (!document) throw new ToolplaneError('NOT_FOUND', `no tool call ${toolCallId} in ${scope.tenant}/${scope.workspace}`);
  const { _id, version: _version, attempts, ...call } = document;
  return { call: { ...call, attempts: attemptViews(attempts) } };
}

/** A page of the scope's calls, latest activity first. */
export async function listCalls(store: Store, generations: Generations, scope: Scope, request: ListCallsRequest, signal?: AbortSignal): Promise<ListCallsReply> {
  const generation = await generations.live(signal);
  const filter = compact({
    tenant: scope.tenant,
    workspace: scope.workspace,
    flowRunId: request.flowRunId,
    agentId: request.agentId,
    agentRevision: request.agentRevision,
    toolId: request.toolId,
    state: request.state,
    correlationId: request.correlationId,
    idempotencyKey: request.idempotencyKey,
    // Stored times are normalised ISO strings, so they compare as instants.
    lastEventAt: request.since === undefined ? undefined : { $gte: new Date(request.since).toISOString() },
  }) as Filter<RuntimeToolCallDocument>;
  const page = await findPage(store.collection(runtimeToolCallsCollection(generation)), {
    filter,
    sortBy: 'lastEventAt',
    direction: 'desc',
    limit: request.limit,
    ...(request.after === undefined ? {} : { after: request.after }),
    ...(signal ? { signal } : {}),
  });
  return { items: page.items.map(summaryOf), next: page.next };
}

/** A page of a FlowRun's journal of the scope, in order. */
export async function flowJournal(store: Store, generations: Generations, scope: Scope, request: FlowJournalRequest, signal?: AbortSignal): Promise<FlowJournalReply> {
  const generation = await generations.live(signal);
  const page = await findPage(store.collection(flowJournalCollection(generation)), {
    filter: { tenant: scope.tenant, workspace: scope.workspace, flowRunId: request.flowRunId },
    sortBy: 'orderKey',
    direction: 'asc',
    limit: request.limit,
    ...(request.after === undefined ? {} : { after: request.after }),
    ...(signal ? { signal } : {}),
  });
  return { flowRunId: request.flowRunId, entries: page.items.map(({ _id, ...entry }) => entry), next: page.next };
}

/** Walks a tenant's audit chain from its first entry and reports the first break, naming the entry. */
export async function verifyChain(store: Store, tenant: string, signal?: AbortSignal): Promise<VerifyChainReply> {
  const verifier = new ChainVerifier(tenant);
  const { from, to } = chainIdRange(tenant);
  try {
    const cursor = store
      .collection(auditChain)
      .raw.find({ _id: { $gte: from, $lt: to } } as Filter<AuditChainDocument>, { sort: { _id: 1 }, batchSize: 1000, signal });
    try {
      for await (const entry of cursor) {
        if (!verifier.push(entry)) break;
      }
    } finally {
      await cursor.close();
    }
  } catch (error) {
    throw toStoreError(error, `reading the audit chain of ${tenant}`, signal);
  }
  const [recorded] = await findByIds(store.collection(auditChainHeads), [tenant], signal ? { signal } : {});
  const firstBreak = verifier.finish(recorded ? { position: recorded.position, hash: recorded.hash } : undefined);
  const head = verifier.head;
  return compact({
    tenant,
    ok: firstBreak === undefined,
    entries: verifier.entries,
    verifiedThrough: head.position,
    headHash: head.position > 0 ? head.hash : undefined,
    firstBreak,
  });
}
