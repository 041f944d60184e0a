import {
  InvocationEvent,
  MAX_COMPLETION_BYTES,
  MAX_COMPLETION_VALUE_CHARS,
  deriveIdempotencyKey,
  verifyReceipt,
  type InvocationCompletion,
  type PolicyDecision,
  type TenantPolicy,
  type ToolDescriptor,
} from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { at, caller, ctx, descriptor, ids, profile, publicKeys, request, scope, tenantPolicy } from '../../test/core-fixtures.js';
import { boundCompletion, checkCompletion, completionOutput } from './completion.js';
import { decideIdempotency } from './invocation-attempts.js';
import { advancePipeline, idempotencyKeyOf, receiveInvocation, requestHashOf, type PipelineState, type PipelineTransition, type StageOutcome } from './invocation-pipeline.js';
import { evaluatePolicy } from './policy-evaluator.js';

/** A bound prompt (always READ), with two arguments. */
const prompt: ToolDescriptor = descriptor({
  toolId: 'github.triage',
  providerToolName: 'triage',
  inputSchemaJson: JSON.stringify({ type: 'object', properties: { repo: { type: 'string' }, label: { type: 'string' } }, required: ['repo', 'label'], additionalProperties: false }),
  sideEffectClass: 'READ',
  riskClass: 'LOW',
  idempotency: 'NATURAL',
  prompt: { target: { kind: 'Skill', ref: 'triage' } },
});

const completion = (value: string, name = 'label'): InvocationCompletion => ({ argument: { name, value } });

function completionRequest(value: string, args: Record<string, string> = { repo: 'toolplane' }) {
  return request({ toolId: prompt.toolId, capability: 'prompt', arguments: args, completion: completion(value) });
}

function must(transition: PipelineTransition): Extract<PipelineTransition, { accepted: true }> {
  if (!transition.accepted) throw new Error(`not accepted at ${transition.expected}: ${transition.problem}`);
  return transition;
}

/** Runs a completion of the prompt to its end under a tenant policy; the provider offers `offered`. */
function runCompletion(policy: TenantPolicy, offered: readonly string[]) {
  const received = receiveInvocation({ scope, request: completionRequest('bu'), caller, invocationId: ids.invocation, resolvedToolVersion: prompt.toolVersion, defaultTimeoutMs: 60_000 }, { now: at });
  let state: PipelineState = received.state;
  const events = [...received.events];
  const decide = (): PolicyDecision =>
    evaluatePolicy({
      subject: { invocationId: ids.invocation, ...scope, toolId: prompt.toolId, toolVersion: prompt.toolVersion, requestHash: state.invocation.requestHash, arguments: { repo: 'toolplane' } },
      descriptor: prompt,
      caller,
      agentProfile: profile(),
      tenantPolicy: policy,
      rateCounters: new Map(),
      now: at,
    }).decision;
  let decision: PolicyDecision | undefined;
  const outcomes: Partial<Record<PipelineState['step'], () => StageOutcome>> = {
    TOOL_RESOLUTION: () => ({ step: 'TOOL_RESOLUTION', descriptor: prompt }),
    SCHEMA_VALIDATION: () => ({ step: 'SCHEMA_VALIDATION', check: checkCompletion(prompt, completion('bu'), { repo: 'toolplane' }) }),
    AGENT_PERMISSION: () => ({ step: 'AGENT_PERMISSION', decision: (decision ??= decide()) }),
    TENANT_POLICY: () => ({ step: 'TENANT_POLICY', decision: (decision ??= decide()) }),
    SIDE_EFFECT_CLASSIFICATION: () => ({ step: 'SIDE_EFFECT_CLASSIFICATION', decision: (decision ??= decide()) }),
    APPROVAL: () => (decision?.effect === 'allow' ? { step: 'APPROVAL', result: 'not_required' } : { step: 'APPROVAL', result: 'requested', approvalId: ids.approval }),
    CREDENTIAL_BROKER: () => ({ step: 'CREDENTIAL_BROKER', result: 'leased', secretLeaseIds: [] }),
    SANDBOX: () => ({ step: 'SANDBOX', result: 'not_needed' }),
    START: () => ({ step: 'START' }),
    EXECUTE: () => ({ step: 'EXECUTE', execution: { result: 'returned', output: completionOutput(boundCompletion({ values: offered })) } }),
    SANITIZE: () => ({ step: 'SANITIZE', secrets: ['s3cr3t-token'] }),
    FINISH: () => ({ step: 'FINISH' }),
    PUBLISH_TERMINAL: () => ({ step: 'PUBLISH_TERMINAL' }),
    REPLY: () => ({ step: 'REPLY' }),
  };
  while (state.step !== 'DONE' && state.step !== 'APPROVAL_DECISION') {
    const outcome = outcomes[state.step];
    if (outcome === undefined) throw new Error(`no outcome for ${state.step}`);
    const transition = must(advancePipeline(state, outcome(), ctx()));
    events.push(...transition.events);
    state = transition.state;
  }
  return { state, events };
}

