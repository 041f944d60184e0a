import { type FlowCallStep, type FlowDefinitionBody, type FlowStep, type JsonObject, type ToolFailure, ToolplaneError } from '@toolplane/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { flowExpressions } from './flow-expressions.js';
import { type FlowPlan, MAX_STEP_BACKOFF_MS, type StepHistory, flowPlanner, planNext, retryBackoffMs } from './flow-interpreter.js';

const call = (id: string, extra: Partial<FlowCallStep> = {}): FlowCallStep => ({ id, kind: 'call', tool: `tools.${id}`, arguments: '{"order": input.orderId}', ...extra });
const flow = (steps: FlowStep[], extra: Partial<FlowDefinitionBody> = {}): FlowDefinitionBody => ({
  inputSchema: { type: 'object' },
  outputSchema: { type: 'object' },
  steps,
  output: '{"done": true}',
  ...extra,
});
const input = { orderId: 'o-1', go: true };
const ok = (output: JsonObject): StepHistory => ({ attempts: 1, outcome: { status: 'succeeded', output } });
const started = (attempts = 1): StepHistory => ({ attempts });
const failedWith = (failure: ToolFailure, attempts = 1): StepHistory => ({ attempts, outcome: { status: 'failed', failure } });
const unavailable: ToolFailure = { code: 'TEMPORARY_UNAVAILABLE', message: 'try later', retryable: true };
const notFound: ToolFailure = { code: 'NOT_FOUND', message: 'no such order', retryable: false };
const history = (entries: Record<string, StepHistory>) => new Map(Object.entries(entries));
const run = (skip: string[], calls: { stepId: string; arguments: JsonObject; attempt?: number; backoffMs?: number; toolVersion?: string }[]): FlowPlan => ({
  kind: 'run',
  skip,
  calls: calls.map(({ stepId, arguments: args, attempt = 1, backoffMs = 0, toolVersion }) => ({
    stepId,
    toolId: `tools.${stepId}`,
    ...(toolVersion === undefined ? {} : { toolVersion }),
    arguments: args,
    attempt,
    backoffMs,
  })),
});

