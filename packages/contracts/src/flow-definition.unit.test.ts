import { describe, expect, it } from 'vitest';
import { FlowCallStep, FlowDefinitionBody, FlowExpression, FlowParallelStep, FlowStep, FlowStepId, MAX_FLOW_SCHEMA_BYTES, MAX_FLOW_STEPS } from './flow-definition.js';

const call = (id: string, extra: Record<string, unknown> = {}) => ({ id, kind: 'call', tool: 'orders.lookup', arguments: '{"id": input.orderId}', ...extra });
const body = (extra: Record<string, unknown> = {}) => ({
  inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
  outputSchema: { type: 'object' },
  steps: [call('lookup')],
  output: '{"total": steps.lookup.total}',
  ...extra,
});
const issues = (value: unknown) => {
  const result = FlowDefinitionBody.safeParse(value);
  return result.success ? [] : result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
};

describe('FlowStepId and FlowExpression', () => {
  it('accept lowercase ids of at most 64 characters and refuse the rest', () => {
    for (const id of ['a', 'lookup', 'step_2', `a${'b'.repeat(63)}`]) expect(FlowStepId.safeParse(id).success, id).toBe(true);
    for (const id of ['', '2step', 'Lookup', 'a-b', 'a.b', `a${'b'.repeat(64)}`]) expect(FlowStepId.safeParse(id).success, id).toBe(false);
  });

  it('bound an expression to 1..4096 characters', () => {
    expect(FlowExpression.safeParse('input').success).toBe(true);
    expect(FlowExpression.safeParse('').success).toBe(false);
    expect(FlowExpression.safeParse('x'.repeat(4096)).success).toBe(true);
    expect(FlowExpression.safeParse('x'.repeat(4097)).success).toBe(false);
  });
});

describe('FlowCallStep and FlowParallelStep', () => {
  it('accept a call with every optional field', () => {
    expect(FlowCallStep.safeParse(call('a', { toolVersion: '3', title: 'Look it up', when: 'input.go', retry: { maxAttempts: 3, backoffMs: 100 } })).success).toBe(true);
  });

  it('refuse unknown keys, a bad tool id and retry settings out of bounds', () => {
    expect(FlowCallStep.safeParse(call('a', { extra: 1 })).success).toBe(false);
    expect(FlowCallStep.safeParse(call('a', { tool: 'lookup' })).success).toBe(false);
    for (const retry of [{ maxAttempts: 1, backoffMs: 0 }, { maxAttempts: 6, backoffMs: 0 }, { maxAttempts: 2, backoffMs: 60_001 }, { maxAttempts: 2, backoffMs: -1 }, { maxAttempts: 2.5, backoffMs: 0 }, { maxAttempts: 2 }]) {
      expect(FlowCallStep.safeParse(call('a', { retry })).success, JSON.stringify(retry)).toBe(false);
    }
  });

  it('hold 2..8 calls in a parallel group, and no nested groups', () => {
    const group = (n: number) => ({ id: 'group', kind: 'parallel', steps: Array.from({ length: n }, (_, i) => call(`c${i}`)) });
    expect(FlowParallelStep.safeParse(group(1)).success).toBe(false);
    expect(FlowParallelStep.safeParse(group(2)).success).toBe(true);
    expect(FlowParallelStep.safeParse(group(8)).success).toBe(true);
    expect(FlowParallelStep.safeParse(group(9)).success).toBe(false);
    expect(FlowStep.safeParse({ id: 'outer', kind: 'parallel', steps: [group(2), call('x')] }).success).toBe(false);
    expect(FlowStep.safeParse({ ...call('a'), kind: 'loop' }).success).toBe(false);
  });
});

describe('FlowDefinitionBody', () => {
  it('accepts a flow with a sequence and a parallel group', () => {
    expect(issues(body({ title: 'Refund', steps: [call('lookup'), { id: 'fan', kind: 'parallel', when: 'steps.lookup.ok', steps: [call('a'), call('b')] }] }))).toEqual([]);
  });

  it('needs 1..32 steps and refuses unknown keys', () => {
    expect(issues(body({ steps: [] }))).not.toEqual([]);
    expect(issues(body({ steps: Array.from({ length: MAX_FLOW_STEPS }, (_, i) => call(`s${i}`)) }))).toEqual([]);
    expect(issues(body({ steps: Array.from({ length: MAX_FLOW_STEPS + 1 }, (_, i) => call(`s${i}`)) }))).not.toEqual([]);
    expect(issues(body({ version: 2 }))).not.toEqual([]);
  });

  it('refuses a step id used twice, at the top level or inside a parallel group', () => {
    expect(issues(body({ steps: [call('a'), call('a')] }))).toEqual(['steps.1.id: step id "a" appears more than once in the flow']);
    expect(issues(body({ steps: [call('a'), { id: 'g', kind: 'parallel', steps: [call('b'), call('a')] }] }))).toEqual([
      'steps.1.steps.1.id: step id "a" appears more than once in the flow',
    ]);
    expect(issues(body({ steps: [{ id: 'g', kind: 'parallel', steps: [call('g'), call('b')] }] }))).toEqual(['steps.0.steps.0.id: step id "g" appears more than once in the flow']);
  });

  it('needs input and output schemas of type "object", bounded in size', () => {
    expect(issues(body({ inputSchema: { type: 'string' } }))).toEqual(['inputSchema: inputSchema must be a JSON Schema of type "object"']);
    expect(issues(body({ outputSchema: {} }))).toEqual(['outputSchema: outputSchema must be a JSON Schema of type "object"']);
    expect(issues(body({ outputSchema: [] }))).not.toEqual([]);
    const huge = { type: 'object', description: 'x'.repeat(MAX_FLOW_SCHEMA_BYTES) };
    expect(issues(body({ inputSchema: huge }))).toEqual([`inputSchema: inputSchema is larger than ${MAX_FLOW_SCHEMA_BYTES} bytes`]);
  });
});
