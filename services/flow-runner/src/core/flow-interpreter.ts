import { type FlowCallStep, type FlowDefinitionBody, type FlowParallelStep, type JsonObject, type ToolFailure, ToolplaneError, hasErrorCode } from '@toolplane/contracts';
import { type FlowExpressionContext, type FlowExpressions, flowExpressions } from './flow-expressions.js';
import { type FlowSchemas, flowSchemas } from './flow-validation.js';

// The interpreter is a pure function from (body, input, what has happened so far) to what happens next. The runner
// records every decision it acts on (StepSkipped, StepStarted, the step's outcome) and asks again, so a run that a
// crashed replica left half-done is resumed by asking the same question of the same history: the answer is the same
// plan (expressions are deterministic), a started step without an outcome is planned again with the same attempt
// (its idempotency key, so the adapter joins or replays it instead of repeating an effect), and nothing settled is
// planned twice.
//
// Order: top-level steps run in sequence; the calls of a parallel group are planned together and the group settles
// when all of them have. A step's expressions see the flow input and the outputs of the steps before it (for a call
// in a group: before the group), never a sibling's, so a plan does not depend on which sibling finished first.
// Failure: a step's failure is retried (READ steps with `retry`, retryable failures, up to maxAttempts, the wait
// doubling from backoffMs up to 60 s); otherwise it fails the flow, but a parallel group first lets every started
// sibling settle (and starts nothing new), and a step whose effect is in doubt (uncertain) makes the flow uncertain.

/** How one step ended (for its latest attempt). */
export type StepOutcome =
  | { readonly status: 'succeeded'; readonly output: JsonObject }
  | { readonly status: 'skipped' }
  | { readonly status: 'failed'; readonly failure: ToolFailure }
  | { readonly status: 'uncertain'; readonly failure: ToolFailure };

/**
 * What has happened to one step: how many attempts were started, and the outcome of the LATEST attempt (absent while
 * that attempt has not reported: starting attempt n+1 clears the outcome of attempt n).
 */
export interface StepHistory {
  readonly attempts: number;
  readonly outcome?: StepOutcome;
}

/** One call to make: record StepStarted{stepId, attempt} before invoking, after waiting `backoffMs`. */
export interface PlannedCall {
  readonly stepId: string;
  readonly toolId: string;
  readonly toolVersion?: string;
  readonly arguments: JsonObject;
  readonly attempt: number;
  /** How long to wait before invoking (retries only; 0 otherwise). */
  readonly backoffMs: number;
}

/**
 * What to do next. `run`: record the skips, then start the calls (together), then ask again; it always has at least
 * one skip or call. The others are terminal: the run ends with that outcome.
 */
export type FlowPlan =
  | { readonly kind: 'run'; readonly skip: readonly string[]; readonly calls: readonly PlannedCall[] }
  | { readonly kind: 'completed'; readonly output: JsonObject }
  | { readonly kind: 'failed'; readonly failure: ToolFailure; readonly stepId?: string }
  | { readonly kind: 'uncertain'; readonly failure: ToolFailure; readonly stepId: string };

/** Plans the next round of a run. */
export type PlanNext = (
  body: FlowDefinitionBody,
  input: JsonObject,
  history: ReadonlyMap<string, StepHistory>,
  options?: { readonly signal?: AbortSignal },
) => Promise<FlowPlan>;

/** The longest wait between attempts of a step. */
export const MAX_STEP_BACKOFF_MS = 60_000;

/** What a planner compiles with (each keeps a cache of compiled expressions and schemas). */
export interface FlowPlannerOptions {
  readonly expressions?: FlowExpressions;
  readonly schemas?: FlowSchemas;
}

/** How long attempt `attempt` (2, 3, …) of a step waits: backoffMs, doubled per further attempt, at most 60 s. */
export function retryBackoffMs(backoffMs: number, attempt: number): number {
  if (attempt < 2 || backoffMs <= 0) return 0;
  return Math.min(MAX_STEP_BACKOFF_MS, backoffMs * 2 ** Math.min(attempt - 2, 16));
}

/** Builds a planner; its caches hold only compiled forms, so planning stays a function of its arguments. */
export function flowPlanner(options: FlowPlannerOptions = {}): PlanNext {
  const expressions = options.expressions ?? flowExpressions();
  const schemas = options.schemas ?? flowSchemas();
  return (body, input, history, planOptions = {}) => plan(body, input, history, expressions, schemas, planOptions.signal);
}

/** Plans the next round of a run with a planner of default bounds (see {@link flowPlanner}). */
export const planNext: PlanNext = flowPlanner();

// A call step's state as planning sees it.
type CallState =
  | { readonly kind: 'succeeded'; readonly output: JsonObject }
  | { readonly kind: 'skipped' }
  | { readonly kind: 'failed'; readonly failure: ToolFailure }
  | { readonly kind: 'uncertain'; readonly failure: ToolFailure }
  | { readonly kind: 'retry'; readonly attempt: number }
  | { readonly kind: 'rejoin'; readonly attempt: number }
  | { readonly kind: 'new' };

