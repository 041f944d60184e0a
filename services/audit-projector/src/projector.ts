// One batch of accepted events, written to the projections: folded in memory per call first (so a call costs
// one write per batch whatever its number of events), then the calls, the FlowRun journals and the audit chain.
import { sha256Hex, type LifecycleEvent } from '@toolplane/contracts';
import { insertManyIfAbsent, toStoreError, type Store } from '@toolplane/store';
import type { ChainItem } from './audit-chain.js';
import { callKey, callSettled, emptyCallState, foldCallEvent, isCallEvent } from './call-fold.js';
import type { CallDelta, CallWriter } from './call-writer.js';
import type { ChainWriter } from './chain-writer.js';
import { auditChain, flowJournalCollection, runtimeToolCallsCollection } from './collections.js';
import type { AcceptedEvent } from './event-checks.js';
import type { Generations } from './generations.js';
import { journalEntryOf, type JournalRecord } from './journal-fold.js';
import { inWriteSpan } from './write-spans.js';

/** Where a batch goes: the live generation (re-checked after the write), or a fixed one for a rebuild. */
export type Target = { readonly kind: 'live' } | { readonly kind: 'generation'; readonly generation: number };

/** What writing a batch needs. */
export interface ProjectorWriters {
  readonly store: Store;
  /** The pointer to the live generation (read before and after a live batch). */
  readonly generations: Generations;
  readonly calls: CallWriter;
  /** Absent for a rebuild: the audit chain is appended to once, by the live projector. */
  readonly chain?: ChainWriter;
}

/** The writes one batch makes, computed without I/O. */
export interface BatchPlan {
  readonly calls: readonly CallDelta[];
  readonly journal: readonly JournalRecord[];
  readonly chain: ReadonlyMap<string, readonly ChainItem[]>;
}

/** Folds a batch: one delta per call, journal entries once each, chain items per tenant in arrival order. */
export function planBatch(accepted: readonly AcceptedEvent[]): BatchPlan {
  const deltas = new Map<string, CallDelta>();
  const journal = new Map<string, JournalRecord>();
  const chain = new Map<string, ChainItem[]>();
  for (const { event, canonical } of accepted) {
    const tenantItems = chain.get(event.metadata.tenant) ?? [];
    tenantItems.push({ event, eventHash: sha256Hex(canonical) });
    chain.set(event.metadata.tenant, tenantItems);
    if (!isCallEvent(event)) continue;
    const key = callKey(event);
    const { tenant, workspace, toolCallId } = event.metadata;
    const known = deltas.get(key);
    deltas.set(key, { key, scope: { tenant, workspace, toolCallId }, delta: foldCallEvent(known?.delta ?? emptyCallState, event) });
    const entry = journalEntryOf(event);
    if (entry !== undefined) journal.set(entry._id, entry);
  }
  return { calls: [...deltas.values()], journal: [...journal.values()], chain };
}

/** Whether a group's events may be written now: an event of no call at once, a call once it has settled. */
export function readyToWrite(events: readonly LifecycleEvent[]): boolean {
  const calls = events.filter(isCallEvent);
  return calls.length < events.length || callSettled(calls);
}

/** The group an event's message succeeds or fails with: its call, or the event itself. */
export function groupOfEvent(event: LifecycleEvent): string {
  return isCallEvent(event) ? `call:${callKey(event)}` : `event:${event.metadata.eventId}`;
}

async function writeGeneration(writers: ProjectorWriters, generation: number, plan: BatchPlan, signal?: AbortSignal): Promise<void> {
  await inWriteSpan(runtimeToolCallsCollection(generation).name, () => writers.calls.write(generation, plan.calls, signal));
  if (plan.journal.length > 0) {
    const journal = flowJournalCollection(generation);
    await inWriteSpan(journal.name, () => insertManyIfAbsent(writers.store.collection(journal), plan.journal, signal ? { signal } : {}));
  }
}

function appendChain(writers: ProjectorWriters, plan: BatchPlan, signal?: AbortSignal): Promise<void> | undefined {
  const chain = writers.chain;
  return chain === undefined ? undefined : inWriteSpan(auditChain.name, () => chain.append(plan.chain, signal));
}

/**
 * Writes a batch. For the live target the pointer is read before and after: a batch that straddles a
 * switch to a rebuilt generation is written into the new generation too, so that nothing acknowledged after
 * the switch is missing from it (the rebuild covers everything acknowledged before).
 */
export async function writeBatch(writers: ProjectorWriters, target: Target, accepted: readonly AcceptedEvent[], signal?: AbortSignal): Promise<void> {
  const plan = planBatch(accepted);
  try {
    if (target.kind === 'generation') {
      await writeGeneration(writers, target.generation, plan, signal);
      return;
    }
    const before = await writers.generations.live(signal);
    // The chain and the rebuildable projections are independent: written side by side, acknowledged after both.
    const outcomes = await Promise.allSettled([writeGeneration(writers, before, plan, signal), appendChain(writers, plan, signal)]);
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    const after = await writers.generations.live(signal);
    if (after !== before) await writeGeneration(writers, after, plan, signal);
  } catch (error) {
    throw toStoreError(error, `projecting ${accepted.length} events`, signal);
  }
}