describe('planNext: sequence and conditions', () => {
  const body = flow([call('lookup', { toolVersion: '3' }), call('refund', { arguments: '{"order": input.orderId, "amount": steps.lookup.total}' })], {
    output: '{"refunded": steps.refund.id, "total": steps.lookup.total}',
  });

  it('plans one step at a time, each seeing the outputs before it, then maps the output', async () => {
    expect(await planNext(body, input, history({}))).toEqual(run([], [{ stepId: 'lookup', toolVersion: '3', arguments: { order: 'o-1' } }]));
    expect(await planNext(body, input, history({ lookup: ok({ total: 42 }) }))).toEqual(run([], [{ stepId: 'refund', arguments: { order: 'o-1', amount: 42 } }]));
    expect(await planNext(body, input, history({ lookup: ok({ total: 42 }), refund: ok({ id: 'r-9' }) }))).toEqual({ kind: 'completed', output: { refunded: 'r-9', total: 42 } });
  });

  it('plans a started step without an outcome again with the same attempt', async () => {
    expect(await planNext(body, input, history({ lookup: ok({ total: 42 }), refund: started(1) }))).toEqual(run([], [{ stepId: 'refund', arguments: { order: 'o-1', amount: 42 } }]));
  });

  it('skips a step whose condition is falsy: listed with the next call, and absent from steps', async () => {
    const conditional = flow([call('a', { when: 'input.go = false' }), call('b', { arguments: '{"sawA": $exists(steps.a)}' })], { output: '{"keys": $keys(steps)}' });
    expect(await planNext(conditional, input, history({}))).toEqual(run(['a'], [{ stepId: 'b', arguments: { sawA: false } }]));
    expect(await planNext(conditional, input, history({ a: { attempts: 0, outcome: { status: 'skipped' } }, b: ok({ x: 1 }) }))).toEqual({ kind: 'completed', output: { keys: 'b' } });
  });

  it('asks for trailing skips to be recorded before it completes', async () => {
    const trailing = flow([call('a'), call('b', { when: 'false' }), call('c', { when: '""' })]);
    expect(await planNext(trailing, input, history({ a: ok({}) }))).toEqual(run(['b', 'c'], []));
  });

  it('fails a step whose arguments are not an object, naming it', async () => {
    const plan = await planNext(flow([call('a', { arguments: 'input.orderId' })]), input, history({}));
    expect(plan).toEqual({ kind: 'failed', stepId: 'a', failure: { code: 'INVALID_ARGUMENT', retryable: false, message: 'step "a" arguments: must evaluate to a JSON object, not a string' } });
    const condition = await planNext(flow([call('a', { when: '$error("broken")' })]), input, history({}));
    expect(condition).toMatchObject({ kind: 'failed', stepId: 'a', failure: { code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^step "a" when: broken/) as unknown } });
  });

  it('fails a step whose evaluation crosses its time box, naming it', async () => {
    const slow = flowPlanner({ expressions: flowExpressions({ timeoutMs: 1 }) });
    const plan = await slow(flow([call('a', { arguments: '{"n": $reduce([1..99999], function($x, $y) { $x + $y })}' })]), input, history({}));
    expect(plan).toMatchObject({ kind: 'failed', stepId: 'a', failure: { code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^step "a" arguments: Evaluation timeout/) as unknown } });
  });

  it('ends with the step when it failed for good, or when its effect is in doubt', async () => {
    expect(await planNext(body, input, history({ lookup: failedWith(notFound) }))).toEqual({ kind: 'failed', stepId: 'lookup', failure: { ...notFound, message: 'step "lookup": no such order' } });
    // Without retry, even a retryable failure is final.
    expect(await planNext(body, input, history({ lookup: failedWith(unavailable) }))).toMatchObject({ kind: 'failed', stepId: 'lookup', failure: { code: 'TEMPORARY_UNAVAILABLE', retryable: true } });
    const unknown: ToolFailure = { code: 'UNKNOWN_OUTCOME', message: 'interrupted', retryable: false };
    expect(await planNext(body, input, history({ lookup: ok({ total: 1 }), refund: { attempts: 1, outcome: { status: 'uncertain', failure: unknown } } }))).toEqual({
      kind: 'uncertain',
      stepId: 'refund',
      failure: { ...unknown, message: 'step "refund": interrupted' },
    });
  });
});

describe('planNext: retry', () => {
  const body = flow([call('lookup', { retry: { maxAttempts: 3, backoffMs: 500 } })]);

  it('retries a retryable failure with a doubling wait, up to maxAttempts', async () => {
    expect(await planNext(body, input, history({ lookup: failedWith(unavailable, 1) }))).toEqual(run([], [{ stepId: 'lookup', arguments: { order: 'o-1' }, attempt: 2, backoffMs: 500 }]));
    expect(await planNext(body, input, history({ lookup: started(2) }))).toEqual(run([], [{ stepId: 'lookup', arguments: { order: 'o-1' }, attempt: 2 }]));
    expect(await planNext(body, input, history({ lookup: failedWith(unavailable, 2) }))).toEqual(run([], [{ stepId: 'lookup', arguments: { order: 'o-1' }, attempt: 3, backoffMs: 1000 }]));
    expect(await planNext(body, input, history({ lookup: failedWith(unavailable, 3) }))).toMatchObject({ kind: 'failed', stepId: 'lookup', failure: { code: 'TEMPORARY_UNAVAILABLE' } });
  });

  it('never retries a failure that is not retryable', async () => {
    expect(await planNext(body, input, history({ lookup: failedWith(notFound, 1) }))).toMatchObject({ kind: 'failed', stepId: 'lookup', failure: { code: 'NOT_FOUND' } });
  });

  it('caps the wait at 60 s', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => retryBackoffMs(20_000, attempt))).toEqual([0, 20_000, 40_000, MAX_STEP_BACKOFF_MS, MAX_STEP_BACKOFF_MS]);
    expect(retryBackoffMs(0, 4)).toBe(0);
    expect(retryBackoffMs(60_000, 50)).toBe(MAX_STEP_BACKOFF_MS);
  });
});

