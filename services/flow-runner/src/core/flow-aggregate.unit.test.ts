import { describe, expect, it } from 'vitest';
import { FlowRecord, FlowVersion, type FlowDefinitionBody, type ToolDefinitionSpec } from '@toolplane/contracts';
import { foldEvents, handleCommand, inMemoryEventStore } from '@toolplane/event-store';
import {
  activeVersionOf,
  currentDraft,
  flowBodyHash,
  flowDecider,
  flowVersionDocument,
  flowVersionOf,
  flowVersionSummaries,
  resolveFlowReference,
  schemaDifferences,
  type FlowAggregate,
  type FlowCommand,
} from './flow-aggregate.js';

// The Flow aggregate's rules: one draft at a time, Published versions immutable, one Active version, and no
// activation that would break an enabled definition following the active version.

const actor = 'user:author@example.com';
const at = '2026-03-01T10:00:00.000Z';
const scope = { tenant: 'acme', workspace: 'main' };

const inputSchema = { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] };
const outputSchema = { type: 'object', properties: { total: { type: 'number' } } };

function body(output = '{"total": steps.lookup.total}', schemas: Partial<Pick<FlowDefinitionBody, 'inputSchema' | 'outputSchema'>> = {}): FlowDefinitionBody {
  return {
    inputSchema,
    outputSchema,
    ...schemas,
    steps: [{ id: 'lookup', kind: 'call', tool: 'shop.get_order', arguments: '{"id": input.orderId}' }],
    output,
  };
}

const save = (b: FlowDefinitionBody, version?: number): FlowCommand => ({ type: 'SaveFlowDraft', flowId: 'refund', body: b, ...(version === undefined ? {} : { version }), actor, at });
const publish = (version: number, b: FlowDefinitionBody): FlowCommand => ({ type: 'PublishFlowVersion', flowId: 'refund', version, bodyHash: flowBodyHash(b), actor, at });
const activate = (version: number, definitions: readonly ToolDefinitionSpec[] = []): FlowCommand => ({ type: 'ActivateFlowVersion', flowId: 'refund', version, definitions, actor, at });

function fold(...commands: FlowCommand[]): FlowAggregate {
  return commands.reduce((state, command) => flowDecider.decide(command, state).reduce((folded, event) => flowDecider.evolve(folded, event), state), flowDecider.initialState());
}