function callState(step: FlowCallStep, entry: StepHistory | undefined): CallState {
  if (entry === undefined || (entry.attempts <= 0 && entry.outcome === undefined)) return { kind: 'new' };
  const { outcome } = entry;
  if (outcome === undefined) return { kind: 'rejoin', attempt: entry.attempts };
  switch (outcome.status) {
    case 'succeeded':
      return { kind: 'succeeded', output: outcome.output };
    case 'skipped':
      return { kind: 'skipped' };
    case 'uncertain':
      return { kind: 'uncertain', failure: outcome.failure };
    case 'failed': {
      const maxAttempts = step.retry?.maxAttempts ?? 1;
      return outcome.failure.retryable && entry.attempts < maxAttempts ? { kind: 'retry', attempt: entry.attempts + 1 } : { kind: 'failed', failure: outcome.failure };
    }
  }
}

/** A step's failure as the flow's: same code and retryability, the message naming the step. */
function stepFailure(stepId: string, failure: ToolFailure): ToolFailure {
  return { ...failure, message: clip(`step "${stepId}": ${failure.message}`, 4096) };
}

function invalid(message: string): ToolFailure {
  return { code: 'INVALID_ARGUMENT', message: clip(message, 4096), retryable: false };
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

// An expression that cannot be evaluated (or crosses a bound) is a flow failure; anything else (an abort) is thrown.
function expressionFailure(error: unknown): ToolFailure {
  if (error instanceof ToolplaneError && error.code === 'INVALID_ARGUMENT') return invalid(error.message);
  if (hasErrorCode(error) && error.code === 'INVALID_ARGUMENT') return invalid(error.message);
  throw error;
}

async function plan(
  body: FlowDefinitionBody,
  input: JsonObject,
  history: ReadonlyMap<string, StepHistory>,
  expressions: FlowExpressions,
  schemas: FlowSchemas,
  signal: AbortSignal | undefined,
): Promise<FlowPlan> {
  const outputs: Record<string, JsonObject> = {};
  const skip: string[] = [];
  // Each context is a snapshot: steps planned later in the same round do not change what earlier ones saw.
  const context = (): FlowExpressionContext => ({ input, steps: { ...outputs } });

  const callFor = async (step: FlowCallStep, attempt: number, backoffMs: number, seen: FlowExpressionContext, where: string): Promise<PlannedCall> => ({
    stepId: step.id,
    toolId: step.tool,
    ...(step.toolVersion === undefined ? {} : { toolVersion: step.toolVersion }),
    arguments: await expressions.evaluateObject(step.arguments, seen, `${where} arguments`, signal),
    attempt,
    backoffMs,
  });

  for (const step of body.steps) {
    if (step.kind === 'call') {
      const where = `step "${step.id}"`;
      const state = callState(step, history.get(step.id));
      try {
        switch (state.kind) {
          case 'succeeded':
            outputs[step.id] = state.output;
            continue;
          case 'skipped':
            continue;
          case 'uncertain':
            return { kind: 'uncertain', failure: stepFailure(step.id, state.failure), stepId: step.id };
          case 'failed':
            return { kind: 'failed', failure: stepFailure(step.id, state.failure), stepId: step.id };
          case 'retry':
          case 'rejoin': {
            const backoffMs = state.kind === 'retry' ? retryBackoffMs(step.retry?.backoffMs ?? 0, state.attempt) : 0;
            return { kind: 'run', skip, calls: [await callFor(step, state.attempt, backoffMs, context(), where)] };
          }
          case 'new': {
            const seen = context();
            if (step.when !== undefined && !(await expressions.evaluateCondition(step.when, seen, `${where} when`, signal))) {
              skip.push(step.id);
              continue;
            }
            return { kind: 'run', skip, calls: [await callFor(step, 1, 0, seen, where)] };
          }
        }
      } catch (error) {
        return { kind: 'failed', failure: expressionFailure(error), stepId: step.id };
      }
    }
    const group = await planGroup(step, history, context(), expressions, signal, callFor);
    switch (group.kind) {
      case 'settled':
        Object.assign(outputs, group.outputs);
        continue;
      case 'skipped':
        skip.push(...group.skip);
        continue;
      case 'run':
        return { kind: 'run', skip: [...skip, ...group.skip], calls: group.calls };
      case 'failed':
      case 'uncertain':
        // Skips decided earlier in this round need not be recorded: the run ends here.
        return group.plan;
    }
  }

  if (skip.length > 0) return { kind: 'run', skip, calls: [] };
  return completion(body, context(), expressions, schemas, signal);
}

type GroupPlan =
  | { readonly kind: 'settled'; readonly outputs: Record<string, JsonObject> }
  | { readonly kind: 'skipped'; readonly skip: readonly string[] }
  | { readonly kind: 'run'; readonly skip: readonly string[]; readonly calls: readonly PlannedCall[] }
  | { readonly kind: 'failed' | 'uncertain'; readonly plan: FlowPlan };

async function planGroup(
  group: FlowParallelStep,
  history: ReadonlyMap<string, StepHistory>,
  seen: FlowExpressionContext,
  expressions: FlowExpressions,
  signal: AbortSignal | undefined,
  callFor: (step: FlowCallStep, attempt: number, backoffMs: number, seen: FlowExpressionContext, where: string) => Promise<PlannedCall>,
): Promise<GroupPlan> {
  if (history.get(group.id)?.outcome?.status === 'skipped') return { kind: 'settled', outputs: {} };
  const states = group.steps.map((child) => ({ child, state: callState(child, history.get(child.id)) }));
  const begun = states.some(({ state }) => state.kind !== 'new');
  if (!begun && group.when !== undefined) {
    let run: boolean;
    try {
      run = await expressions.evaluateCondition(group.when, seen, `step "${group.id}" when`, signal);
    } catch (error) {
      return { kind: 'failed', plan: { kind: 'failed', failure: expressionFailure(error), stepId: group.id } };
    }
    if (!run) return { kind: 'skipped', skip: [group.id, ...group.steps.map((child) => child.id)] };
  }

  // The first child (in the flow's order) whose effect is in doubt, else whose failure is final, ends the flow once
  // no started sibling is still running; until then nothing new is started, so no further effect is risked.
  let uncertain: { readonly stepId: string; readonly failure: ToolFailure } | undefined;
  let failed: { readonly stepId: string; readonly failure: ToolFailure } | undefined;
  const outputs: Record<string, JsonObject> = {};
  const rejoins: PlannedCall[] = [];
  const pending: { readonly child: FlowCallStep; readonly state: CallState }[] = [];
  for (const { child, state } of states) {
    const where = `step "${child.id}" (in "${group.id}")`;
    switch (state.kind) {
      case 'succeeded':
        outputs[child.id] = state.output;
        break;
      case 'skipped':
        break;
      case 'uncertain':
        uncertain ??= { stepId: child.id, failure: stepFailure(child.id, state.failure) };
        break;
      case 'failed':
        failed ??= { stepId: child.id, failure: stepFailure(child.id, state.failure) };
        break;
      case 'rejoin':
        try {
          rejoins.push(await callFor(child, state.attempt, 0, seen, where));
        } catch (error) {
          // Deterministic evaluation makes this unreachable for a step that was started; were it reached, the step
          // (whose invocation may be running) is in doubt.
          uncertain ??= { stepId: child.id, failure: expressionFailure(error) };
        }
        break;
      case 'retry':
      case 'new':
        pending.push({ child, state });
        break;
    }
  }

  const skip: string[] = [];
  const calls: PlannedCall[] = [...rejoins];
  if (uncertain === undefined && failed === undefined) {
    for (const { child, state } of pending) {
      const where = `step "${child.id}" (in "${group.id}")`;
      try {
        if (state.kind === 'retry') {
          calls.push(await callFor(child, state.attempt, retryBackoffMs(child.retry?.backoffMs ?? 0, state.attempt), seen, where));
        } else if (child.when !== undefined && !(await expressions.evaluateCondition(child.when, seen, `${where} when`, signal))) {
          skip.push(child.id);
        } else {
          calls.push(await callFor(child, 1, 0, seen, where));
        }
      } catch (error) {
        failed = { stepId: child.id, failure: expressionFailure(error) };
        break;
      }
    }
  }
  if (uncertain !== undefined || failed !== undefined) {
    // Only started siblings are waited for; the ones not yet started stay unstarted.
    if (rejoins.length > 0) return { kind: 'run', skip: [], calls: rejoins };
    if (uncertain !== undefined) return { kind: 'uncertain', plan: { kind: 'uncertain', failure: uncertain.failure, stepId: uncertain.stepId } };
    const final = failed as { readonly stepId: string; readonly failure: ToolFailure };
    return { kind: 'failed', plan: { kind: 'failed', failure: final.failure, stepId: final.stepId } };
  }
  if (calls.length > 0 || skip.length > 0) return { kind: 'run', skip, calls };
  return { kind: 'settled', outputs };
}

async function completion(
  body: FlowDefinitionBody,
  seen: FlowExpressionContext,
  expressions: FlowExpressions,
  schemas: FlowSchemas,
  signal: AbortSignal | undefined,
): Promise<FlowPlan> {
  let output: JsonObject;
  try {
    output = await expressions.evaluateObject(body.output, seen, 'output', signal);
  } catch (error) {
    return { kind: 'failed', failure: expressionFailure(error) };
  }
  const schema = schemas.compile(body.outputSchema);
  if (!schema.usable) return { kind: 'failed', failure: invalid(`the flow output schema cannot be used: ${schema.problem}`) };
  const violations = schema.validate(output);
  if (violations.length > 0) return { kind: 'failed', failure: invalid(`the flow output does not match its output schema: ${violations.join('; ')}`) };
  return { kind: 'completed', output };
}