describe('planNext: parallel groups', () => {
  const body = flow(
    [
      call('lookup'),
      { id: 'fan', kind: 'parallel', steps: [call('a', { arguments: '{"total": steps.lookup.total, "sibling": steps.b}' }), call('b', { when: 'steps.lookup.total > 0', retry: { maxAttempts: 2, backoffMs: 10 } }), call('c')] },
      call('after', { arguments: '{"a": steps.a.v, "b": steps.b.v}' }),
    ],
    { output: '{"a": steps.a.v}' },
  );
  const afterLookup = { lookup: ok({ total: 5 }) };

  it('plans every call of a group together, each seeing only the steps before the group', async () => {
    expect(await planNext(body, input, history(afterLookup))).toEqual(
      run([], [
        { stepId: 'a', arguments: { total: 5 } },
        { stepId: 'b', arguments: { order: 'o-1' } },
        { stepId: 'c', arguments: { order: 'o-1' } },
      ]),
    );
    // A sibling's output never reaches a sibling's arguments, whichever finished first.
    expect(await planNext(body, input, history({ ...afterLookup, a: started(), b: ok({ v: 2 }), c: started() }))).toEqual(
      run([], [
        { stepId: 'a', arguments: { total: 5 } },
        { stepId: 'c', arguments: { order: 'o-1' } },
      ]),
    );
  });

  it('settles when all its calls have, then the next step sees their outputs', async () => {
    expect(await planNext(body, input, history({ ...afterLookup, a: ok({ v: 1 }), b: ok({ v: 2 }), c: ok({}) }))).toEqual(run([], [{ stepId: 'after', arguments: { a: 1, b: 2 } }]));
  });

  it('skips a call of the group whose condition is falsy', async () => {
    expect(await planNext(body, input, history({ lookup: ok({ total: 0 }) }))).toEqual(
      run(['b'], [
        { stepId: 'a', arguments: { total: 0 } },
        { stepId: 'c', arguments: { order: 'o-1' } },
      ]),
    );
  });

  it('skips the whole group, with its calls, when its condition is falsy', async () => {
    const gated = flow([{ id: 'fan', kind: 'parallel', when: 'input.go = false', steps: [call('a'), call('b')] }, call('after')]);
    expect(await planNext(gated, input, history({}))).toEqual(run(['fan', 'a', 'b'], [{ stepId: 'after', arguments: { order: 'o-1' } }]));
    const skipped: StepHistory = { attempts: 0, outcome: { status: 'skipped' } };
    expect(await planNext(gated, input, history({ fan: skipped, a: skipped, b: skipped, after: ok({}) }))).toEqual({ kind: 'completed', output: { done: true } });
  });

  it('retries a call of the group alongside siblings still running', async () => {
    expect(await planNext(body, input, history({ ...afterLookup, a: started(), b: failedWith(unavailable), c: ok({}) }))).toEqual(
      run([], [
        { stepId: 'a', arguments: { total: 5 } },
        { stepId: 'b', arguments: { order: 'o-1' }, attempt: 2, backoffMs: 10 },
      ]),
    );
  });

  it('fails the flow for a call that failed for good only once no started sibling is still running', async () => {
    const failing = { ...afterLookup, a: failedWith(notFound), b: started() };
    // c never started: it is not started now either; b is waited for.
    expect(await planNext(body, input, history(failing))).toEqual(run([], [{ stepId: 'b', arguments: { order: 'o-1' } }]));
    expect(await planNext(body, input, history({ ...failing, b: ok({ v: 2 }) }))).toEqual({ kind: 'failed', stepId: 'a', failure: { ...notFound, message: 'step "a": no such order' } });
    // A sibling whose retry is due is not retried once the flow is going to fail.
    expect(await planNext(body, input, history({ ...failing, b: failedWith(unavailable), c: ok({}) }))).toMatchObject({ kind: 'failed', stepId: 'a' });
  });

  it('ends uncertain when a call of the group is in doubt, even if another failed', async () => {
    const unknown: ToolFailure = { code: 'UNKNOWN_OUTCOME', message: 'interrupted', retryable: false };
    const plan = await planNext(body, input, history({ ...afterLookup, a: failedWith(notFound), b: ok({}), c: { attempts: 1, outcome: { status: 'uncertain', failure: unknown } } }));
    expect(plan).toEqual({ kind: 'uncertain', stepId: 'c', failure: { ...unknown, message: 'step "c": interrupted' } });
  });
});

