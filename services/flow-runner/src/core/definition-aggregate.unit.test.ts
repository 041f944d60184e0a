import { describe, expect, it } from 'vitest';
import { ToolDefinition, ToolDefinitionRecord, type FlowDefinitionBody, type ToolDefinitionSpec } from '@toolplane/contracts';
import { foldEvents, handleCommand, inMemoryEventStore } from '@toolplane/event-store';
import { definitionDecider, definitionDocument, etagMatches, etagOf, type DefinitionAggregate, type DefinitionCommand } from './definition-aggregate.js';
import { flowBodyHash, flowDecider, type FlowAggregate, type FlowCommand } from './flow-aggregate.js';

// The ToolDefinition aggregate's rules: create if absent, update and delete only with the current ETag (a stale one
// is CONFLICT naming the current tag), canonical schema equality whenever it is saved enabled, a disabled definition
// editable whatever its schemas, and a deleted name creatable again under a new tag.

const actor = 'user:author@example.com';
const at = '2026-03-01T10:00:00.000Z';
const scope = { tenant: 'acme', workspace: 'main' };
const inputSchema = { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] };
const outputSchema = { type: 'object', properties: { total: { type: 'number' } } };

const flowBody: FlowDefinitionBody = {
  inputSchema,
  outputSchema,
  steps: [{ id: 'lookup', kind: 'call', tool: 'shop.get_order', arguments: '{"id": input.orderId}' }],
  output: '{"total": steps.lookup.total}',
};

function flowState(...commands: FlowCommand[]): FlowAggregate {
  return commands.reduce((state, command) => flowDecider.decide(command, state).reduce((folded, event) => flowDecider.evolve(folded, event), state), flowDecider.initialState());
}

/** Flow `refund`: version 1 Published and Active, version 2 a draft. */
const flow = flowState(
  { type: 'SaveFlowDraft', flowId: 'refund', body: flowBody, actor, at },
  { type: 'PublishFlowVersion', flowId: 'refund', version: 1, bodyHash: flowBodyHash(flowBody), actor, at },
  { type: 'ActivateFlowVersion', flowId: 'refund', version: 1, definitions: [], actor, at },
  { type: 'SaveFlowDraft', flowId: 'refund', body: { ...flowBody, output: '{"total": 0}' }, actor, at },
);

function spec(overrides: Partial<ToolDefinitionSpec> = {}): ToolDefinitionSpec {
  return {
    name: 'orders.refund',
    mcpName: 'refund_order',
    description: 'Refunds an order.',
    enabled: true,
    approval: 'Policy',
    sideEffectClass: 'WRITE',
    riskClass: 'MEDIUM',
    inputSchema,
    outputSchema,
    timeoutMs: 30_000,
    flow: { flowId: 'refund', follow: 'active' },
    ...overrides,
  };
}

// `null`: the caller read no flow (none exists, or the spec is disabled and none was needed).
const create = (s = spec(), f: FlowAggregate | null = flow): DefinitionCommand => ({ type: 'CreateDefinition', spec: s, ...(f === null ? {} : { flow: f }), actor, at });
const update = (ifMatch: string, s = spec(), f: FlowAggregate | null = flow): DefinitionCommand => ({ type: 'UpdateDefinition', spec: s, ifMatch, ...(f === null ? {} : { flow: f }), actor, at });
const remove = (ifMatch: string): DefinitionCommand => ({ type: 'DeleteDefinition', name: 'orders.refund', ifMatch, actor, at });

function fold(...commands: DefinitionCommand[]): DefinitionAggregate {
  return commands.reduce((state, command) => definitionDecider.decide(command, state).reduce((folded, event) => definitionDecider.evolve(folded, event), state), definitionDecider.initialState());
}

