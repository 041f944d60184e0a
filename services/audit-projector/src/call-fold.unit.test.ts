import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RuntimeToolCall } from '@toolplane/contracts';
import { callEvents, type AttemptOutcome, type CallPlan } from '../test/events.js';
import { attemptViews, callKey, callSettled, emptyCallState, foldCallEvent, mergeCallStates, projectCall, type CallEvent, type CallFoldState } from './call-fold.js';
import { foldJournal, journalInOrder, type Journal } from './journal-fold.js';

const fold = (events: readonly CallEvent[], from: CallFoldState = emptyCallState) => events.reduce(foldCallEvent, from);
const project = (events: readonly CallEvent[]) => {
  const first = events[0] as CallEvent;
  return projectCall({ tenant: first.metadata.tenant, workspace: first.metadata.workspace, toolCallId: first.metadata.toolCallId }, fold(events));
};

/** Folds a stream of events of several calls into one state per call. */
function foldAll(events: readonly CallEvent[]): Map<string, CallFoldState> {
  const states = new Map<string, CallFoldState>();
  for (const event of events) states.set(callKey(event), foldCallEvent(states.get(callKey(event)) ?? emptyCallState, event));
  return states;
}

function projectAll(events: readonly CallEvent[]): Record<string, RuntimeToolCall> {
  const out: Record<string, RuntimeToolCall> = {};
  for (const [key, state] of [...foldAll(events)].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const [tenant, workspace, ...rest] = key.split('/');
    out[key] = projectCall({ tenant: tenant as string, workspace: workspace as string, toolCallId: rest.join('/') }, state);
  }
  return out;
}

const journalOf = (events: readonly CallEvent[]) => journalInOrder(events.reduce<Journal>(foldJournal, new Map()));