describe('planNext: output', () => {
  it('validates the output against the output schema', async () => {
    const body = flow([call('a')], { outputSchema: { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] }, output: '{"total": steps.a.total}' });
    expect(await planNext(body, input, history({ a: ok({ total: 3 }) }))).toEqual({ kind: 'completed', output: { total: 3 } });
    expect(await planNext(body, input, history({ a: ok({ total: 'three' }) }))).toEqual({
      kind: 'failed',
      failure: { code: 'INVALID_ARGUMENT', retryable: false, message: 'the flow output does not match its output schema: /total must be number' },
    });
    expect(await planNext(body, input, history({ a: ok({}) }))).toEqual({
      kind: 'failed',
      failure: { code: 'INVALID_ARGUMENT', retryable: false, message: "the flow output does not match its output schema: /total must have required property 'total'" },
    });
  });

  it('fails when the output mapping is not an object', async () => {
    expect(await planNext(flow([call('a')], { output: 'steps.a.list' }), input, history({ a: ok({ list: [1] }) }))).toEqual({
      kind: 'failed',
      failure: { code: 'INVALID_ARGUMENT', retryable: false, message: 'output: must evaluate to a JSON object, not an array' },
    });
  });

  it('throws, instead of planning, when its signal aborts', async () => {
    await expect(planNext(flow([call('a')]), input, history({}), { signal: AbortSignal.abort() })).rejects.toSatisfy((error) => error instanceof ToolplaneError && error.code === 'CANCELLED');
  });
});

// Random flows: calls and parallel groups, conditions on the input, retries, arguments reading earlier steps.
const callArbitrary = (id: string, earlier: readonly string[]) =>
  fc.record({
    when: fc.option(fc.constantFrom('input.flag', 'input.flag = false', 'true', '$exists(input.n)'), { nil: undefined }),
    retry: fc.option(fc.record({ maxAttempts: fc.integer({ min: 2, max: 5 }), backoffMs: fc.integer({ min: 0, max: 60_000 }) }), { nil: undefined }),
    reads: fc.option(fc.constantFrom(...(earlier.length > 0 ? earlier : ['none'])), { nil: undefined }),
  }).map(({ when, retry, reads }): FlowCallStep => ({
    id,
    kind: 'call',
    tool: `tools.${id}`,
    arguments: reads === undefined ? '{"n": input.n}' : `{"n": input.n, "prev": steps.${reads}}`,
    ...(when === undefined ? {} : { when }),
    ...(retry === undefined ? {} : { retry }),
  }));

const bodyArbitrary = fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 6 }).chain((shape) => {
  const steps: fc.Arbitrary<FlowStep>[] = [];
  const earlier: string[] = [];
  shape.forEach((children, i) => {
    const before = [...earlier];
    if (children < 2) {
      steps.push(callArbitrary(`s${i}`, before));
      earlier.push(`s${i}`);
      return;
    }
    const ids = Array.from({ length: children }, (_, j) => `s${i}_${j}`);
    steps.push(
      fc
        .record({ when: fc.option(fc.constantFrom('input.flag', 'true'), { nil: undefined }), calls: fc.tuple(...ids.map((id) => callArbitrary(id, before))) })
        .map(({ when, calls }): FlowStep => ({ id: `g${i}`, kind: 'parallel', steps: calls, ...(when === undefined ? {} : { when }) })),
    );
    earlier.push(...ids);
  });
  return fc.tuple(...steps).map((all) => flow(all, { output: '{"ran": $keys(steps)}' }));
});