describe('checkCompletion', () => {
  it('accepts an argument the prompt declares, with a partial set of the others as strings', () => {
    expect(checkCompletion(prompt, completion('bu'), {})).toEqual({ valid: true });
    expect(checkCompletion(prompt, completion(''), { repo: 'toolplane' })).toEqual({ valid: true });
  });

  it('refuses an argument the prompt does not declare, and arguments already chosen it does not declare or that are not strings', () => {
    expect(checkCompletion(prompt, completion('x', 'owner'), {})).toMatchObject({ valid: false, failure: { code: 'INVALID_ARGUMENT', message: 'github.triage@1.0.0 has no argument "owner" to complete' } });
    const refused = checkCompletion(prompt, completion('x'), { owner: 'me', repo: 7 });
    expect(refused).toMatchObject({
      valid: false,
      failure: { code: 'INVALID_ARGUMENT' },
      violations: [
        { path: '/owner', keyword: 'additionalProperties' },
        { path: '/repo', keyword: 'type' },
      ],
    });
    // No value is echoed.
    expect(JSON.stringify(refused)).not.toContain('me"');
  });

  it('a resource of one URI has no argument to complete; an unusable schema is CONFLICT', () => {
    const resource = descriptor({ inputSchemaJson: JSON.stringify({ type: 'object', properties: {}, additionalProperties: false }) });
    expect(checkCompletion(resource, completion('x', 'id'), {})).toMatchObject({ valid: false, failure: { code: 'INVALID_ARGUMENT' } });
    expect(checkCompletion(descriptor({ inputSchemaJson: '{' }), completion('x'), {})).toMatchObject({ valid: false, failure: { code: 'CONFLICT' } });
  });
});

describe('boundCompletion', () => {
  it('keeps what the server offered when it is within the bounds', () => {
    expect(boundCompletion({ values: ['bug', 'build'], total: 2, hasMore: false })).toEqual({ values: ['bug', 'build'], total: 2, hasMore: false });
    expect(boundCompletion({ values: [] })).toEqual({ values: [] });
  });

  it('keeps 100 values at most, leaves out (never cuts) a value over the length bound, and says there are more', () => {
    const many = Array.from({ length: 150 }, (_, i) => `v${i}`);
    const bounded = boundCompletion({ values: many, total: 150 });
    expect(bounded.values).toHaveLength(100);
    expect(bounded).toMatchObject({ total: 150, hasMore: true });
    const long = 'x'.repeat(MAX_COMPLETION_VALUE_CHARS + 1);
    expect(boundCompletion({ values: ['a', long, 'b'] })).toEqual({ values: ['a', 'b'], hasMore: true });
  });

  it('keeps the values within MAX_COMPLETION_BYTES together, and a total only when it is a count', () => {
    const wide = '€'.repeat(MAX_COMPLETION_VALUE_CHARS);
    const bounded = boundCompletion({ values: Array.from({ length: 100 }, () => wide) });
    expect(bounded.hasMore).toBe(true);
    expect(Buffer.byteLength(bounded.values.join(''), 'utf8')).toBeLessThanOrEqual(MAX_COMPLETION_BYTES);
    expect(boundCompletion({ values: ['a'], total: -1 })).toEqual({ values: ['a'] });
    expect(boundCompletion({ values: ['a'], total: 1.5 })).toEqual({ values: ['a'] });
  });
});

