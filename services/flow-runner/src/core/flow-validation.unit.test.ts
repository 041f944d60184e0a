import { type FlowCallStep, type FlowDefinitionBody, type FlowStep, ToolplaneError } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { type FlowToolInfo, MAX_LISTED_PROBLEMS, flowSchemas, validateFlowBody } from './flow-validation.js';

const read: FlowToolInfo = { sideEffectClass: 'READ', inputSchemaJson: '{"type":"object"}' };
const write: FlowToolInfo = { sideEffectClass: 'WRITE', inputSchemaJson: '{"type":"object"}' };
const tools: Record<string, FlowToolInfo> = { 'orders.lookup': read, 'orders.refund': write, 'crm.note': write };
const lookupTool = (toolId: string) => tools[toolId];

const call = (id: string, extra: Partial<FlowCallStep> = {}): FlowCallStep => ({ id, kind: 'call', tool: 'orders.lookup', arguments: '{"id": input.orderId}', ...extra });
const flow = (steps: FlowStep[], extra: Partial<FlowDefinitionBody> = {}): FlowDefinitionBody => ({
  inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
  outputSchema: { type: 'object', properties: { refunded: { type: 'boolean' } } },
  steps,
  output: '{"refunded": true}',
  ...extra,
});

async function refusal(body: FlowDefinitionBody, lookup = lookupTool): Promise<ToolplaneError> {
  try {
    await validateFlowBody(body, lookup);
  } catch (error) {
    expect(error).toBeInstanceOf(ToolplaneError);
    return error as ToolplaneError;
  }
  throw new Error('expected the flow to be refused');
}

