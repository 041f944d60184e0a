import { ApprovalRequested, InvocationEvent, InvocationResult, ToolInvocation, type PolicyDecision, type ToolDescriptor } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { at, caller, ctx, descriptor, hash, ids, later, profile, publicKeys, request, scope, tenantPolicy } from '../../test/core-fixtures.js';
import { ArgumentValidators } from './argument-validation.js';
import {
  PIPELINE_STEPS,
  advancePipeline,
  invocationResultOf,
  receiveInvocation,
  resumePipeline,
  type PipelineState,
  type PipelineStep,
  type PipelineTransition,
  type StageOutcome,
} from './invocation-pipeline.js';
import type { PipelineEvent } from './invocation-event-log.js';
import { evaluatePolicy } from './policy-evaluator.js';
import { REDACTION_MARKER } from './secret-redaction.js';
import { verifyReceipt } from './receipts.js';

const secret = 'xoxb-1234567890-SECRET-token-value';

/** A gated, sandboxed, credentialed tool: every stage has something to do. */
const gatedTool = descriptor({ sideEffectClass: 'DESTRUCTIVE', sandboxKind: 'Process', secretDependencies: ['conn-github'] });
const plainTool = descriptor();

function received(tool: ToolDescriptor = gatedTool, overrides: Partial<Parameters<typeof request>[0]> = {}) {
  return receiveInvocation(
    { scope, request: request(overrides), caller, invocationId: ids.invocation, resolvedToolVersion: tool.toolVersion, defaultTimeoutMs: 60_000 },
    { now: at },
  );
}

function decisionFor(state: PipelineState, tool: ToolDescriptor, policy = tenantPolicy()): PolicyDecision {
  const { invocation } = state;
  return evaluatePolicy({
    subject: { invocationId: invocation.invocationId, ...scope, toolId: invocation.toolId, toolVersion: tool.toolVersion, requestHash: invocation.requestHash, arguments: JSON.parse(invocation.argumentsJson) as Record<string, unknown> },
    descriptor: tool,
    caller,
    agentProfile: profile(),
    tenantPolicy: policy,
    rateCounters: new Map(),
    now: at,
  }).decision;
}

function must(transition: PipelineTransition): Extract<PipelineTransition, { accepted: true }> {
  if (!transition.accepted) throw new Error(`not accepted at ${transition.expected}: ${transition.problem}`);
  return transition;
}

/** One valid outcome for each stage of the gated tool's path. */
function outcomeFor(step: PipelineStep, state: PipelineState, decision: PolicyDecision): StageOutcome | undefined {
  switch (step) {
    case 'TOOL_RESOLUTION':
      return { step, descriptor: gatedTool };
    case 'SCHEMA_VALIDATION':
      return { step, check: { valid: true } };
    case 'AGENT_PERMISSION':
    case 'TENANT_POLICY':
    case 'SIDE_EFFECT_CLASSIFICATION':
      return { step, decision };
    case 'APPROVAL':
      return { step, result: 'requested', approvalId: ids.approval };
    case 'APPROVAL_DECISION':
      return { step, result: 'granted', approvalId: ids.approval, requestHash: state.invocation.requestHash, toolVersion: '1.0.0', decidedBy: 'user:bob' };
    case 'CREDENTIAL_BROKER':
      return { step, result: 'leased', secretLeaseIds: [ids.lease] };
    case 'SANDBOX':
      return { step, result: 'leased', sandboxLeaseId: ids.sandbox, expiresAt: later(60_000) };
    case 'START':
      return { step };
    case 'EXECUTE':
      return { step, execution: { result: 'returned', output: { content: [{ type: 'text', text: `created; token ${secret}` }], structuredContent: { id: 42, echo: secret } } } };
    case 'SANITIZE':
      return { step, secrets: [secret] };
    case 'FINISH':
    case 'PUBLISH_TERMINAL':
    case 'REPLY':
      return { step };
    case 'DONE':
      return undefined;
  }
}

/** Drives the gated tool's path to the end, recording the state at each step and what each transition did. */
function gatedPath() {
  const start = received();
  const decision = decisionFor(start.state, gatedTool);
  const states: PipelineState[] = [start.state];
  const transitions: Extract<PipelineTransition, { accepted: true }>[] = [];
  const events: PipelineEvent[] = [...start.events];
  let state = start.state;
  for (let outcome = outcomeFor(state.step, state, decision); outcome !== undefined; outcome = outcomeFor(state.step, state, decision)) {
    const transition = must(advancePipeline(state, outcome, ctx(later(10))));
    transitions.push(transition);
    events.push(...transition.events);
    state = transition.state;
    states.push(state);
  }
  return { decision, states, transitions, events, final: state };
}

/** Drives the gated tool's path (every stage at 10 ms after receipt) until it is parked for the approval decision. */
function parkedFor(overrides: Partial<Parameters<typeof request>[0]>) {
  const start = received(gatedTool, overrides);
  const decision = decisionFor(start.state, gatedTool);
  let state = start.state;
  let requested: PipelineEvent | undefined;
  while (state.step !== 'APPROVAL_DECISION') {
    const transition = must(advancePipeline(state, outcomeFor(state.step, state, decision) as StageOutcome, ctx(later(10))));
    requested ??= transition.events.find((event) => event.type === 'ApprovalRequested');
    state = transition.state;
  }
  if (requested === undefined) throw new Error('the gated path asked for no approval');
  return { parked: state, decision, requested };
}