describe('the RuntimeToolCall fold', () => {
  it('projects a completed call: state, times, duration, ids and hashes, never arguments or results', () => {
    const events = callEvents({ tenant: 'acme', workspace: 'dev', toolCallId: 'call-1', agentId: 'agent-7', attempts: [{ outcome: 'Completed', approval: true, sandbox: true }] });
    const call = project(events);
    expect(RuntimeToolCall.parse(call)).toEqual(call);
    const started = events.find((event) => event.type === 'ToolCallStarted') as Extract<CallEvent, { type: 'ToolCallStarted' }>;
    const completed = events.find((event) => event.type === 'ToolCallCompleted') as Extract<CallEvent, { type: 'ToolCallCompleted' }>;
    const approval = events.find((event) => event.type === 'ApprovalRequested') as Extract<CallEvent, { type: 'ApprovalRequested' }>;
    expect(call).toMatchObject({
      tenant: 'acme',
      workspace: 'dev',
      toolCallId: 'call-1',
      agentId: 'agent-7',
      agentRevision: '7',
      toolId: 'github.create_issue',
      toolVersion: '1.2.0',
      invocationId: started.metadata.invocationId,
      attemptCount: 1,
      state: 'Observed',
      startedAt: started.metadata.occurredAt,
      endedAt: completed.metadata.occurredAt,
      durationMs: completed.data.durationMs,
      approvalId: approval.data.approvalId,
      policyDecisionId: started.data.policyDecisionId,
      requestHash: started.data.requestHash,
      argumentsHash: started.data.argumentsHash,
      resultHash: completed.data.resultHash,
      sequenceHighWater: { '1': events.length },
    });
    expect(call.failure).toBeUndefined();
    // Nothing but ids, classes, times and hashes: no field could hold a payload.
    expect(JSON.stringify(call)).not.toMatch(/arguments"|result"|summary/);
  });

  it('keeps the idempotency key InvocationReceived carries, also when the Received event arrives alone or last', () => {
    const events = callEvents({ tenant: 'acme', workspace: 'dev', toolCallId: 'keyed', attempts: [{ outcome: 'Denied' }] });
    const received = events.filter((event) => event.type === 'InvocationReceived');
    expect(received).toHaveLength(1);
    expect(project(events).idempotencyKey).toBe('key-keyed');
    expect(project(received).idempotencyKey).toBe('key-keyed');
    expect(project([...events].reverse()).idempotencyKey).toBe('key-keyed');
    const retried = callEvents({ tenant: 'acme', workspace: 'dev', toolCallId: 'retried', attempts: [{ outcome: 'Uncertain' }, { outcome: 'Completed' }] });
    expect(RuntimeToolCall.parse(project(retried)).idempotencyKey).toBe('key-retried');
  });

  it('reports the latest attempt by attempt number, not by arrival, with the attempt count', () => {
    const events = callEvents({ tenant: 'acme', workspace: 'dev', toolCallId: 'call-2', attempts: [{ outcome: 'Uncertain' }, { outcome: 'Completed' }] });
    const second = events.filter((event) => event.metadata.attempt === 2);
    const first = events.filter((event) => event.metadata.attempt === 1);
    // Attempt 2's events first, attempt 1's after: the latest attempt is still attempt 2.
    const call = project([...second, ...first]);
    expect(call).toMatchObject({ attemptCount: 2, state: 'Observed', invocationId: second[0]?.metadata.invocationId });
    expect(call.sequenceHighWater).toEqual({ '1': first.length, '2': second.length });
    expect(call.startedAt).toBe(first.find((event) => event.type === 'ToolCallStarted')?.metadata.occurredAt);
    expect(attemptViews(fold(events)).map((attempt) => [attempt.attempt, attempt.state])).toEqual([
      [1, 'Uncertain'],
      [2, 'Observed'],
    ]);
  });

  it('keeps a completion that arrives before its start', () => {
    const events = callEvents({ tenant: 'acme', workspace: 'dev', toolCallId: 'call-3', attempts: [{ outcome: 'Failed' }] });
    const call = project([...events].reverse());
    expect(call).toMatchObject({ state: 'Failed', failure: { code: 'TEMPORARY_UNAVAILABLE', providerErrorType: 'HttpStatus(503)', message: 'the server answered 503' } });
    expect(call).toEqual(project(events));
  });

  it('gives the same document for an event seen five times', () => {
    const events = callEvents({ tenant: 'acme', workspace: 'dev', toolCallId: 'call-4', attempts: [{ outcome: 'Completed' }] });
    const fiveTimes = events.flatMap((event) => [event, event, event, event, event]);
    expect(project(fiveTimes)).toEqual(project(events));
  });

  it('ends a denied call Denied and an in-flight call Executing', () => {
    expect(project(callEvents({ tenant: 'a', workspace: 'w', toolCallId: 'd', attempts: [{ outcome: 'Denied' }] })).state).toBe('Denied');
    expect(project(callEvents({ tenant: 'a', workspace: 'w', toolCallId: 'f', attempts: [{ outcome: 'InFlight', sandbox: true }] })).state).toBe('Executing');
  });
});

// Arbitrary calls: one to four, each with one to three attempts of any outcome, some in a FlowRun.
const outcome = fc.constantFrom<AttemptOutcome>('Completed', 'Failed', 'Cancelled', 'Uncertain', 'Denied', 'InFlight');
const attempt = fc.record({ outcome, approval: fc.boolean(), sandbox: fc.boolean() });
const plan = (index: number) =>
  fc.record({
    tenant: fc.constantFrom('acme', 'globex'),
    workspace: fc.constant('dev'),
    toolCallId: fc.constant(`call-${index}`),
    flowRunId: fc.option(fc.constantFrom('run-1', 'run-2'), { nil: undefined }),
    agentId: fc.option(fc.constant('agent-1'), { nil: undefined }),
    attempts: fc.array(attempt, { minLength: 1, maxLength: 3 }),
    startMs: fc.integer({ min: 0, max: 10_000_000 }).map((offset) => Date.parse('2026-03-01T00:00:00.000Z') + offset),
  });
const plans = fc.integer({ min: 1, max: 4 }).chain((count) => fc.tuple(...Array.from({ length: count }, (_, i) => plan(i))));

/** The events of some calls in order, and the same events shuffled, with duplicates, as a stream delivers them. */
const deliveries = plans.chain((calls) => {
  const events = (calls as CallPlan[]).flatMap((call) => callEvents(call));
  return fc
    .tuple(
      fc.shuffledSubarray(events, { minLength: events.length, maxLength: events.length }),
      fc.array(fc.tuple(fc.nat({ max: events.length - 1 }), fc.nat()), { maxLength: 3 * events.length }),
    )
    .map(([shuffled, duplicates]) => {
      const delivered = [...shuffled];
      for (const [which, where] of duplicates) delivered.splice(where % (delivered.length + 1), 0, events[which] as CallEvent);
      return { events, delivered };
    });
});