describe('a completion in the pipeline', () => {
  it('is hashed and keyed with its partial value: two partial values are two requests, the same one is a replay', () => {
    const hashOf = (value: string) => requestHashOf(scope, completionRequest(value), prompt.toolVersion);
    expect(hashOf('bu')).toBe(hashOf('bu'));
    expect(hashOf('bu')).not.toBe(hashOf('bug'));
    // A prompts/get of the same prompt with the same arguments is another request too.
    expect(hashOf('bu')).not.toBe(requestHashOf(scope, { toolId: prompt.toolId, arguments: { repo: 'toolplane' } }, prompt.toolVersion));

    const derived = (value: string) => idempotencyKeyOf({ ...completionRequest(value), idempotencyKey: undefined, durableExecutionId: 'run-1', agentRevision: '7' }).key;
    expect(derived('bu')).not.toBe(derived('bug'));
    expect(derived('bu')).toBe(deriveIdempotencyKey({ durableExecutionId: 'run-1', agentRevision: '7', toolId: prompt.toolId, arguments: { repo: 'toolplane' }, completion: completion('bu') }));

    const stored = runCompletion(tenantPolicy(), ['bug']).state.invocation;
    const incoming = (value: string) => ({ scope, toolId: prompt.toolId, requestedToolVersion: undefined, arguments: { repo: 'toolplane' }, completion: completion(value) });
    expect(decideIdempotency(stored, incoming('bu'), false).kind).toBe('replay');
    expect(decideIdempotency(stored, incoming('bug'), false)).toMatchObject({ kind: 'conflict', failure: { code: 'CONFLICT' } });
    expect(decideIdempotency(stored, { ...incoming('bu'), completion: undefined }, false).kind).toBe('conflict');
  });

  it('runs like a read: recorded with its events, the values sanitized, a receipt that names the operation', () => {
    const { state, events } = runCompletion(tenantPolicy(), ['bug', 'build s3cr3t-token']);
    const { invocation } = state;
    expect(invocation).toMatchObject({ state: 'Observed', completion: completion('bu'), argumentsJson: '{"repo":"toolplane"}', effectiveClass: 'READ' });
    expect(invocation.receipt).toMatchObject({ operation: 'completion', state: 'Observed', sideEffectClass: 'READ' });
    expect(verifyReceipt(invocation.receipt!, publicKeys)).toMatchObject({ valid: true });
    expect(events.map((event) => event.type)).toEqual(['InvocationReceived', 'ToolCallStarted', 'ToolCallCompleted']);
    for (const event of events) InvocationEvent.parse(event);
    expect(events[0]?.data).toMatchObject({ operation: 'completion' });
    const result = JSON.parse(invocation.resultJson ?? '{}') as { structuredContent: { completion: { values: string[] } }; content: { text: string }[] };
    expect(result.structuredContent.completion.values).toEqual(['bug', 'build [REDACTED]']);
    expect(result.content[0]?.text).toBe('bug\nbuild [REDACTED]');
  });

  it('is never put to a human: where the policy would ask for an approval, it is denied at APPROVAL instead', () => {
    const { state, events } = runCompletion(tenantPolicy({ approvalRequiredClasses: ['READ'] }), ['bug']);
    expect(state.invocation).toMatchObject({ state: 'Denied', deniedStage: 'APPROVAL', failure: { code: 'AUTHORIZATION_DENIED' } });
    expect(state.invocation.approvalId).toBeUndefined();
    expect(events.map((event) => event.type)).toEqual(['InvocationReceived', 'InvocationDenied']);
  });

  it('is denied, like fetching the prompt, for an agent the prompt is not allowed to', () => {
    const received = receiveInvocation({ scope, request: completionRequest('bu'), caller, invocationId: ids.invocation, resolvedToolVersion: prompt.toolVersion, defaultTimeoutMs: 60_000 }, { now: at });
    const decision = evaluatePolicy({
      subject: { invocationId: ids.invocation, ...scope, toolId: prompt.toolId, toolVersion: prompt.toolVersion, requestHash: received.state.invocation.requestHash, arguments: { repo: 'toolplane' } },
      descriptor: prompt,
      caller,
      agentProfile: profile({ allowedTools: ['search.**'] }),
      tenantPolicy: tenantPolicy(),
      rateCounters: new Map(),
      now: at,
    }).decision;
    let state = must(advancePipeline(received.state, { step: 'TOOL_RESOLUTION', descriptor: prompt }, ctx())).state;
    state = must(advancePipeline(state, { step: 'SCHEMA_VALIDATION', check: { valid: true } }, ctx())).state;
    state = must(advancePipeline(state, { step: 'AGENT_PERMISSION', decision }, ctx())).state;
    expect(state).toMatchObject({ step: 'FINISH', ending: { state: 'Denied', deniedStage: 'AGENT_PERMISSION', failure: { code: 'AUTHORIZATION_DENIED' } } });
  });
});
