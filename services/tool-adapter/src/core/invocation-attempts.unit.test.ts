import { InvocationEvent, ToolInvocation, type ToolDescriptor } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { at, caller, ctx, descriptor, ids, later, profile, publicKeys, request, scope, tenantPolicy } from '../../test/core-fixtures.js';
import { decideIdempotency, markInterruptedUncertain, reconcileInvocation, startNextAttempt } from './invocation-attempts.js';
import { advancePipeline, receiveInvocation, type PipelineState, type PipelineTransition, type StageOutcome } from './invocation-pipeline.js';
import { evaluatePolicy } from './policy-evaluator.js';
import { verifyReceipt } from './receipts.js';

function must(transition: PipelineTransition): Extract<PipelineTransition, { accepted: true }> {
  if (!transition.accepted) throw new Error(`not accepted at ${transition.expected}: ${transition.problem}`);
  return transition;
}

/** Runs a plain (ungated, unsandboxed) tool's call up to the given step. */
function runTo(tool: ToolDescriptor, until: PipelineState['step'], args = { title: 'Broken build' }): PipelineState {
  let state = receiveInvocation({ scope, request: request({ arguments: args }), caller, invocationId: ids.invocation, resolvedToolVersion: tool.toolVersion, defaultTimeoutMs: 60_000 }, { now: at }).state;
  const decision = () =>
    evaluatePolicy({
      subject: { invocationId: state.invocation.invocationId, ...scope, toolId: tool.toolId, toolVersion: tool.toolVersion, requestHash: state.invocation.requestHash, arguments: args },
      descriptor: tool,
      caller,
      agentProfile: profile(),
      tenantPolicy: tenantPolicy(),
      rateCounters: new Map(),
      now: at,
    }).decision;
  const outcomes: Record<string, () => StageOutcome> = {
    TOOL_RESOLUTION: () => ({ step: 'TOOL_RESOLUTION', descriptor: tool }),
    SCHEMA_VALIDATION: () => ({ step: 'SCHEMA_VALIDATION', check: { valid: true } }),
    AGENT_PERMISSION: () => ({ step: 'AGENT_PERMISSION', decision: decision() }),
    TENANT_POLICY: () => ({ step: 'TENANT_POLICY', decision: decision() }),
    SIDE_EFFECT_CLASSIFICATION: () => ({ step: 'SIDE_EFFECT_CLASSIFICATION', decision: decision() }),
    APPROVAL: () => ({ step: 'APPROVAL', result: 'not_required' }),
    CREDENTIAL_BROKER: () => ({ step: 'CREDENTIAL_BROKER', result: 'leased', secretLeaseIds: [] }),
    SANDBOX: () => ({ step: 'SANDBOX', result: 'not_needed' }),
    START: () => ({ step: 'START' }),
    EXECUTE: () => ({ step: 'EXECUTE', execution: { result: 'returned', output: { content: [{ type: 'text', text: 'ok' }] } } }),
    SANITIZE: () => ({ step: 'SANITIZE', secrets: [] }),
    FINISH: () => ({ step: 'FINISH' }),
  };
  while (state.step !== until) {
    const next = outcomes[state.step];
    if (next === undefined) throw new Error(`no outcome for ${state.step}`);
    state = must(advancePipeline(state, next(), ctx(later(10)))).state;
  }
  return state;
}

const write = descriptor();
const read = descriptor({ sideEffectClass: 'READ' });
const incoming = { scope, toolId: 'github.create_issue', requestedToolVersion: undefined, arguments: { title: 'Broken build' } };