describe('the invocation pipeline', () => {
  it('passes every stage in the fixed order, one at a time', () => {
    const { states } = gatedPath();
    expect(states.map((s) => s.step)).toEqual([...PIPELINE_STEPS]);
    expect(states.map((s) => s.invocation.state)).toEqual([
      'Received',
      'Received',
      'Validated',
      'Validated',
      'Validated',
      'Authorized',
      'AwaitingApproval',
      'AwaitingApproval',
      'AwaitingApproval',
      'Brokered',
      'Executing',
      'Executing',
      'Executing',
      'Observed',
      'Observed',
      'Observed',
    ]);
  });

  it('accepts, at every step, only the outcome of that step: no stage can be skipped or reordered', () => {
    const { states, decision } = gatedPath();
    for (const state of states) {
      for (const step of PIPELINE_STEPS) {
        // Each step's outcome, built for this state, so only its step name can make it wrong.
        const outcome = outcomeFor(step, state, decision);
        if (outcome === undefined) continue;
        const transition = advancePipeline(state, outcome, ctx(later(10)));
        if (step === state.step) {
          expect(transition.accepted, `${state.step} must accept its own outcome`).toBe(true);
          if (transition.accepted) expect(PIPELINE_STEPS.indexOf(transition.state.step)).toBe(PIPELINE_STEPS.indexOf(step) + 1);
        } else {
          expect(transition, `${state.step} must refuse the outcome of ${step}`).toEqual({ accepted: false, expected: state.step, problem: `the pipeline waits for ${state.step}, not ${step}` });
        }
      }
    }
    const done = states.at(-1) as PipelineState;
    expect(done.step).toBe('DONE');
  });

  it('numbers the invocation’s events 1, 2, 3 … with stable ids, each a valid lifecycle event', () => {
    const { events, final } = gatedPath();
    expect(events.map((e) => e.type)).toEqual(['InvocationReceived', 'ApprovalRequested', 'SandboxLeased', 'ToolCallStarted', 'SandboxReleased', 'ToolCallCompleted']);
    expect(events.map((e) => e.metadata.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(final.invocation.eventSequence).toBe(6);
    expect(new Set(events.map((e) => e.metadata.eventId)).size).toBe(6);
    for (const event of events) {
      if (event.type === 'ApprovalRequested') ApprovalRequested.parse(event);
      else InvocationEvent.parse(event);
      expect(event.metadata).toMatchObject({ tenant: 'acme', workspace: 'main', invocationId: ids.invocation, attempt: 1, toolCallId: final.invocation.toolCallId });
    }
    expect(JSON.stringify(events)).not.toContain('Broken build');
    expect(JSON.stringify(events)).not.toContain(secret);
  });

  it('says when the document must be persisted: on parking, before executing, and at the end', () => {
    const { transitions } = gatedPath();
    const required = transitions.filter((t) => t.persist === 'required').map((t) => t.state.step);
    expect(required).toEqual(['APPROVAL_DECISION', 'EXECUTE', 'PUBLISH_TERMINAL']);
    const started = transitions.find((t) => t.state.step === 'EXECUTE');
    expect(started?.events.map((e) => e.type)).toEqual(['ToolCallStarted']);
    expect(started?.state.invocation).toMatchObject({ state: 'Executing', startedAt: later(10), secretLeaseIds: [ids.lease], sandboxLeaseId: ids.sandbox, approvalId: ids.approval });
  });

  it('ends with a valid stored document, a sanitized result and a receipt an auditor can verify', () => {
    const { final, decision } = gatedPath();
    const invocation = ToolInvocation.parse(final.invocation);
    expect(invocation).toMatchObject({ state: 'Observed', declaredClass: 'DESTRUCTIVE', effectiveClass: 'DESTRUCTIVE', policyDecisionId: decision.decisionId });
    expect(invocation.resultJson).not.toContain(secret);
    const result = InvocationResult.parse(invocationResultOf(invocation));
    expect(result).toMatchObject({ status: 'SUCCESS', provenance: 'untrusted-tool-data', truncated: false, textContent: `created; token ${REDACTION_MARKER}`, structuredContent: { id: 42, echo: REDACTION_MARKER } });
    expect(verifyReceipt(result.receipt, publicKeys)).toMatchObject({ valid: true });
    expect(result.receipt).toMatchObject({ policyDecisionId: decision.decisionId, approvalId: ids.approval, resultHash: invocation.resultHash, state: 'Observed', sideEffectClass: 'DESTRUCTIVE' });
  });

  it('cannot skip the approval a decision requires, nor ask for one it does not', () => {
    const { states, decision } = gatedPath();
    const atApproval = states.find((s) => s.step === 'APPROVAL') as PipelineState;
    expect(advancePipeline(atApproval, { step: 'APPROVAL', result: 'not_required' }, ctx())).toMatchObject({ accepted: false, problem: expect.stringContaining('cannot be skipped') as string });
    expect(advancePipeline(atApproval, { step: 'APPROVAL', result: 'previously_granted', approvalId: ids.approval }, ctx())).toMatchObject({ accepted: false });
    const plain = received(plainTool);
    const allowed = decisionFor(plain.state, plainTool);
    expect(allowed.effect).toBe('allow');
    let state = plain.state;
    for (const outcome of [{ step: 'TOOL_RESOLUTION', descriptor: plainTool }, { step: 'SCHEMA_VALIDATION', check: { valid: true } }, { step: 'AGENT_PERMISSION', decision: allowed }, { step: 'TENANT_POLICY', decision: allowed }, { step: 'SIDE_EFFECT_CLASSIFICATION', decision: allowed }] as StageOutcome[]) {
      state = must(advancePipeline(state, outcome, ctx())).state;
    }
    expect(advancePipeline(state, { step: 'APPROVAL', result: 'requested', approvalId: ids.approval }, ctx())).toMatchObject({ accepted: false });
    expect(decision.effect).toBe('approval_required');
  });

  it('binds the approval to the request hash and the exact tool version', () => {
    const { states } = gatedPath();
    const waiting = states.find((s) => s.step === 'APPROVAL_DECISION') as PipelineState;
    const base = { step: 'APPROVAL_DECISION', result: 'granted', approvalId: ids.approval, requestHash: waiting.invocation.requestHash, toolVersion: '1.0.0' } as const;
    expect(advancePipeline(waiting, { ...base, requestHash: hash('f') }, ctx()).accepted).toBe(false);
    expect(advancePipeline(waiting, { ...base, toolVersion: '1.0.1' }, ctx()).accepted).toBe(false);
    expect(advancePipeline(waiting, { ...base, approvalId: ids.invocation2 }, ctx()).accepted).toBe(false);
    expect(advancePipeline(waiting, base, ctx()).accepted).toBe(true);
  });

  it('ends Denied on rejection, expiry and voiding of the approval', () => {
    const { states } = gatedPath();
    const waiting = states.find((s) => s.step === 'APPROVAL_DECISION') as PipelineState;
    const base = { step: 'APPROVAL_DECISION', approvalId: ids.approval, requestHash: waiting.invocation.requestHash, toolVersion: '1.0.0' } as const;
    for (const [result, code] of [
      ['rejected', 'APPROVAL_REJECTED'],
      ['expired', 'APPROVAL_EXPIRED'],
      ['voided', 'CONFLICT'],
    ] as const) {
      const denied = must(advancePipeline(waiting, { ...base, result, reason: 'not now' }, ctx()));
      expect(denied.state.step).toBe('FINISH');
      const finished = must(advancePipeline(denied.state, { step: 'FINISH' }, ctx()));
      expect(finished.state.invocation).toMatchObject({ state: 'Denied', deniedStage: 'APPROVAL', failure: { code } });
      expect(finished.events.map((e) => e.type)).toEqual(['InvocationDenied']);
      expect(finished.events[0]?.data).toMatchObject({ stage: 'APPROVAL', approvalId: ids.approval, failure: { code } });
      expect(invocationResultOf(finished.state.invocation).status).toBe('DENIED');
    }
  });

  it('asks for approval with a summary, the policy’s approvers and an expiry the policy’s TTL from now', () => {
    const { transitions } = gatedPath();
    const requested = transitions.find((t) => t.state.step === 'APPROVAL_DECISION')?.events[0];
    expect(requested?.type).toBe('ApprovalRequested');
    expect(requested?.data).toMatchObject({ approvalId: ids.approval, sideEffectClass: 'DESTRUCTIVE', riskClass: 'MEDIUM', approvers: { roles: ['approver'] }, expiresAt: later(10 + 3_600_000) });
    expect((requested?.data as { summary: string }).summary).toContain('github.create_issue@1.0.0');
  });

  it('gives the approval the policy’s whole TTL even when the caller’s deadline is sooner', () => {
    const { parked, requested } = parkedFor({ timeoutMs: 2000 });
    expect(parked.invocation.deadline).toBe(later(2000));
    expect(requested.data).toMatchObject({ expiresAt: later(10 + 3_600_000) });
  });

  it('resumes a call granted after its original deadline with a fresh execution budget, never TIMEOUT', () => {
    const { parked, decision } = parkedFor({ timeoutMs: 2000 });
    const grantedAt = later(600_000);
    const granted = must(advancePipeline(parked, outcomeFor('APPROVAL_DECISION', parked, decision) as StageOutcome, ctx(grantedAt)));
    expect(granted.state.step).toBe('CREDENTIAL_BROKER');
    // The new deadline is the decision time plus the call's original budget (deadline − received).
    expect(granted.state.invocation.deadline).toBe(later(2000, grantedAt));
    let state = granted.state;
    const events: PipelineEvent[] = [];
    for (const step of ['CREDENTIAL_BROKER', 'SANDBOX', 'START'] as const) {
      const next = must(advancePipeline(state, outcomeFor(step, state, decision) as StageOutcome, ctx(later(50, grantedAt))));
      events.push(...next.events);
      state = next.state;
    }
    expect(state.step).toBe('EXECUTE');
    expect(events.find((event) => event.type === 'ToolCallStarted')?.data).toMatchObject({ deadline: later(2000, grantedAt) });
    // The fresh budget is a budget: once it runs out before the start, the call is denied TIMEOUT as any other.
    const tooLate = must(advancePipeline(granted.state, outcomeFor('CREDENTIAL_BROKER', granted.state, decision) as StageOutcome, ctx(later(2001, grantedAt))));
    expect(tooLate.state.ending).toMatchObject({ state: 'Denied', failure: { code: 'TIMEOUT' } });
  });

  it('denies schema-invalid arguments with INVALID_ARGUMENT before anything runs', () => {
    const start = received(plainTool, { arguments: { title: 42 } });
    const validators = new ArgumentValidators();
    let state = must(advancePipeline(start.state, { step: 'TOOL_RESOLUTION', descriptor: plainTool }, ctx())).state;
    const check = validators.validate(plainTool, JSON.parse(state.invocation.argumentsJson));
    state = must(advancePipeline(state, { step: 'SCHEMA_VALIDATION', check }, ctx())).state;
    expect(state.step).toBe('FINISH');
    const finished = must(advancePipeline(state, { step: 'FINISH' }, ctx()));
    expect(finished.state.invocation).toMatchObject({ state: 'Denied', deniedStage: 'SCHEMA_VALIDATION', failure: { code: 'INVALID_ARGUMENT' } });
    expect(finished.state.invocation.startedAt).toBeUndefined();
    expect(finished.state.invocation.receipt?.startedAt).toBeUndefined();
  });

  it('denies unknown, inactive and unhealthy tools at tool resolution', () => {
    const unknown = receiveInvocation({ scope, request: request({ toolId: 'nope.tool' }), caller, invocationId: ids.invocation, resolvedToolVersion: undefined, defaultTimeoutMs: 1000 }, { now: at });
    const notFound = must(advancePipeline(unknown.state, { step: 'TOOL_RESOLUTION', descriptor: undefined }, ctx()));
    const denied = must(advancePipeline(notFound.state, { step: 'FINISH' }, ctx())).state.invocation;
    expect(denied).toMatchObject({ state: 'Denied', deniedStage: 'TOOL_RESOLUTION', failure: { code: 'NOT_FOUND' } });
    expect(denied.receipt?.toolVersion).toBe('unresolved');
    expect(verifyReceipt(denied.receipt, publicKeys).valid).toBe(true);
    const retired = must(advancePipeline(received(plainTool).state, { step: 'TOOL_RESOLUTION', descriptor: { ...plainTool, active: false, inactiveReason: 'ServerRetired' } }, ctx()));
    expect(retired.state.ending).toMatchObject({ state: 'Denied', failure: { code: 'CONFLICT', message: expect.stringContaining('ServerRetired') as string } });
    const unhealthy = must(advancePipeline(received(plainTool).state, { step: 'TOOL_RESOLUTION', descriptor: { ...plainTool, healthy: false } }, ctx()));
    expect(unhealthy.state.ending).toMatchObject({ failure: { code: 'TEMPORARY_UNAVAILABLE', retryable: true } });
    expect(advancePipeline(received(plainTool).state, { step: 'TOOL_RESOLUTION', descriptor: { ...plainTool, toolVersion: '9.9.9' } }, ctx()).accepted).toBe(false);
    expect(advancePipeline(received(plainTool).state, { step: 'TOOL_RESOLUTION', descriptor: { ...plainTool, workspace: 'other' } }, ctx()).accepted).toBe(false);
  });

  it('denies at the stage the policy decision names', () => {
    const start = received(plainTool);
    let state = must(advancePipeline(start.state, { step: 'TOOL_RESOLUTION', descriptor: plainTool }, ctx())).state;
    state = must(advancePipeline(state, { step: 'SCHEMA_VALIDATION', check: { valid: true } }, ctx())).state;
    const killed = decisionFor(state, plainTool, tenantPolicy({ killSwitches: [{ target: 'TENANT', reason: 'stop', engagedBy: 'user:x', engagedAt: at }] }));
    const afterAgent = must(advancePipeline(state, { step: 'AGENT_PERMISSION', decision: killed }, ctx()));
    expect(afterAgent.state.step).toBe('TENANT_POLICY');
    const denied = must(advancePipeline(afterAgent.state, { step: 'TENANT_POLICY', decision: killed }, ctx()));
    expect(denied.state.ending).toMatchObject({ state: 'Denied', deniedStage: 'TENANT_POLICY', failure: { code: 'AUTHORIZATION_DENIED' } });
    const outsideProfile = decisionFor(state, { ...plainTool, riskClass: 'CRITICAL' });
    expect(must(advancePipeline(state, { step: 'AGENT_PERMISSION', decision: outsideProfile }, ctx())).state.ending).toMatchObject({ deniedStage: 'AGENT_PERMISSION' });
  });

  it('refuses a decision made for another invocation, or different decisions at the policy stages', () => {
    const start = received(plainTool);
    let state = must(advancePipeline(start.state, { step: 'TOOL_RESOLUTION', descriptor: plainTool }, ctx())).state;
    state = must(advancePipeline(state, { step: 'SCHEMA_VALIDATION', check: { valid: true } }, ctx())).state;
    const decision = decisionFor(state, plainTool);
    expect(advancePipeline(state, { step: 'AGENT_PERMISSION', decision: { ...decision, requestHash: hash('e') } }, ctx()).accepted).toBe(false);
    state = must(advancePipeline(state, { step: 'AGENT_PERMISSION', decision }, ctx())).state;
    expect(advancePipeline(state, { step: 'TENANT_POLICY', decision: { ...decision, decisionId: ids.invocation2 } }, ctx()).accepted).toBe(false);
    state = must(advancePipeline(state, { step: 'TENANT_POLICY', decision }, ctx())).state;
    expect(advancePipeline(state, { step: 'SIDE_EFFECT_CLASSIFICATION', decision: { ...decision, effectiveClass: 'READ' } }, ctx())).toMatchObject({ accepted: false });
  });

  it('never lowers the declared class', () => {
    const start = received(plainTool);
    let state = must(advancePipeline(start.state, { step: 'TOOL_RESOLUTION', descriptor: plainTool }, ctx())).state;
    state = must(advancePipeline(state, { step: 'SCHEMA_VALIDATION', check: { valid: true } }, ctx())).state;
    const decision = { ...decisionFor(state, plainTool), effectiveClass: 'READ' as const };
    state = must(advancePipeline(state, { step: 'AGENT_PERMISSION', decision }, ctx())).state;
    state = must(advancePipeline(state, { step: 'TENANT_POLICY', decision }, ctx())).state;
    expect(advancePipeline(state, { step: 'SIDE_EFFECT_CLASSIFICATION', decision }, ctx())).toMatchObject({ accepted: false, problem: expect.stringContaining('never lowered') as string });
  });

  it('denies with TIMEOUT when the deadline passes before the call starts', () => {
    const start = received(plainTool, { timeoutMs: 1000 });
    const late = must(advancePipeline(start.state, { step: 'TOOL_RESOLUTION', descriptor: plainTool }, ctx(later(1001))));
    expect(late.state.ending).toMatchObject({ state: 'Denied', deniedStage: 'TOOL_RESOLUTION', failure: { code: 'TIMEOUT' } });
  });

  it('requires the credential leases and the sandbox the descriptor names', () => {
    const { states } = gatedPath();
    const atBroker = states.find((s) => s.step === 'CREDENTIAL_BROKER') as PipelineState;
    expect(advancePipeline(atBroker, { step: 'CREDENTIAL_BROKER', result: 'leased', secretLeaseIds: [] }, ctx()).accepted).toBe(false);
    const brokerDenied = must(advancePipeline(atBroker, { step: 'CREDENTIAL_BROKER', result: 'denied', failure: { code: 'AUTHORIZATION_DENIED', message: 'connection not allowed', retryable: false } }, ctx()));
    expect(brokerDenied.state.ending).toMatchObject({ deniedStage: 'CREDENTIAL_BROKER' });
    // The server's own connections add leases beyond the tool's dependencies; each connection is leased once.
    const extra = must(advancePipeline(atBroker, { step: 'CREDENTIAL_BROKER', result: 'leased', secretLeaseIds: [ids.lease, ids.sandbox] }, ctx()));
    expect(extra.state.invocation.secretLeaseIds).toEqual([ids.lease, ids.sandbox]);
    expect(advancePipeline(atBroker, { step: 'CREDENTIAL_BROKER', result: 'leased', secretLeaseIds: [ids.lease, ids.lease] }, ctx()).accepted).toBe(false);
    const atSandbox = states.find((s) => s.step === 'SANDBOX') as PipelineState;
    expect(advancePipeline(atSandbox, { step: 'SANDBOX', result: 'not_needed' }, ctx()).accepted).toBe(false);
  });

  it('maps execution outcomes to terminal states and events, sanitizing failures too', () => {
    const { states } = gatedPath();
    const executing = states.find((s) => s.step === 'EXECUTE') as PipelineState;
    const cases = [
      [{ result: 'timed_out', requestSent: true }, 'Uncertain', 'ToolEffectUncertain', 'UNKNOWN_OUTCOME'],
      [{ result: 'timed_out', requestSent: false }, 'Cancelled', 'ToolCallCancelled', 'TIMEOUT'],
      [{ result: 'cancelled', requestSent: false }, 'Cancelled', 'ToolCallCancelled', 'CANCELLED'],
      [{ result: 'failed', effect: 'none', failure: { code: 'TEMPORARY_UNAVAILABLE', message: `bad token ${secret}`, retryable: true } }, 'Failed', 'ToolCallFailed', 'TEMPORARY_UNAVAILABLE'],
    ] as const;
    for (const [execution, terminal, eventType, code] of cases) {
      let state = must(advancePipeline(executing, { step: 'EXECUTE', execution }, ctx(later(20)))).state;
      state = must(advancePipeline(state, { step: 'SANITIZE', secrets: [secret] }, ctx(later(20)))).state;
      const finished = must(advancePipeline(state, { step: 'FINISH' }, ctx(later(30))));
      expect(finished.state.invocation).toMatchObject({ state: terminal, failure: { code } });
      expect(finished.state.invocation.failure?.message).not.toContain(secret);
      expect(finished.events.map((e) => e.type)).toEqual(['SandboxReleased', eventType]);
      expect(finished.events.at(-1)?.data).toMatchObject({ failure: { code } });
      expect(verifyReceipt(finished.state.invocation.receipt, publicKeys).valid).toBe(true);
      expect(InvocationResult.parse(invocationResultOf(finished.state.invocation)).status).toBe(terminal === 'Uncertain' ? 'UNCERTAIN' : terminal === 'Failed' ? 'FAILED' : 'CANCELLED');
    }
  });

  it('records a new invocation with scope from the subject, a derived key and a deterministic call id', () => {
    const arrival = {
      scope,
      request: request({ idempotencyKey: undefined, durableExecutionId: 'run-1/step-3', agentRevision: '7', timeoutMs: 5000, deadline: later(2000) }),
      caller,
      invocationId: ids.invocation,
      resolvedToolVersion: '1.0.0',
      defaultTimeoutMs: 60_000,
    };
    const first = receiveInvocation(arrival, { now: at });
    const again = receiveInvocation({ ...arrival, invocationId: ids.invocation2 }, { now: later(5) });
    expect(first.state.invocation).toMatchObject({ tenant: 'acme', workspace: 'main', idempotencyKeyDerived: true, deadline: later(2000), state: 'Received', eventSequence: 1 });
    expect(again.state.invocation.idempotencyKey).toBe(first.state.invocation.idempotencyKey);
    expect(again.state.invocation.toolCallId).toBe(first.state.invocation.toolCallId);
    expect(again.state.invocation.requestHash).toBe(first.state.invocation.requestHash);
    expect(ToolInvocation.parse(first.state.invocation)).toEqual(first.state.invocation);
    expect(InvocationEvent.parse(first.events[0])).toMatchObject({ type: 'InvocationReceived', metadata: { sequence: 1 } });
    expect(first.persist).toBe('required');
  });
});

describe("a tool's output schema", () => {
  const weather = JSON.stringify({
    type: 'object',
    properties: { temperature: { type: 'number' }, conditions: { type: 'string' } },
    required: ['temperature', 'conditions'],
  });
  /** The gated (DESTRUCTIVE) tool declaring an output schema: when its result breaks it, the effect has happened. */
  const typedTool: ToolDescriptor = { ...gatedTool, outputSchemaJson: weather };

  /** The typed tool's call, run up to SANITIZE with `output` as what the provider returned. */
  function returned(output: { content?: unknown; structuredContent?: unknown }, tool: ToolDescriptor = typedTool): PipelineState {
    const start = received(tool);
    const decision = decisionFor(start.state, tool);
    let state = start.state;
    while (state.step !== 'SANITIZE') {
      const outcome: StageOutcome =
        state.step === 'TOOL_RESOLUTION'
          ? { step: 'TOOL_RESOLUTION', descriptor: tool }
          : state.step === 'EXECUTE'
            ? { step: 'EXECUTE', execution: { result: 'returned', output } }
            : (outcomeFor(state.step, state, decision) as StageOutcome);
      state = must(advancePipeline(state, outcome, ctx(later(10)))).state;
    }
    return state;
  }

  function finished(state: PipelineState, maxResultBytes?: number): ToolInvocation {
    const context = { ...ctx(later(20)), ...(maxResultBytes === undefined ? {} : { maxResultBytes }) };
    const sanitized = must(advancePipeline(state, { step: 'SANITIZE', secrets: [secret], outputValidator: new ArgumentValidators() }, context)).state;
    return must(advancePipeline(sanitized, { step: 'FINISH' }, ctx(later(30)))).state.invocation;
  }

  it('passes a result whose structured content matches it', () => {
    const invocation = finished(returned({ content: [{ type: 'text', text: 'sunny' }], structuredContent: { temperature: 21.5, conditions: 'sunny' } }));
    expect(invocation.state).toBe('Observed');
    expect(invocationResultOf(invocation)).toMatchObject({ status: 'SUCCESS', structuredContent: { temperature: 21.5, conditions: 'sunny' }, content: [{ type: 'text', text: 'sunny' }] });
  });

  it('ends a call whose structured content breaks it Failed with CONFLICT, naming the first violation, its effect said to have happened', () => {
    const invocation = finished(returned({ content: [{ type: 'text', text: 'hot' }], structuredContent: { temperature: 'hot', conditions: 'sunny' } }));
    expect(invocation).toMatchObject({ state: 'Failed', failure: { code: 'CONFLICT', retryable: false, providerErrorType: 'OutputSchemaViolation' } });
    expect(invocation.failure?.message).toBe(
      "github.create_issue@1.0.0 ran, but its structured content does not match its output schema: /temperature must be number. The result is withheld; the tool's effect, if any, has happened: do not retry blindly",
    );
    expect(invocation.resultJson).toBeUndefined();
    // The receipt records the failure, signed; the reply carries no content.
    expect(invocation.receipt).toMatchObject({ state: 'Failed', failure: invocation.failure });
    expect(verifyReceipt(invocation.receipt, publicKeys).valid).toBe(true);
    const result = InvocationResult.parse(invocationResultOf(invocation));
    expect(result).toMatchObject({ status: 'FAILED', truncated: false });
    expect(result.content).toBeUndefined();
    expect(JSON.stringify(result)).not.toContain('hot');
  });

  it('ends a call that returned no structured content Failed the same way', () => {
    const invocation = finished(returned({ content: [{ type: 'text', text: '{"temperature":21}' }] }));
    expect(invocation).toMatchObject({ state: 'Failed', failure: { code: 'CONFLICT', providerErrorType: 'OutputSchemaViolation' } });
    expect(invocation.failure?.message).toContain('ran, but it declares an output schema but returned no structured content');
    const notAnObject = finished(returned({ structuredContent: [21, 'sunny'] }));
    expect(notAnObject).toMatchObject({ state: 'Failed', failure: { code: 'CONFLICT' } });
  });

  it('checks the content before the size bound: a valid result cut to the bound is not the tool’s fault', () => {
    const conditions = 'x'.repeat(5000);
    const invocation = finished(returned({ content: [{ type: 'text', text: 'long' }], structuredContent: { temperature: 1, conditions } }), 1000);
    expect(invocation.state).toBe('Observed');
    expect(invocationResultOf(invocation)).toMatchObject({ status: 'SUCCESS', truncated: true });
    expect(invocationResultOf(invocation).structuredContent).toBeUndefined();
  });

  it('checks the content a caller would get: leased secrets are removed first', () => {
    const tool = { ...typedTool, outputSchemaJson: JSON.stringify({ type: 'object', properties: { token: { type: 'string', pattern: '^xoxb-' } }, required: ['token'] }) };
    const invocation = finished(returned({ structuredContent: { token: secret } }, tool));
    expect(invocation).toMatchObject({ state: 'Failed', failure: { code: 'CONFLICT' } });
    expect(invocation.failure?.message).toContain('/token must match pattern');
    expect(invocation.failure?.message).not.toContain(secret);
  });

  it('refuses a SANITIZE outcome without the validator when the tool declares an output schema, and needs none otherwise', () => {
    const state = returned({ structuredContent: { temperature: 1, conditions: 'ok' } });
    expect(advancePipeline(state, { step: 'SANITIZE', secrets: [] }, ctx(later(20)))).toMatchObject({ accepted: false, problem: expect.stringContaining('output validator') as string });
    expect(must(advancePipeline(returned({ structuredContent: { anything: true } }, gatedTool), { step: 'SANITIZE', secrets: [] }, ctx(later(20)))).state.ending?.state).toBe('Observed');
  });
});

describe('a release deprecated or revoked while a call is in flight', () => {
  const retiredBy = (inFlight: 'FINISH' | 'CANCEL_PENDING', reason: 'ReleaseDeprecated' | 'ReleaseRevoked' = 'ReleaseRevoked'): ToolDescriptor => ({ ...gatedTool, releaseId: 'r1', active: false, inactiveReason: reason, inFlight });

  /** The gated path up to (not including) `step`. */
  function upTo(step: PipelineStep): PipelineState {
    const start = received();
    const decision = decisionFor(start.state, gatedTool);
    let state = start.state;
    while (state.step !== step) state = must(advancePipeline(state, outcomeFor(state.step, state, decision) as StageOutcome, ctx(later(10)))).state;
    return state;
  }

  it('refuses a new call at tool resolution, naming the release', () => {
    const refused = must(advancePipeline(received().state, { step: 'TOOL_RESOLUTION', descriptor: retiredBy('CANCEL_PENDING') }, ctx()));
    expect(refused.state.ending).toMatchObject({ state: 'Denied', deniedStage: 'TOOL_RESOLUTION', failure: { code: 'CONFLICT', message: 'github.create_issue@1.0.0 is not active (ReleaseRevoked: release r1 was revoked)' } });
  });

  it('with CANCEL_PENDING ends an accepted call Cancelled before it starts, or before it asks for an approval', () => {
    for (const step of ['START', 'APPROVAL'] as const) {
      const state = upTo(step);
      const outcome: StageOutcome = step === 'START' ? { step, current: retiredBy('CANCEL_PENDING') } : { step, result: 'requested', approvalId: ids.approval, current: retiredBy('CANCEL_PENDING') };
      const cancelled = must(advancePipeline(state, outcome, ctx(later(20))));
      expect(cancelled.events).toEqual([]);
      expect(cancelled.state.ending).toEqual({
        state: 'Cancelled',
        failure: { code: 'CANCELLED', message: 'github.create_issue@1.0.0 was retired before the call started (ReleaseRevoked: release r1 was revoked; in-flight policy CANCEL_PENDING)', retryable: false },
      });
      const ended = must(advancePipeline(cancelled.state, { step: 'FINISH' }, ctx(later(30))));
      expect(ended.state.invocation.state).toBe('Cancelled');
      expect(ended.events.at(-1)?.type).toBe('ToolCallCancelled');
    }
  });

  it('with FINISH lets an accepted call start although its descriptor is retired now', () => {
    const started = must(advancePipeline(upTo('START'), { step: 'START', current: retiredBy('FINISH', 'ReleaseDeprecated') }, ctx(later(20))));
    expect(started.state.step).toBe('EXECUTE');
    expect(started.events.map((event) => event.type)).toEqual(['ToolCallStarted']);
  });

  it('resolves a call received before a FINISH retirement again when it is resumed from its record, and refuses one received after it', () => {
    const brokered = upTo('START').invocation;
    const resumed = resumePipeline(brokered);
    if (!resumed.resumable) throw new Error('expected a resumable call');
    const deprecatedAfter = { ...retiredBy('FINISH', 'ReleaseDeprecated'), retiredAt: later(5) };
    expect(must(advancePipeline(resumed.state, { step: 'TOOL_RESOLUTION', descriptor: deprecatedAfter }, ctx(later(30)))).state.step).toBe('SCHEMA_VALIDATION');
    const deprecatedBefore = { ...deprecatedAfter, retiredAt: later(-5) };
    expect(must(advancePipeline(resumed.state, { step: 'TOOL_RESOLUTION', descriptor: deprecatedBefore }, ctx(later(30)))).state.ending).toMatchObject({
      state: 'Denied',
      deniedStage: 'TOOL_RESOLUTION',
      failure: { code: 'CONFLICT', message: 'github.create_issue@1.0.0 is not active (ReleaseDeprecated: release r1 was deprecated)' },
    });
  });

  it('cancels a resumed call received before a CANCEL_PENDING retirement at tool resolution, as it would have been before its start', () => {
    const resumed = resumePipeline(upTo('START').invocation);
    if (!resumed.resumable) throw new Error('expected a resumable call');
    const ended = must(advancePipeline(resumed.state, { step: 'TOOL_RESOLUTION', descriptor: { ...retiredBy('CANCEL_PENDING'), retiredAt: later(5) } }, ctx(later(30))));
    expect(ended.state.ending).toMatchObject({ state: 'Cancelled', failure: { code: 'CANCELLED' } });
    expect(ended.state.ending?.failure?.message).toBe('github.create_issue@1.0.0 was retired before the call started (ReleaseRevoked: release r1 was revoked; in-flight policy CANCEL_PENDING)');
  });

  it('goes on when the descriptor was retired for another reason after resolution (only a release’s in-flight policy cancels)', () => {
    const started = must(advancePipeline(upTo('START'), { step: 'START', current: { ...gatedTool, active: false, inactiveReason: 'Unbound' } }, ctx(later(20))));
    expect(started.state.step).toBe('EXECUTE');
  });
});

describe('resumePipeline', () => {
  it('rebuilds the terminal events of an ended invocation byte for byte', () => {
    const { final, transitions } = gatedPath();
    const published = transitions.find((t) => t.state.step === 'PUBLISH_TERMINAL')?.events;
    const resumed = resumePipeline(final.invocation);
    expect(resumed).toMatchObject({ resumable: true, state: { step: 'PUBLISH_TERMINAL' } });
    if (resumed.resumable) expect(resumed.events).toEqual(published);
  });

  it('parks an invocation awaiting approval until the decision, then continues', () => {
    const { states } = gatedPath();
    const parked = (states.find((s) => s.step === 'APPROVAL_DECISION') as PipelineState).invocation;
    const resumed = resumePipeline(parked, gatedTool);
    expect(resumed).toMatchObject({ resumable: true, state: { step: 'APPROVAL_DECISION', descriptor: gatedTool } });
    if (!resumed.resumable) return;
    const granted = must(advancePipeline(resumed.state, { step: 'APPROVAL_DECISION', result: 'granted', approvalId: ids.approval, requestHash: parked.requestHash, toolVersion: '1.0.0' }, ctx()));
    expect(granted.state.step).toBe('CREDENTIAL_BROKER');
    const withoutDescriptor = resumePipeline(parked);
    if (withoutDescriptor.resumable) {
      const denied = must(advancePipeline(withoutDescriptor.state, { step: 'APPROVAL_DECISION', result: 'granted', approvalId: ids.approval, requestHash: parked.requestHash, toolVersion: '1.0.0' }, ctx()));
      expect(denied.state.ending).toMatchObject({ state: 'Denied', failure: { code: 'CONFLICT' } });
    }
  });

  it('runs an interrupted pre-execution invocation again from tool resolution, and never resumes an execution', () => {
    const { states } = gatedPath();
    const brokered = (states.find((s) => s.step === 'START') as PipelineState).invocation;
    const resumed = resumePipeline(brokered);
    expect(resumed).toMatchObject({ resumable: true, state: { step: 'TOOL_RESOLUTION', invocation: { state: 'Received', secretLeaseIds: [], approvalId: ids.approval } } });
    if (resumed.resumable) expect(resumed.state.invocation.sandboxLeaseId).toBeUndefined();
    const executing = (states.find((s) => s.step === 'EXECUTE') as PipelineState).invocation;
    expect(resumePipeline(executing)).toMatchObject({ resumable: false });
  });
});