function refusal(command: FlowCommand, state: FlowAggregate): { code: string; message: string } {
  try {
    flowDecider.decide(command, state);
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error('the command was not refused');
}

function definition(overrides: Partial<ToolDefinitionSpec> = {}): ToolDefinitionSpec {
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

/** Asserts a refusal's code, what its message says, and (when given) its details. */
function expectRefused(error: { code: string; message: string; details?: Record<string, unknown> }, code: string, message: string | RegExp, details?: Record<string, unknown>): void {
  expect(error.code).toBe(code);
  expect(error.message).toMatch(message);
  if (details !== undefined) expect(error.details).toEqual(details);
}

describe('saving drafts', () => {
  it('creates version 1, then edits that draft in place while it is a draft', () => {
    const first = fold(save(body()));
    expect(first.versions).toHaveLength(1);
    expect(currentDraft(first)).toMatchObject({ version: 1, status: 'Draft', bodyHash: flowBodyHash(body()) });
    const edited = fold(save(body()), save(body('{"total": 1}')));
    expect(edited.versions).toHaveLength(1);
    expect(currentDraft(edited)?.body.output).toBe('{"total": 1}');
    expect(fold(save(body()), save(body('{"total": 1}'), 1)).versions).toHaveLength(1);
  });

  it('records nothing when the draft already has the body', () => {
    expect(flowDecider.decide(save(body()), fold(save(body())))).toEqual([]);
  });

  it('starts the next version after a published one, and never changes a published one', () => {
    const published = fold(save(body()), publish(1, body()));
    const next = fold(save(body()), publish(1, body()), save(body('{"total": 2}')));
    expect(next.versions.map((v) => [v.version, v.status])).toEqual([
      [1, 'Published'],
      [2, 'Draft'],
    ]);
    expectRefused(refusal(save(body('{"total": 2}'), 1), published), 'CONFLICT', 'version 1 of flow refund is published');
  });

  it('keeps one draft at a time and refuses a version that does not follow the newest', () => {
    const drafted = fold(save(body()));
    expectRefused(refusal(save(body(), 2), drafted), 'CONFLICT', 'is a draft already');
    expect(refusal(save(body(), 5), drafted)).toMatchObject({ code: 'NOT_FOUND' });
    expect(refusal(save(body(), 2), flowDecider.initialState())).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('publishing', () => {
  it('makes the validated draft immutable, and publishing it again records nothing', () => {
    const published = fold(save(body()), publish(1, body()));
    expect(flowVersionOf(published, 1)).toMatchObject({ status: 'Published', publishedBy: actor, publishedAt: at });
    expect(flowDecider.decide(publish(1, body()), published)).toEqual([]);
  });

  it('refuses a draft whose body changed since it was validated (retryable), and a version that does not exist', () => {
    const drafted = fold(save(body()));
    expect(refusal(publish(1, body('{"total": 9}')), drafted)).toMatchObject({ code: 'CONFLICT', retryable: true });
    expect(refusal(publish(2, body()), drafted)).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('activating', () => {
  const twoVersions = () => [save(body()), publish(1, body()), activate(1), save(body('{"total": 2}')), publish(2, body('{"total": 2}'))] as const;

  it('keeps one active version and records which one it replaced', () => {
    const first = fold(save(body()), publish(1, body()), activate(1));
    expect(activeVersionOf(first)?.version).toBe(1);
    const events = flowDecider.decide(activate(2), fold(...twoVersions()));
    expect(events).toEqual([{ type: 'FlowVersionActivated', flowId: 'refund', version: 2, previousVersion: 1, actor, at }]);
    const second = fold(...twoVersions(), activate(2));
    expect(second.activeVersion).toBe(2);
    expect(flowVersionSummaries(second).filter((v) => v.active).map((v) => v.version)).toEqual([2]);
    expect(flowDecider.decide(activate(2), second)).toEqual([]);
  });

  it('refuses a draft and a version that does not exist', () => {
    const drafted = fold(save(body()));
    expectRefused(refusal(activate(1), drafted), 'CONFLICT', 'is a draft');
    expect(refusal(activate(3), drafted)).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('is refused, naming the definition, while an enabled follower of the active version would have unequal schemas', () => {
    const changedOutput = body('{"total": 2}', { outputSchema: { type: 'object', properties: { total: { type: 'integer' } } } });
    const state = fold(save(body()), publish(1, body()), activate(1), save(changedOutput), publish(2, changedOutput));
    expectRefused(refusal(activate(2, [definition()]), state), 'CONFLICT', /would break the enabled definition orders\.refund.*output schema differs/);
  });

  it('lets followers with equal schemas, disabled followers, pinned definitions and other flows through', () => {
    const changedOutput = body('{"total": 2}', { outputSchema: { type: 'object', properties: { total: { type: 'integer' } } } });
    const state = fold(save(body()), publish(1, body()), activate(1), save(changedOutput), publish(2, changedOutput));
    const others = [
      definition({ name: 'orders.disabled', enabled: false }),
      definition({ name: 'orders.pinned', flow: { flowId: 'refund', version: 1 } }),
      definition({ name: 'orders.other', flow: { flowId: 'other', follow: 'active' } }),
      definition({ name: 'orders.matching', outputSchema: changedOutput.outputSchema }),
    ];
    expect(flowDecider.decide(activate(2, others), state)).toHaveLength(1);
  });

  it('compares schemas as canonical JSON: key order does not matter, a value does', () => {
    const reordered = { required: ['orderId'], properties: { orderId: { type: 'string' } }, type: 'object' };
    expect(schemaDifferences({ inputSchema: reordered, outputSchema }, body())).toEqual([]);
    expect(schemaDifferences({ inputSchema: { type: 'object' }, outputSchema: { type: 'object' } }, body())).toEqual(['input', 'output']);
  });
});

describe('resolving a definition reference', () => {
  const state = fold(save(body()), publish(1, body()), activate(1), save(body('{"total": 2}')));

  it('resolves an exact published version and the active one', () => {
    expect(resolveFlowReference(state, { flowId: 'refund', version: 1 }).version).toBe(1);
    expect(resolveFlowReference(state, { flowId: 'refund', follow: 'active' }).version).toBe(1);
  });

  it('refuses a draft, a missing version, a flow without an active version, and an unknown flow', () => {
    const attempt = (work: () => unknown) => {
      try {
        work();
      } catch (error) {
        return (error as { code: string }).code;
      }
      return 'OK';
    };
    expect(attempt(() => resolveFlowReference(state, { flowId: 'refund', version: 2 }))).toBe('CONFLICT');
    expect(attempt(() => resolveFlowReference(state, { flowId: 'refund', version: 7 }))).toBe('NOT_FOUND');
    expect(attempt(() => resolveFlowReference(fold(save(body()), publish(1, body())), { flowId: 'refund', follow: 'active' }))).toBe('CONFLICT');
    expect(attempt(() => resolveFlowReference(undefined, { flowId: 'refund', follow: 'active' }))).toBe('NOT_FOUND');
    expect(attempt(() => resolveFlowReference(state, { flowId: 'other', version: 1 }))).toBe('NOT_FOUND');
  });
});

describe('the Flow decider on the write path', () => {
  it('records what it decides in the record contract, replays to the same state, and reads back as valid documents', async () => {
    const store = inMemoryEventStore<FlowRecord>();
    let last;
    for (const command of [save(body()), publish(1, body()), activate(1), save(body('{"total": 2}'))]) last = await handleCommand(store, flowDecider, 'f', command);
    const { events } = await store.readStream('f');
    for (const event of events) expect(FlowRecord.parse(event)).toEqual(event);
    const state = foldEvents(flowDecider, events);
    expect(state).toEqual(last?.newState);
    for (const version of state.versions) expect(FlowVersion.parse(flowVersionDocument(scope, 'refund', state, version))).toMatchObject({ flowId: 'refund', version: version.version });
    expect(flowVersionDocument(scope, 'refund', state, state.versions[0]!)).toMatchObject({ active: true, status: 'Published', activatedBy: actor });
  });
});
