// The FlowRun journal fold: pure. A journal is a set of entries keyed by event id (each event appended once),
// read in orderKey order; as a set it is trivially a join-semilattice, and the store keeps it insert-only.
import { canonicalJson, type FlowJournalEntry, type FlowJournalEntryType } from '@toolplane/contracts';
import { compact, type CallEvent } from './call-fold.js';

/** A journal entry with its document id. */
export type JournalRecord = FlowJournalEntry & { readonly _id: string };

const entryTypes: Readonly<Partial<Record<CallEvent['type'], FlowJournalEntryType>>> = {
  ToolCallStarted: 'ToolCallStarted',
  ToolCallCompleted: 'ToolCallCompleted',
  ToolCallFailed: 'ToolCallFailed',
  // A FlowRun's journal knows started, completed and failed; a cancelled or uncertain attempt ended without a
  // result, so it is journaled as failed and `eventType` keeps what really happened.
  ToolCallCancelled: 'ToolCallFailed',
  ToolEffectUncertain: 'ToolCallFailed',
};

const pad = (value: number) => String(value).padStart(10, '0');

/** The journal entry an event makes, if it belongs to a FlowRun and is a start or an end of a call attempt. */
export function journalEntryOf(event: CallEvent): JournalRecord | undefined {
  const type = entryTypes[event.type];
  const m = event.metadata;
  if (type === undefined || m.flowRunId === undefined) return undefined;
  const occurredAt = new Date(m.occurredAt).toISOString();
  const data = event.data as { durationMs?: number; requestHash?: string; argumentsHash?: string; resultHash?: string; failure?: FlowJournalEntry['failure'] };
  return compact({
    _id: `${m.tenant}/${m.workspace}/${m.eventId}`,
    tenant: m.tenant,
    workspace: m.workspace,
    flowRunId: m.flowRunId,
    workItemId: m.workItemId,
    type,
    eventType: event.type,
    eventId: m.eventId,
    occurredAt: m.occurredAt,
    toolCallId: m.toolCallId,
    invocationId: m.invocationId,
    attempt: m.attempt,
    sequence: m.sequence,
    toolId: m.toolId,
    toolVersion: m.toolVersion,
    durationMs: data.durationMs,
    requestHash: data.requestHash,
    argumentsHash: data.argumentsHash,
    resultHash: data.resultHash,
    failure: data.failure,
    // Event time first (normalised so every instant sorts as one string), then call, attempt and sequence, so
    // that the journal follows the events' own order, not their arrival.
    orderKey: `${occurredAt}|${m.toolCallId}|${pad(m.attempt)}|${pad(m.sequence)}`,
  });
}

/** A journal: entries by id. */
export type Journal = ReadonlyMap<string, JournalRecord>;

/** Adds an event's entry to a journal; an entry already there stays (ties between different contents break by their canonical JSON). */
export function foldJournal(journal: Journal, event: CallEvent): Journal {
  const entry = journalEntryOf(event);
  if (entry === undefined) return journal;
  const existing = journal.get(entry._id);
  if (existing !== undefined && canonicalJson(existing) >= canonicalJson(entry)) return journal;
  return new Map(journal).set(entry._id, entry);
}

/** A journal's entries in reading order. */
export function journalInOrder(journal: Journal): JournalRecord[] {
  return [...journal.values()].sort((a, b) => (a.orderKey < b.orderKey ? -1 : a.orderKey > b.orderKey ? 1 : a._id < b._id ? -1 : a._id > b._id ? 1 : 0));
}