describe('decideIdempotency', () => {
  it('creates when the key is unused', () => {
    expect(decideIdempotency(undefined, incoming, false)).toEqual({ kind: 'create' });
  });

  it('answers CONFLICT for the same key with other arguments or another tool version', () => {
    const stored = runTo(write, 'EXECUTE').invocation;
    expect(decideIdempotency(stored, { ...incoming, arguments: { title: 'Other' } }, true)).toMatchObject({ kind: 'conflict', failure: { code: 'CONFLICT', retryable: false } });
    expect(decideIdempotency(stored, { ...incoming, requestedToolVersion: '2.0.0' }, true)).toMatchObject({ kind: 'conflict' });
  });

  it('recognises the same call when it names no version, even after the active version changed', () => {
    const stored = runTo(write, 'PUBLISH_TERMINAL').invocation;
    expect(decideIdempotency(stored, incoming, false).kind).toBe('replay');
    expect(decideIdempotency(stored, { ...incoming, requestedToolVersion: '1.0.0' }, false).kind).toBe('replay');
  });

  it('replays the stored result and receipt of an ended call', () => {
    const stored = runTo(write, 'PUBLISH_TERMINAL').invocation;
    const decision = decideIdempotency(stored, incoming, true);
    expect(decision).toMatchObject({ kind: 'replay', result: { status: 'SUCCESS', textContent: 'ok', receipt: stored.receipt } });
  });

  it('joins a call in flight or parked for approval', () => {
    expect(decideIdempotency(runTo(write, 'EXECUTE').invocation, incoming, true)).toEqual({ kind: 'join' });
    const parked = { ...runTo(write, 'START').invocation, state: 'AwaitingApproval' as const };
    expect(decideIdempotency(parked, incoming, false)).toEqual({ kind: 'join' });
  });

  it('resumes a call whose handler died before execution', () => {
    expect(decideIdempotency(runTo(write, 'START').invocation, incoming, false)).toEqual({ kind: 'resume' });
  });

  it('starts a new attempt of an interrupted READ or provider-deduplicated write, and makes any other write Uncertain', () => {
    expect(decideIdempotency(runTo(read, 'EXECUTE').invocation, incoming, false)).toEqual({ kind: 'new_attempt' });
    expect(decideIdempotency(runTo(descriptor({ idempotency: 'SUPPORTED_WITH_KEY' }), 'EXECUTE').invocation, incoming, false)).toEqual({ kind: 'new_attempt' });
    expect(decideIdempotency(runTo(write, 'EXECUTE').invocation, incoming, false)).toEqual({ kind: 'uncertain' });
    expect(decideIdempotency(runTo(descriptor({ sideEffectClass: 'DESTRUCTIVE', idempotency: 'NONE' }), 'APPROVAL').invocation, incoming, false)).toEqual({ kind: 'resume' });
  });
});

describe('startNextAttempt', () => {
  it('closes the interrupted attempt and starts attempt + 1 with a new InvocationId and the same ToolCallId', () => {
    const interrupted = runTo(read, 'EXECUTE').invocation;
    const next = startNextAttempt(interrupted, ids.invocation2, { now: later(5000) });
    expect(next.closing.map((e) => [e.type, e.metadata.invocationId, e.metadata.sequence, e.metadata.attempt])).toEqual([['ToolCallFailed', ids.invocation, interrupted.eventSequence + 1, 1]]);
    expect(next.closing[0]?.data).toMatchObject({ failure: { code: 'TEMPORARY_UNAVAILABLE', retryable: true } });
    const attempt = next.state.invocation;
    expect(ToolInvocation.parse(attempt)).toEqual(attempt);
    expect(attempt).toMatchObject({ invocationId: ids.invocation2, toolCallId: interrupted.toolCallId, attempt: 2, idempotencyKey: interrupted.idempotencyKey, requestHash: interrupted.requestHash, state: 'Received', eventSequence: 1 });
    expect(next.events.map((e) => [e.type, e.metadata.sequence, e.metadata.attempt])).toEqual([['InvocationReceived', 1, 2]]);
    for (const event of [...next.closing, ...next.events]) InvocationEvent.parse(event);
    expect(() => startNextAttempt(runTo(read, 'START').invocation, ids.invocation2, { now: at })).toThrow(RangeError);
  });

  it('lets the new attempt run the whole pipeline again, carrying over a granted approval', () => {
    const gated = descriptor({ sideEffectClass: 'DESTRUCTIVE', idempotency: 'SUPPORTED_WITH_KEY' });
    const interrupted = { ...runTo(read, 'EXECUTE').invocation, approvalId: ids.approval, effectiveClass: 'DESTRUCTIVE' as const, idempotency: 'SUPPORTED_WITH_KEY' as const };
    const next = startNextAttempt(interrupted, ids.invocation2, { now: later(100) });
    expect(next.closing[0]?.data).toMatchObject({ failure: { code: 'UNKNOWN_OUTCOME', retryable: true } });
    let state = next.state;
    const args = JSON.parse(state.invocation.argumentsJson) as Record<string, unknown>;
    const decision = evaluatePolicy({
      subject: { invocationId: ids.invocation2, ...scope, toolId: gated.toolId, toolVersion: gated.toolVersion, requestHash: state.invocation.requestHash, arguments: args },
      descriptor: gated,
      caller,
      agentProfile: profile(),
      tenantPolicy: tenantPolicy(),
      rateCounters: new Map(),
      now: later(100),
    }).decision;
    expect(decision.effect).toBe('approval_required');
    for (const outcome of [
      { step: 'TOOL_RESOLUTION', descriptor: gated },
      { step: 'SCHEMA_VALIDATION', check: { valid: true } },
      { step: 'AGENT_PERMISSION', decision },
      { step: 'TENANT_POLICY', decision },
      { step: 'SIDE_EFFECT_CLASSIFICATION', decision },
    ] as StageOutcome[]) {
      state = must(advancePipeline(state, outcome, ctx(later(100)))).state;
    }
    expect(advancePipeline(state, { step: 'APPROVAL', result: 'previously_granted', approvalId: ids.invocation }, ctx(later(100))).accepted).toBe(false);
    const carried = must(advancePipeline(state, { step: 'APPROVAL', result: 'previously_granted', approvalId: ids.approval }, ctx(later(100))));
    expect(carried.state.step).toBe('CREDENTIAL_BROKER');
  });
});