describe('validateFlowBody', () => {
  it('accepts a valid flow with a sequence, a parallel group, conditions and a READ retry', async () => {
    const looked: string[] = [];
    const body = flow(
      [
        call('lookup', { retry: { maxAttempts: 3, backoffMs: 100 } }),
        {
          id: 'fan',
          kind: 'parallel',
          when: 'steps.lookup.total > 0',
          steps: [call('refund', { tool: 'orders.refund', toolVersion: '2', arguments: '{"id": input.orderId, "amount": steps.lookup.total}' }), call('note', { tool: 'crm.note' })],
        },
        call('confirm', { when: '$exists(steps.refund)', arguments: '{"refund": steps.refund.id, "note": $$.steps.note.id}' }),
      ],
      { output: '{"refunded": $exists(steps.refund), "total": steps.lookup.total}' },
    );
    await validateFlowBody(body, (toolId, toolVersion) => {
      looked.push(toolVersion === undefined ? toolId : `${toolId}@${toolVersion}`);
      return tools[toolId];
    });
    expect(looked).toEqual(['orders.lookup', 'orders.refund@2', 'crm.note', 'orders.lookup']);
  });

  it('refuses an expression that does not compile, naming the step and the expression', async () => {
    const error = await refusal(flow([call('lookup', { arguments: '{"id": input.' })]));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/^the flow is not valid: step "lookup" arguments: the expression does not compile: /);
    expect((await refusal(flow([call('lookup', { when: '$random() > 0.5' })]))).message).toContain('step "lookup" when: $random is not available');
    expect((await refusal(flow([call('lookup')], { output: '{"at": $now()}' }))).message).toContain('output: $now is not available');
  });

  it('refuses a reference to a step that runs later, to itself, or to no step', async () => {
    const error = await refusal(flow([call('first', { arguments: '{"x": steps.second.x, "y": steps.first.y, "z": steps.ghost}' }), call('second')], { output: '{"w": steps.nowhere}' }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain('step "first" arguments: steps.second has not run yet at this point');
    expect(error.message).toContain('step "first" arguments: steps.first has not run yet at this point');
    expect(error.message).toContain('step "first" arguments: steps.ghost names no step of this flow');
    expect(error.message).toContain('output: steps.nowhere names no step of this flow');
  });

  it('refuses a reference to a sibling in the same parallel group, and to a group itself', async () => {
    const group: FlowStep = { id: 'fan', kind: 'parallel', when: 'steps.a.ok', steps: [call('a'), call('b', { arguments: '{"x": steps.a.x}' })] };
    const error = await refusal(flow([group, call('after', { arguments: '{"all": steps.fan}' })]));
    expect(error.message).toContain('step "fan" when: steps.a is in the same parallel group, which runs at the same time');
    expect(error.message).toContain('step "b" (in "fan") arguments: steps.a is in the same parallel group, which runs at the same time');
    expect(error.message).toContain('step "after" arguments: steps.fan is a parallel group, which has no output of its own; name one of its steps');
  });

  it('refuses a step that calls a flow-backed tool, even one that exists', async () => {
    const flowTool = (toolId: string) => (toolId === 'flows.orders.refund' ? write : lookupTool(toolId));
    const error = await refusal(flow([call('nested', { tool: 'flows.orders.refund' })]), flowTool);
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain('step "nested": flows.orders.refund is a flow-backed tool');
  });

  it('says NOT_FOUND, naming the step and the tool, when the only problems are unknown tools', async () => {
    const error = await refusal(flow([call('lookup', { tool: 'orders.unknown', toolVersion: '7' }), call('other', { tool: 'billing.nothing' })]));
    expect(error.code).toBe('NOT_FOUND');
    expect(error.message).toBe(
      'the flow calls tools that do not exist: step "lookup": the tool orders.unknown@7 is not an active tool of this workspace; step "other": the tool billing.nothing is not an active tool of this workspace',
    );
    const mixed = await refusal(flow([call('lookup', { tool: 'orders.unknown' }), call('bad', { arguments: '(' })]));
    expect(mixed.code).toBe('INVALID_ARGUMENT');
    expect(mixed.message).toContain('step "lookup": the tool orders.unknown is not an active tool');
  });

  it('refuses retry on a tool that is not READ', async () => {
    const error = await refusal(flow([call('refund', { tool: 'orders.refund', retry: { maxAttempts: 2, backoffMs: 0 } })]));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toBe('the flow is not valid: step "refund": retry is only allowed on READ tools, and orders.refund is WRITE');
    const inGroup = await refusal(flow([{ id: 'fan', kind: 'parallel', steps: [call('a'), call('b', { tool: 'crm.note', retry: { maxAttempts: 2, backoffMs: 0 } })] }]));
    expect(inGroup.message).toContain('step "b" (in "fan"): retry is only allowed on READ tools, and crm.note is WRITE');
  });

  it('refuses input or output schemas that do not compile', async () => {
    const cases: [Partial<FlowDefinitionBody>, RegExp][] = [
      [{ inputSchema: { type: 'object', properties: { a: { type: 'nope' } } } }, /^the flow is not valid: inputSchema: the schema does not compile: /],
      [{ outputSchema: { type: 'object', properties: { a: { $ref: 'https://example.com/a.json' } } } }, /outputSchema: the schema does not compile: .*resolve reference/],
      [{ inputSchema: { type: 'object', properties: { a: { type: 'string', pattern: '(a)\\1' } } } }, /inputSchema: the schema does not compile: .*backreference/],
      [{ inputSchema: { $schema: 'https://example.com/dialect', type: 'object' } }, /inputSchema: unsupported \$schema "https:\/\/example.com\/dialect"/],
      [{ outputSchema: { type: 'object', $defs: { loop: { $ref: '#/$defs/loop' } }, properties: { a: { $ref: '#/$defs/loop' } }, allOf: [{ $ref: '#/$defs/loop' }] } }, /outputSchema: the schema refers to itself without consuming input/],
    ];
    for (const [extra, pattern] of cases) expect((await refusal(flow([call('lookup')], extra))).message).toMatch(pattern);
  });

  it('refuses a body its contract refuses (here: a step id used twice)', async () => {
    const error = await refusal(flow([call('lookup'), call('lookup')]));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toBe('the flow is not valid: steps.1.id: step id "lookup" appears more than once in the flow');
  });

  it('lists a bounded number of problems', async () => {
    const steps = Array.from({ length: 25 }, (_, i) => call(`s${i}`, { arguments: `steps.z${i}` }));
    const error = await refusal(flow(steps));
    expect(error.message.split('; ')).toHaveLength(MAX_LISTED_PROBLEMS + 1);
    expect(error.message).toMatch(/; and 5 more$/);
    expect(error.message.length).toBeLessThanOrEqual(4096);
  });

  it('passes a failing lookup through as it is', async () => {
    const unavailable = new ToolplaneError('TEMPORARY_UNAVAILABLE', 'descriptors are not loaded yet');
    await expect(
      validateFlowBody(flow([call('lookup')]), () => {
        throw unavailable;
      }),
    ).rejects.toBe(unavailable);
    await expect(validateFlowBody(flow([call('lookup')]), () => Promise.reject(unavailable))).rejects.toBe(unavailable);
  });
});

describe('flowSchemas', () => {
  it('validates values, reporting where and why, and caches by canonical text', () => {
    const schemas = flowSchemas();
    const schema = { type: 'object', properties: { total: { type: 'number' }, tags: { type: 'array', uniqueItems: true } }, required: ['total'], additionalProperties: false };
    const compiled = schemas.compile(schema);
    expect(compiled.usable).toBe(true);
    if (!compiled.usable) return;
    expect(compiled.validate({ total: 1, tags: [{ a: 1 }, { a: 2 }] })).toEqual([]);
    expect(compiled.validate({ tags: [{ a: 1, b: 2 }, { b: 2, a: 1 }], extra: 1 })).toEqual([
      '/total must have required property \'total\'',
      '/extra must NOT have additional properties',
      '/tags must NOT have duplicate items (items ## 0 and 1 are identical)',
    ]);
    expect(schemas.compile({ additionalProperties: false, required: ['total'], properties: schema.properties, type: 'object' })).toBe(compiled);
  });

  it('understands the draft-07 and 2019-09 dialects and formats', () => {
    const schemas = flowSchemas();
    for (const $schema of ['http://json-schema.org/draft-07/schema#', 'https://json-schema.org/draft/2019-09/schema']) {
      const compiled = schemas.compile({ $schema, type: 'object', properties: { at: { type: 'string', format: 'date-time' } } });
      expect(compiled.usable, $schema).toBe(true);
      if (compiled.usable) expect(compiled.validate({ at: 'yesterday' }), $schema).toEqual(['/at must match format "date-time"']);
    }
  });
});