function refusal(command: DefinitionCommand, state: DefinitionAggregate): { code: string; message: string; details?: Record<string, unknown> } {
  try {
    definitionDecider.decide(command, state);
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error('the command was not refused');
}

/** Asserts a refusal's code, what its message says, and (when given) its details. */
function expectRefused(error: { code: string; message: string; details?: Record<string, unknown> }, code: string, message: string | RegExp, details?: Record<string, unknown>): void {
  expect(error.code).toBe(code);
  expect(error.message).toMatch(message);
  if (details !== undefined) expect(error.details).toEqual(details);
}

describe('entity tags', () => {
  it('are the version in quotes, matched with or without the quotes', () => {
    expect(etagOf(3)).toBe('"3"');
    expect(etagMatches('"3"', 3)).toBe(true);
    expect(etagMatches('3', 3)).toBe(true);
    expect(etagMatches('"4"', 3)).toBe(false);
    expect(etagMatches('W/"3"', 3)).toBe(false);
  });
});

describe('create if absent', () => {
  it('creates version 1 (etag "1")', () => {
    const state = fold(create());
    expect(definitionDocument(scope, state)).toMatchObject({ name: 'orders.refund', version: 1, etag: '"1"', createdBy: actor });
  });

  it('answers the same create again with what exists, and refuses another one naming the current etag', () => {
    const state = fold(create());
    expect(definitionDecider.decide(create(), state)).toEqual([]);
    const conflict = refusal(create(spec({ description: 'Another.' })), state);
    expectRefused(conflict, 'CONFLICT', 'etag "1"', { etag: '"1"' });
  });
});

describe('If-Match update', () => {
  it('replaces the definition at the current etag, and the etag moves on', () => {
    const state = fold(create(), update('"1"', spec({ description: 'Refunds an order in full.' })));
    expect(definitionDocument(scope, state)).toMatchObject({ description: 'Refunds an order in full.', etag: '"2"', updatedBy: actor });
  });

  it('refuses a stale etag with CONFLICT naming the current one', () => {
    const state = fold(create(), update('"1"', spec({ description: 'Second.' })));
    expectRefused(refusal(update('"1"', spec({ description: 'Third.' })), state), 'CONFLICT', 'current etag "2"', { etag: '"2"' });
  });

  it('records nothing for the same definition, refuses a rename, and NOT_FOUND for one that does not exist', () => {
    const state = fold(create());
    expect(definitionDecider.decide(update('"1"'), state)).toEqual([]);
    expect(refusal(update('"1"', spec({ name: 'orders.other' })), state)).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(refusal(update('"1"'), definitionDecider.initialState())).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('If-Match delete', () => {
  it('deletes at the current etag and refuses a stale one', () => {
    const state = fold(create(), update('"1"', spec({ description: 'Second.' })));
    expectRefused(refusal(remove('"1"'), state), 'CONFLICT', '"2"');
    const deleted = fold(create(), update('"1"', spec({ description: 'Second.' })), remove('"2"'));
    expect(definitionDocument(scope, deleted)).toMatchObject({ deleted: true, etag: '"3"', description: 'Second.' });
  });

  it('records nothing for the same delete again, and NOT_FOUND for any other change of a deleted definition', () => {
    const deleted = fold(create(), remove('"1"'));
    expect(definitionDecider.decide(remove('"2"'), deleted)).toEqual([]);
    expect(refusal(remove('"1"'), deleted)).toMatchObject({ code: 'NOT_FOUND' });
    expect(refusal(update('"2"'), deleted)).toMatchObject({ code: 'NOT_FOUND' });
    expect(refusal(remove('"1"'), definitionDecider.initialState())).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('lets a deleted name be created again, under a new etag', () => {
    const recreated = fold(create(), remove('"1"'), create(spec({ description: 'Anew.' })));
    expect(definitionDocument(scope, recreated)).toMatchObject({ description: 'Anew.', etag: '"3"', version: 3 });
    expect(definitionDocument(scope, recreated)?.deleted).toBeUndefined();
  });
});

describe('schema equality', () => {
  const otherInput = { type: 'object', properties: { id: { type: 'integer' } } };

  it('is required when a definition is saved enabled (create and update)', () => {
    expectRefused(refusal(create(spec({ inputSchema: otherInput })), definitionDecider.initialState()), 'INVALID_ARGUMENT', /^schema mismatch: the input schema of definition orders\.refund differs from version 1 of flow refund/);
    const state = fold(create());
    expectRefused(refusal(update('"1"', spec({ outputSchema: { type: 'object' } })), state), 'INVALID_ARGUMENT', 'output schema');
  });

  it('is required on enabling, and not checked while disabled (a disabled definition stays editable)', () => {
    const disabled = fold(create(spec({ enabled: false, inputSchema: otherInput }), null));
    const edited = fold(create(spec({ enabled: false, inputSchema: otherInput }), null), update('"1"', spec({ enabled: false, inputSchema: otherInput, description: 'Edited.' }), null));
    expect(definitionDocument(scope, edited)).toMatchObject({ enabled: false, etag: '"2"' });
    expectRefused(refusal(update('"1"', spec({ inputSchema: otherInput })), disabled), 'INVALID_ARGUMENT', 'schema mismatch');
    expect(definitionDecider.decide(update('"1"', spec()), disabled)).toHaveLength(1);
  });

  it('ignores key order (canonical JSON)', () => {
    const reordered = { required: ['orderId'], type: 'object', properties: { orderId: { type: 'string' } } };
    expect(definitionDecider.decide(create(spec({ inputSchema: reordered })), definitionDecider.initialState())).toHaveLength(1);
  });

  it('resolves the Flow when enabled: an exact version must be published, following needs an active version, the flow must exist', () => {
    const empty = definitionDecider.initialState();
    expect(definitionDecider.decide(create(spec({ flow: { flowId: 'refund', version: 1 } })), empty)).toHaveLength(1);
    expectRefused(refusal(create(spec({ flow: { flowId: 'refund', version: 2 } })), empty), 'CONFLICT', 'draft');
    expect(refusal(create(spec({ flow: { flowId: 'refund', version: 9 } })), empty)).toMatchObject({ code: 'NOT_FOUND' });
    const noActive = flowState(
      { type: 'SaveFlowDraft', flowId: 'refund', body: flowBody, actor, at },
      { type: 'PublishFlowVersion', flowId: 'refund', version: 1, bodyHash: flowBodyHash(flowBody), actor, at },
    );
    expectRefused(refusal(create(spec(), noActive), empty), 'CONFLICT', 'no active version');
    expectRefused(refusal(create(spec(), null), empty), 'NOT_FOUND', 'no flow refund');
  });
});

describe('the ToolDefinition decider on the write path', () => {
  it('records what it decides in the record contract, replays to the same state, and reads back as a valid document', async () => {
    const store = inMemoryEventStore<ToolDefinitionRecord>();
    let last;
    for (const command of [create(), update('"1"', spec({ enabled: false })), remove('"2"'), create()]) last = await handleCommand(store, definitionDecider, 'd', command);
    const { events } = await store.readStream('d');
    for (const event of events) expect(ToolDefinitionRecord.parse(event)).toEqual(event);
    const state = foldEvents(definitionDecider, events);
    expect(state).toEqual(last?.newState);
    expect(ToolDefinition.parse(definitionDocument(scope, state))).toMatchObject({ etag: '"4"', enabled: true });
  });
});