describe('markInterruptedUncertain', () => {
  it('ends a non-repeatable interrupted call Uncertain, without a duration, never retried', () => {
    const interrupted = runTo(write, 'EXECUTE').invocation;
    const finished = must(advancePipeline(markInterruptedUncertain(interrupted), { step: 'FINISH' }, ctx(later(9000))));
    expect(finished.state.invocation).toMatchObject({ state: 'Uncertain', interrupted: true, failure: { code: 'UNKNOWN_OUTCOME', retryable: false } });
    expect(finished.events.map((e) => e.type)).toEqual(['ToolEffectUncertain']);
    expect(finished.events[0]?.data).not.toHaveProperty('durationMs');
    expect(verifyReceipt(finished.state.invocation.receipt, publicKeys)).toMatchObject({ valid: true, receipt: { state: 'Uncertain' } });
    expect(decideIdempotency(finished.state.invocation, incoming, false)).toMatchObject({ kind: 'replay', result: { status: 'UNCERTAIN' } });
    expect(() => markInterruptedUncertain(runTo(write, 'START').invocation)).toThrow(RangeError);
  });
});

describe('reconcileInvocation', () => {
  const uncertain = () => must(advancePipeline(markInterruptedUncertain(runTo(write, 'EXECUTE').invocation), { step: 'FINISH' }, ctx(later(9000)))).state.invocation;

  it('settles an Uncertain call as observed, recording operator and reason, with a new signed receipt', () => {
    const before = uncertain();
    const settled = reconcileInvocation(before, { outcome: 'observed', operator: 'user:oncall', reason: 'issue #42 exists' }, ctx(later(60_000)));
    expect(settled.accepted).toBe(true);
    if (!settled.accepted) return;
    expect(settled.invocation).toMatchObject({ state: 'Observed', reconciliation: { outcome: 'observed', by: 'user:oncall', reason: 'issue #42 exists', at: later(60_000) } });
    expect(settled.invocation.failure).toBeUndefined();
    expect(settled.invocation.resultJson).toContain('user:oncall');
    expect(settled.events.map((e) => [e.type, e.metadata.sequence, e.metadata.occurredAt])).toEqual([['ToolCallCompleted', before.eventSequence + 1, later(60_000)]]);
    expect(verifyReceipt(settled.invocation.receipt, publicKeys)).toMatchObject({ valid: true, receipt: { state: 'Observed', resultHash: settled.invocation.resultHash } });
    expect(ToolInvocation.parse(settled.invocation)).toEqual(settled.invocation);
  });

  it('settles an Uncertain call as failed', () => {
    const settled = reconcileInvocation(uncertain(), { outcome: 'failed', operator: 'user:oncall', reason: 'no issue was created' }, ctx(later(60_000)));
    expect(settled).toMatchObject({ accepted: true, invocation: { state: 'Failed', failure: { message: expect.stringContaining('user:oncall') as string } }, events: [{ type: 'ToolCallFailed' }] });
  });

  it('refuses anything but an Uncertain call, and a reconcile without a reason', () => {
    const observed = runTo(write, 'PUBLISH_TERMINAL').invocation;
    expect(reconcileInvocation(observed, { outcome: 'failed', operator: 'user:x', reason: 'r' }, ctx())).toMatchObject({ accepted: false, failure: { code: 'CONFLICT' } });
    expect(reconcileInvocation(uncertain(), { outcome: 'failed', operator: 'user:x', reason: '  ' }, ctx())).toMatchObject({ accepted: false, failure: { code: 'INVALID_ARGUMENT' } });
  });
});
