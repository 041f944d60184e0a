import { randomUUID } from 'node:crypto';
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hasErrorCode, type ToolInvocation } from '@toolplane/contracts';
import { foldEvents, handleCommand, inMemoryEventStore } from '@toolplane/event-store';
import { reconcileInvocation } from './invocation-attempts.js';
import { InvocationChangedError, invocationDecider, leaseAlive, recordedFrom, type InvocationCommand } from './invocation-decider.js';
import { advancePipeline, receiveInvocation, type PipelineState, type StageOutcome } from './invocation-pipeline.js';
import { receiptSigner } from './receipts.js';
import type { InvocationStateEvent } from '@toolplane/contracts';

const scope = { tenant: 'acme', workspace: 'support' };
const signReceipt = receiptSigner({ keyId: 'decider-test', privateKey: generateKeyPairSync('ed25519').privateKey });
const now = '2026-01-01T00:00:00.000Z';
const lease = '2026-01-01T00:00:05.000Z';

function received(): PipelineState {
  const request = { toolId: 'fixture.echo', arguments: { text: 'hi' }, idempotencyKey: 'key-1', correlationId: 'run-1', contextToken: 'a.b.c', replyInbox: 'inbox_1' };
  const caller = { principal: 'user:alice@acme.example', agentId: 'agent-1', agentRevision: '7', roles: [] };
  return receiveInvocation({ scope, request, caller, invocationId: randomUUID(), resolvedToolVersion: '1', defaultTimeoutMs: 30_000 }, { now }).state;
}

function record(from: ToolInvocation | undefined, invocation: ToolInvocation, leaseUntil?: string): InvocationCommand {
  return { type: 'RecordTransition', data: { from: from === undefined ? undefined : recordedFrom(from), invocation, events: [], ...(leaseUntil === undefined ? {} : { leaseUntil }) } };
}

/** A call moved from Received on by `outcomes`, as the core decides them. */
function advanced(state: PipelineState, outcomes: readonly StageOutcome[]): PipelineState {
  return outcomes.reduce((current, outcome) => {
    const transition = advancePipeline(current, outcome, { now, signReceipt });
    if (!transition.accepted) throw new Error(transition.problem);
    return transition.state;
  }, state);
}

const executing = (base: ToolInvocation): ToolInvocation => ({ ...base, state: 'Executing', startedAt: now, eventSequence: base.eventSequence + 1 });

describe('invocationDecider', () => {
  it('records a new call once: a second creation of the key is refused as moved on (decide again)', () => {
    const { invocation } = received();
    const events = invocationDecider.decide(record(undefined, invocation, lease), invocationDecider.initialState());
    const state = foldEvents(invocationDecider, events);
    expect(state.invocation).toEqual(invocation);
    expect(state.leaseUntil).toBe(lease);
    const again = (() => {
      try {
        return invocationDecider.decide(record(undefined, invocation), state);
      } catch (error) {
        return error;
      }
    })();
    expect(again).toBeInstanceOf(InvocationChangedError);
    expect(hasErrorCode(again) && again.retryable).toBe(true);
  });

  it('replaying the recorded events gives the state, arguments stored once', () => {
    const first = received().invocation;
    const started = executing(first);
    const events: InvocationStateEvent[] = [];
    let state = invocationDecider.initialState();
    for (const command of [record(undefined, first, lease), record(first, started, lease), { type: 'RenewLease', data: { invocationId: first.invocationId, leaseUntil: '2026-01-01T00:00:09.000Z' } } as const]) {
      const decided = invocationDecider.decide(command, state);
      events.push(...decided);
      state = decided.reduce((folded, event) => invocationDecider.evolve(folded, event), state);
    }
    // The second record leaves the unchanged arguments out; the fold still has them.
    const second = events[1];
    expect(second?.type === 'InvocationRecorded' && second.data.invocation.argumentsJson).toBeUndefined();
    expect(foldEvents(invocationDecider, events)).toEqual(state);
    expect(state.invocation).toEqual(started);
    expect(state.leaseUntil).toBe('2026-01-01T00:00:09.000Z');
    expect(leaseAlive(state, new Date('2026-01-01T00:00:08.000Z'))).toBe(true);
    expect(leaseAlive(state, new Date('2026-01-01T00:00:10.000Z'))).toBe(false);
  });

  it('refuses a transition decided on a record that is no longer the call (another handler moved it on)', () => {
    const first = received().invocation;
    const state = foldEvents(invocationDecider, invocationDecider.decide(record(undefined, executing(first), lease), invocationDecider.initialState()));
    expect(() => invocationDecider.decide(record(first, executing(first)), state)).toThrow(InvocationChangedError);
  });

  it('never renews the lease of a call that is not executing (a renewal cannot undo an ending)', () => {
    const base = received();
    const ended = advanced(base, [
      { step: 'TOOL_RESOLUTION', descriptor: undefined },
      { step: 'FINISH' },
    ]).invocation;
    expect(ended.state).toBe('Denied');
    const state = foldEvents(invocationDecider, invocationDecider.decide(record(undefined, ended), invocationDecider.initialState()));
    expect(invocationDecider.decide({ type: 'RenewLease', data: { invocationId: ended.invocationId, leaseUntil: lease } }, state)).toEqual([]);
    expect(state.leaseUntil).toBeUndefined();
    // An ended call does not move on, whoever decided it.
    expect(() => invocationDecider.decide(record(ended, { ...ended, state: 'Executing' }), state)).toThrow(/only reconciling an Uncertain call changes it/);
  });

  it('lets a reconcile settle an Uncertain call, and nothing else change it', () => {
    const base = executing(received().invocation);
    const uncertain = advanced({ step: 'FINISH', invocation: base, ending: { state: 'Uncertain', failure: { code: 'UNKNOWN_OUTCOME', message: 'x', retryable: false }, interrupted: true } }, []);
    const finished = advancePipeline(uncertain, { step: 'FINISH' }, { now, signReceipt });
    if (!finished.accepted) throw new Error(finished.problem);
    const ended = finished.state.invocation;
    const state = foldEvents(invocationDecider, invocationDecider.decide(record(undefined, ended), invocationDecider.initialState()));
    const settled = reconcileInvocation(ended, { outcome: 'failed', operator: 'user:ada@example.com', reason: 'checked' }, { now, signReceipt });
    if (!settled.accepted) throw new Error(settled.failure.message);
    const after = foldEvents(invocationDecider, [...invocationDecider.decide(record(undefined, ended), invocationDecider.initialState()), ...invocationDecider.decide(record(ended, settled.invocation), state)]);
    expect(after.invocation?.state).toBe('Failed');
    expect(() => invocationDecider.decide(record(ended, { ...ended, failure: { code: 'INTERNAL', message: 'y', retryable: false } }), state)).toThrow(/only reconciling/);
  });

  it('appends nothing for a refused command (through the one command handler)', async () => {
    const store = inMemoryEventStore<InvocationStateEvent>();
    const first = received().invocation;
    await handleCommand(store, invocationDecider, 'call', record(undefined, first, lease));
    const before = (await store.readStream('call')).version;
    await expect(handleCommand(store, invocationDecider, 'call', record(undefined, first))).rejects.toBeInstanceOf(InvocationChangedError);
    await handleCommand(store, invocationDecider, 'call', { type: 'RenewLease', data: { invocationId: first.invocationId, leaseUntil: lease } });
    expect((await store.readStream('call')).version).toBe(before);
    expect((await store.readStream('call')).events).toHaveLength(1);
  });
});