const jsonObjectArbitrary = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<unknown>, { maxKeys: 4 }).map((value) => JSON.parse(JSON.stringify(value)) as JsonObject);
const outcomeArbitrary = fc.oneof(
  { weight: 3, arbitrary: jsonObjectArbitrary.map((output) => ({ status: 'succeeded' as const, output })) },
  { weight: 1, arbitrary: fc.constant({ status: 'failed' as const, failure: unavailable }) },
);

function countSteps(body: FlowDefinitionBody): number {
  return body.steps.reduce((total, step) => total + (step.kind === 'parallel' ? step.steps.length + 1 : 1), 0);
}

type FedOutcome = { status: 'succeeded'; output: JsonObject } | { status: 'failed'; failure: ToolFailure };

// Plays a run to its end, feeding each planned call the next outcome; checks determinism at every round.
async function drive(body: FlowDefinitionBody, flowInput: JsonObject, next: () => FedOutcome, maxRounds: number) {
  const fresh = flowPlanner();
  const past = new Map<string, StepHistory>();
  for (let round = 1; round <= maxRounds; round++) {
    const plan = await planNext(body, flowInput, past);
    // Determinism: the same history gives the same plan, again and from a planner with nothing cached.
    expect(await planNext(body, flowInput, new Map(past))).toEqual(plan);
    expect(await fresh(body, flowInput, new Map(past))).toEqual(plan);
    if (plan.kind !== 'run') return { plan, rounds: round };
    expect(plan.skip.length + plan.calls.length).toBeGreaterThan(0);
    for (const id of plan.skip) past.set(id, { attempts: 0, outcome: { status: 'skipped' } });
    for (const planned of plan.calls) {
      expect(planned.attempt).toBe((past.get(planned.stepId)?.attempts ?? 0) + 1);
      past.set(planned.stepId, { attempts: planned.attempt, outcome: next() });
    }
  }
  throw new Error(`no terminal plan within ${maxRounds} rounds`);
}

describe('planNext: properties', () => {
  const inputArbitrary = fc.record({ flag: fc.boolean(), n: fc.option(fc.integer(), { nil: undefined }) }).map((value) => JSON.parse(JSON.stringify(value)) as JsonObject);

  it('given successful outputs, ends within one round per step (plus one for trailing skips), deterministically', async () => {
    await fc.assert(
      fc.asyncProperty(bodyArbitrary, inputArbitrary, fc.infiniteStream(jsonObjectArbitrary), async (body, flowInput, outputs) => {
        const { plan, rounds } = await drive(body, flowInput, () => ({ status: 'succeeded', output: outputs.next().value as JsonObject }), countSteps(body) + 1);
        expect(plan.kind).toBe('completed');
        expect(rounds).toBeLessThanOrEqual(countSteps(body) + 1);
      }),
      { numRuns: 100 },
    );
  });

  it('given any mix of successes and retryable failures, ends within steps x max attempts rounds, deterministically', async () => {
    await fc.assert(
      fc.asyncProperty(bodyArbitrary, inputArbitrary, fc.infiniteStream(outcomeArbitrary), async (body, flowInput, outcomes) => {
        const bound = countSteps(body) * 5 + 1;
        const { plan, rounds } = await drive(body, flowInput, () => outcomes.next().value as FedOutcome, bound);
        expect(['completed', 'failed']).toContain(plan.kind);
        expect(rounds).toBeLessThanOrEqual(bound);
      }),
      { numRuns: 100 },
    );
  });
});