describe('the folds under reordering and duplication (property)', () => {
  it('give the in-order documents for every shuffled, duplicated delivery', () => {
    fc.assert(
      fc.property(deliveries, ({ events, delivered }) => {
        expect(projectAll(delivered)).toEqual(projectAll(events));
        expect(journalOf(delivered)).toEqual(journalOf(events));
      }),
      { numRuns: 3000 },
    );
  });

  it('give the in-order documents when batches are folded into deltas and merged into the stored state in any order', () => {
    const batched = deliveries.chain(({ events, delivered }) =>
      fc.tuple(fc.constant(events), fc.constant(delivered), fc.array(fc.nat(), { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { maxLength: 6 })),
    );
    fc.assert(
      fc.property(batched, ([events, delivered, cuts, writeOrder]) => {
        // Cut the delivery into batches, fold each batch on its own (one delta per call), then merge the deltas
        // into the "stored" state in a shuffled order, as replicas writing concurrently would.
        const bounds = [...new Set(cuts.map((cut) => cut % (delivered.length + 1)))].sort((a, b) => a - b);
        const batches: CallEvent[][] = [];
        let from = 0;
        for (const bound of [...bounds, delivered.length]) {
          batches.push(delivered.slice(from, bound));
          from = bound;
        }
        const order = batches.map((_, i) => i).sort((a, b) => ((writeOrder[a] ?? a) - (writeOrder[b] ?? b)) || a - b);
        const stored = new Map<string, CallFoldState>();
        for (const index of order) {
          for (const [key, delta] of foldAll(batches[index] as CallEvent[])) stored.set(key, mergeCallStates(stored.get(key) ?? emptyCallState, delta));
        }
        expect(new Map([...stored].sort())).toEqual(new Map([...foldAll(events)].sort()));
      }),
      { numRuns: 2000 },
    );
  });

  it('merge is commutative, associative and idempotent', () => {
    const states = deliveries.chain(({ events }) =>
      fc.tuple(fc.subarray(events), fc.subarray(events), fc.subarray(events)).map((parts) => parts.map((part) => [...foldAll(part).values()][0] ?? emptyCallState)),
    );
    fc.assert(
      fc.property(states, ([a, b, c]) => {
        const [x, y, z] = [a, b, c] as [CallFoldState, CallFoldState, CallFoldState];
        expect(mergeCallStates(x, y)).toEqual(mergeCallStates(y, x));
        expect(mergeCallStates(mergeCallStates(x, y), z)).toEqual(mergeCallStates(x, mergeCallStates(y, z)));
        expect(mergeCallStates(x, structuredClone(x))).toEqual(x);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('callSettled', () => {
  const plan = (attempts: CallPlan['attempts']): CallEvent[] => callEvents({ tenant: 'acme', workspace: 'dev', toolCallId: `settled-${attempts.length}`, attempts });

  it('is true once every attempt ended and every sandbox was released, whatever the order', () => {
    const events = plan([{ outcome: 'Failed', sandbox: true }, { outcome: 'Completed', sandbox: true }]);
    expect(callSettled(events)).toBe(true);
    expect(callSettled([...events].reverse())).toBe(true);
    expect(callSettled(plan([{ outcome: 'Denied' }]))).toBe(true);
  });

  it('is false while an attempt has not ended, a sandbox is still leased, or a new attempt began', () => {
    const events = plan([{ outcome: 'Completed', sandbox: true }]);
    expect(callSettled(events.filter((event) => event.type !== 'SandboxReleased'))).toBe(false);
    expect(callSettled(events.filter((event) => event.type !== 'ToolCallCompleted'))).toBe(false);
    expect(callSettled(plan([{ outcome: 'InFlight' }]))).toBe(false);
    expect(callSettled(plan([{ outcome: 'Completed', approval: true }]).filter((event) => event.type === 'InvocationReceived' || event.type === 'ApprovalRequested'))).toBe(false);
    const retried = plan([{ outcome: 'Failed' }, { outcome: 'Completed' }]);
    expect(callSettled(retried.filter((event) => event.metadata.attempt === 1 || event.type === 'InvocationReceived'))).toBe(false);
  });
});
