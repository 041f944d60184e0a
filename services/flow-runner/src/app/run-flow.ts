import {
  ToolplaneError,
  canonicalHash,
  flowDefinitionNameOf,
  flowRunIdentity,
  flowRunStreamId,
  flowStepIdempotencyKey,
  hasErrorCode,
  isTerminalInvocationState,
  sleep,
  throwIfAborted,
  type FlowDefinitionBody,
  type FlowRunRecord,
  type FlowVersion,
  type InvocationState,
  type RunFlowOutcome,
  type RunFlowRequest,
  type RunStarted,
  type Scope,
  type ToolDefinition,
  type ToolFailure,
} from '@toolplane/contracts';
import { foldEvents, handleCommand, type EventStore } from '@toolplane/event-store';
import type { StepTokenSubject } from '../adapters/step-tokens.js';
import type { FlowPlan, PlanNext, PlannedCall } from '../core/flow-interpreter.js';
import {
  flowRunDecider,
  runOutcomeOf,
  stepHistoryOf,
  unsettledSteps,
  type FlowRunAggregate,
  type FlowRunCommand,
  type RunFinish,
  type StepCallOutcome,
} from '../core/run-aggregate.js';
import { failureOfError, stepOutcomeOf, type StepCallResult, type StepInvoker } from './step-invoker.js';

// Handling one RunFlowRequest: the execution of a flow-backed tool call, handed over by the tool adapter. The same
// logical call always names the same run (flowRunIdentity), so a redelivered message, a duplicate, or the adapter's
// next attempt of the call all come here with the run's record to go on:
//   - a run that ended replies with its recorded outcome (replay);
//   - a run that exists resumes: the interpreter plans again from the record, a step started but unsettled is called
//     again under the SAME key (the adapter joins or replays it), nothing settled is called twice;
//   - otherwise the run starts, capturing the definition, the immutable Flow version it runs (the exact one, or the
//     one active now), the input's hash, who it is for, and its deadline.
// Then: plan, record skips, record StepStarted BEFORE each call, call with what is left of the run, record the
// outcome, plan again, until the interpreter ends the run. At the deadline the run ends Failed TIMEOUT, or Uncertain
// when a step that may have had its effect did not report. Only the consumer's signal (the replica stopping) ends the
// handling without an ending: the message is redelivered and the run resumes.

/** Where FlowRunner reads what a run needs to start: the definition behind a flow tool, and immutable Flow versions. */
export interface FlowSource {
  /** The ToolDefinition the tool id was materialized from (undefined when there is none, or it was deleted). */
  definitionForTool(scope: Scope, toolId: string, signal?: AbortSignal): Promise<ToolDefinition | undefined>;
  /** A version of a Flow, or the Active one; undefined when there is no such version. */
  flowVersion(scope: Scope, flowId: string, version: number | 'active', signal?: AbortSignal): Promise<FlowVersion | undefined>;
}

/** The places where a fault test kills (or freezes) FlowRunner: by position, not by timing. */
export const flowFailpoints = {
  /** A step's call returned; its outcome is not recorded. */
  beforeStepOutcome: 'flow.before-step-outcome',
  /** A step's outcome is recorded; nothing after it is. */
  afterStepRecorded: 'flow.after-step-recorded',
} as const;

/**
 * The failpoint names a step reaches, most general first: `<point>` (any step) and `<point>.<stepId>` (that step), so
 * a test can stop a run after its first recorded step or after a chosen one.
 */
export function stepFailpointNames(point: string, stepId: string): readonly string[] {
  return [point, `${point}.${stepId}`];
}

/** The logical tool call id of one step attempt of a run: the same on every resumption. */
export function stepToolCallId(flowRunId: string, stepId: string, attempt: number): string {
  return `${flowRunId}:${stepId}:${attempt}`;
}

/** What handling a run needs. */
export interface RunFlowDeps {
  readonly runs: EventStore<FlowRunRecord>;
  readonly flows: FlowSource;
  readonly steps: StepInvoker;
  readonly planNext: PlanNext;
  readonly clock: () => Date;
  /** Marks a failpoint (service-kit `failpoint` in a service; a test may pass its own). */
  readonly failpoint: (name: string) => void;
  /** How long a lookup of a step's call may take when the deadline has come (default 2 000 ms). */
  readonly settleLookupTimeoutMs?: number;
}

// Rounds of planning one run may take: every round settles or starts at least one of at most 32 × 8 steps × 5 attempts.
const maxRounds = 2_000;
const minMarginMs = 250;
const maxMarginMs = 2_000;
const minLookupMs = 200;
const settlePollMs = 50;
// Invocation states in which the adapter has not called the provider: a step left there had no effect.
const beforeExecution: ReadonlySet<InvocationState> = new Set(['Received', 'Validated', 'Authorized', 'AwaitingApproval', 'Brokered']);

const refused = (code: ToolFailure['code'], message: string): RunFlowOutcome => ({ status: 'Failed', failure: { code, message, retryable: false } });

/**
 * Handles one RunFlowRequest of `scope` and returns the outcome to reply with. Refusals before a run exists (no such
 * definition, a disabled one, another input for the same call) are Failed outcomes without a receipt. Throws only when
 * the handling must be retried: CANCELLED (the signal aborted) or a retryable failure (the record unreachable).
 */
export async function runFlow(deps: RunFlowDeps, scope: Scope, request: RunFlowRequest, signal: AbortSignal): Promise<RunFlowOutcome> {
  const { flowRunId, workItemId } = flowRunIdentity(scope, request.toolCallId);
  const streamId = flowRunStreamId(scope, flowRunId);
  const inputHash = canonicalHash(request.input);
  const stored = await deps.runs.readStream(streamId, { signal });
  let state = foldEvents(flowRunDecider, stored.events);

  let body: FlowDefinitionBody;
  if (state.started === undefined) {
    const start = await resolveStart(deps, scope, request, { flowRunId, workItemId, inputHash }, signal);
    if ('status' in start) return start;
    body = start.flow.body;
    try {
      state = (await handleCommand(deps.runs, flowRunDecider, streamId, { type: 'Start', started: start.started }, { signal })).newState;
    } catch (error) {
      // Another handler started the run first, with another input.
      if (hasErrorCode(error) && error.code === 'CONFLICT' && !error.retryable) return { status: 'Failed', failure: failureOfError(error) };
      throw error;
    }
  } else {
    const outcome = runOutcomeOf(state);
    if (state.started.inputHash !== inputHash) return refused('CONFLICT', `flow run ${flowRunId} of tool call ${request.toolCallId} runs another input`);
    if (outcome !== undefined) return outcome;
    const flow = await deps.flows.flowVersion(scope, state.started.flowId, state.started.flowVersion, signal);
    if (flow === undefined) return finishWith(deps, streamId, { status: 'failed', failure: { code: 'NOT_FOUND', message: `flow ${state.started.flowId} version ${state.started.flowVersion} no longer exists`, retryable: false } });
    body = flow.body;
  }
  // The Start of a concurrent handler may have won with another input.
  if (state.started === undefined || state.started.inputHash !== inputHash) return refused('CONFLICT', `flow run ${flowRunId} of tool call ${request.toolCallId} runs another input`);
  return new RunDriver(deps, scope, request, streamId, state, body, signal).drive();
}

type StartResolution = { readonly started: RunStarted; readonly flow: FlowVersion } | RunFlowOutcome;

/** Resolves the definition and the Flow version a new run captures; a refusal is a Failed outcome. */
async function resolveStart(
  deps: RunFlowDeps,
  scope: Scope,
  request: RunFlowRequest,
  ids: { readonly flowRunId: string; readonly workItemId: string; readonly inputHash: string },
  signal: AbortSignal,
): Promise<StartResolution> {
  const now = deps.clock();
  if (Date.parse(request.deadline) <= now.getTime()) return { status: 'Failed', failure: { code: 'TIMEOUT', message: `the call's deadline ${request.deadline} passed before its flow run could start`, retryable: true } };
  try {
    const definitionName = flowDefinitionNameOf(request.toolId);
    if (definitionName === undefined) return refused('NOT_FOUND', `tool ${request.toolId} is not a flow-backed tool`);
    const definition = await deps.flows.definitionForTool(scope, request.toolId, signal);
    if (definition === undefined || definition.deleted === true) return refused('NOT_FOUND', `no tool definition ${definitionName} in ${scope.tenant}/${scope.workspace}`);
    if (!definition.enabled) return refused('CONFLICT', `tool definition ${definitionName} is disabled`);
    if (String(definition.version) !== request.toolVersion) {
      return refused('CONFLICT', `tool definition ${definitionName} is at version ${definition.version}; the call was validated against tool version ${request.toolVersion}`);
    }
    const ref = definition.flow;
    const flow = await deps.flows.flowVersion(scope, ref.flowId, 'version' in ref ? ref.version : 'active', signal);
    const named = 'version' in ref ? `version ${ref.version}` : 'an active version';
    if (flow === undefined || flow.status !== 'Published') return refused('NOT_FOUND', `flow ${ref.flowId} has no published ${named} for tool definition ${definitionName}`);
    const started: RunStarted = {
      type: 'RunStarted',
      flowRunId: ids.flowRunId,
      at: now.toISOString(),
      workItemId: ids.workItemId,
      toolCallId: request.toolCallId,
      invocationId: request.invocationId,
      toolId: request.toolId,
      toolVersion: request.toolVersion,
      definitionName,
      definitionVersion: definition.version,
      flowId: flow.flowId,
      flowVersion: flow.version,
      inputHash: ids.inputHash,
      principal: request.principal,
      ...(request.agentId === undefined ? {} : { agentId: request.agentId }),
      ...(request.agentRevision === undefined ? {} : { agentRevision: request.agentRevision }),
      correlationId: request.correlationId,
      ...(request.causationId === undefined ? {} : { causationId: request.causationId }),
      deadline: request.deadline,
    };
    return { started, flow };
  } catch (error) {
    // A definition or flow that cannot be read now is retried; a typed refusal of the read is the call's answer.
    if (hasErrorCode(error) && !error.retryable) return { status: 'Failed', failure: failureOfError(error) };
    throw error;
  }
}

async function finishWith(deps: RunFlowDeps, streamId: string, finish: RunFinish): Promise<RunFlowOutcome> {
  const handled = await handleCommand(deps.runs, flowRunDecider, streamId, { type: 'Finish', finish, at: deps.clock().toISOString() });
  const outcome = runOutcomeOf(handled.newState);
  if (outcome === undefined) throw new ToolplaneError('INTERNAL', 'a finished run has no outcome');
  return outcome;
}

/** Drives one started run to its ending: plan, record, call, record, again. */
class RunDriver {
  readonly #deps: RunFlowDeps;
  readonly #scope: Scope;
  readonly #request: RunFlowRequest;
  readonly #streamId: string;
  readonly #started: RunStarted;
  readonly #body: FlowDefinitionBody;
  readonly #signal: AbortSignal;
  readonly #deadline: number;
  // Steps must settle a little before the run's deadline: the run's ending is recorded and sent before the adapter
  // stops waiting for it (a tenth of the run's time, between 250 ms and 2 s).
  readonly #marginMs: number;
  #state: FlowRunAggregate;
  // Appends of one handler are made one at a time (parallel steps settle together): none loses a race to a sibling.
  #writes: Promise<unknown> = Promise.resolve();

  constructor(deps: RunFlowDeps, scope: Scope, request: RunFlowRequest, streamId: string, state: FlowRunAggregate, body: FlowDefinitionBody, signal: AbortSignal) {
    this.#deps = deps;
    this.#scope = scope;
    this.#request = request;
    this.#streamId = streamId;
    this.#started = state.started as RunStarted;
    this.#state = state;
    this.#body = body;
    this.#signal = signal;
    this.#deadline = Date.parse(this.#started.deadline);
    this.#marginMs = Math.min(maxMarginMs, Math.max(minMarginMs, Math.floor((this.#deadline - Date.parse(this.#started.at)) / 10)));
  }

  async drive(): Promise<RunFlowOutcome> {
    for (let round = 0; round < maxRounds; round += 1) {
      throwIfAborted(this.#signal, `running flow run ${this.#started.flowRunId}`);
      const ended = runOutcomeOf(this.#state);
      if (ended !== undefined) return ended;
      const plan = await this.#plan();
      if (plan.kind !== 'run') {
        await this.#record({ type: 'Finish', finish: finishOf(plan), at: this.#now() });
        continue;
      }
      if (plan.skip.length > 0) await this.#record({ type: 'RecordSkips', stepIds: plan.skip, at: this.#now() });
      if (plan.calls.length === 0) continue;
      if (this.#remainingMs() <= 0) {
        await this.#endAtDeadline();
        continue;
      }
      const results = await Promise.all(plan.calls.map((call) => this.#call(call)));
      if (results.some((result) => result.kind === 'unsettled')) await this.#endAtDeadline();
    }
    return this.#finish({ status: 'failed', failure: { code: 'INTERNAL', message: `flow run ${this.#started.flowRunId} planned more than ${maxRounds} rounds`, retryable: false } });
  }

  #plan(): Promise<FlowPlan> {
    return this.#deps.planNext(this.#body, this.#request.input, stepHistoryOf(this.#state), { signal: this.#signal });
  }

  #now(): string {
    return this.#deps.clock().toISOString();
  }

  /** What is left for steps: the time until the run's deadline less the margin its ending needs. */
  #remainingMs(): number {
    return this.#deadline - this.#marginMs - this.#deps.clock().getTime();
  }

  #subject(): StepTokenSubject {
    return { scope: this.#scope, principal: this.#started.principal, flowId: this.#started.flowId, flowVersion: this.#started.flowVersion };
  }

  /** Decides a command against the record and appends it, one at a time; the state follows the record. */
  #record(command: FlowRunCommand): Promise<FlowRunAggregate> {
    const write = this.#writes.then(async () => {
      const handled = await handleCommand(this.#deps.runs, flowRunDecider, this.#streamId, command, { signal: this.#signal });
      this.#state = handled.newState;
      return handled.newState;
    });
    this.#writes = write.catch(() => undefined);
    return write;
  }

  async #finish(finish: RunFinish): Promise<RunFlowOutcome> {
    const state = await this.#record({ type: 'Finish', finish, at: this.#now() });
    const outcome = runOutcomeOf(state);
    if (outcome === undefined) throw new ToolplaneError('INTERNAL', 'a finished run has no outcome');
    return outcome;
  }

  /** One step attempt: started on the record before the call, the outcome recorded after it. */
  async #call(call: PlannedCall): Promise<StepCallResult> {
    const { flowRunId } = this.#started;
    const idempotencyKey = flowStepIdempotencyKey(flowRunId, call.stepId, call.attempt);
    const toolCallId = stepToolCallId(flowRunId, call.stepId, call.attempt);
    await this.#record({
      type: 'StartStep',
      step: { stepId: call.stepId, attempt: call.attempt, at: this.#now(), toolId: call.toolId, ...(call.toolVersion === undefined ? {} : { toolVersion: call.toolVersion }), idempotencyKey, toolCallId },
    });
    if (call.backoffMs > 0) await sleep(Math.max(0, Math.min(call.backoffMs, this.#remainingMs())), this.#signal, `waiting to retry step ${call.stepId}`);
    const remainingMs = this.#remainingMs();
    if (remainingMs <= 0) return { kind: 'unsettled', failure: { code: 'TIMEOUT', message: `flow run ${flowRunId} reached its deadline before step ${call.stepId} was called`, retryable: true } };
    const result = await this.#deps.steps.invoke({
      scope: this.#scope,
      subject: this.#subject(),
      toolId: call.toolId,
      ...(call.toolVersion === undefined ? {} : { toolVersion: call.toolVersion }),
      arguments: call.arguments,
      idempotencyKey,
      toolCallId,
      flowRunId,
      workItemId: this.#started.workItemId,
      correlationId: this.#started.correlationId,
      causationId: this.#request.invocationId,
      remainingMs,
      recoveryGraceMs: Math.floor(this.#marginMs / 2),
      signal: this.#signal,
    });
    if (result.kind === 'unsettled') return result;
    for (const name of stepFailpointNames(flowFailpoints.beforeStepOutcome, call.stepId)) this.#deps.failpoint(name);
    // Stopping now leaves the attempt started: the run that resumes re-joins its call under the same key.
    throwIfAborted(this.#signal, `recording step ${call.stepId}`);
    await this.#record({ type: 'RecordStepOutcome', stepId: call.stepId, attempt: call.attempt, outcome: result.outcome, at: this.#now() });
    for (const name of stepFailpointNames(flowFailpoints.afterStepRecorded, call.stepId)) this.#deps.failpoint(name);
    return result;
  }

  /**
   * The deadline has come with steps unsettled or not yet called: what the adapter can still say about the unsettled
   * ones is recorded, and the run ends as the interpreter then plans it if that is an ending; otherwise Uncertain when
   * a step may have had its effect (its call was executing, or the adapter cannot say), else Failed TIMEOUT.
   */
  async #endAtDeadline(): Promise<void> {
    let inDoubt: string | undefined;
    for (const step of unsettledSteps(this.#state)) {
      const key = step.started?.idempotencyKey;
      if (key === undefined) continue;
      const learnt = await this.#learn(key);
      if (learnt.kind === 'outcome') {
        await this.#record({ type: 'RecordStepOutcome', stepId: step.stepId, attempt: step.attempt, outcome: learnt.outcome, at: this.#now() });
      } else if (learnt.kind === 'in-doubt') {
        inDoubt ??= step.stepId;
      }
    }
    const plan = await this.#plan();
    if (plan.kind !== 'run') {
      await this.#record({ type: 'Finish', finish: finishOf(plan), at: this.#now() });
      return;
    }
    const finish: RunFinish =
      inDoubt === undefined
        ? { status: 'failed', failure: { code: 'TIMEOUT', message: `flow run ${this.#started.flowRunId} reached its deadline ${this.#started.deadline}`, retryable: false } }
        : {
            status: 'uncertain',
            stepId: inDoubt,
            failure: { code: 'UNKNOWN_OUTCOME', message: `step ${inDoubt} of flow run ${this.#started.flowRunId} did not report by the run's deadline; its effect may have happened`, retryable: false },
          };
    await this.#record({ type: 'Finish', finish, at: this.#now() });
  }

  /**
   * What the adapter says of a step's call under its key: its outcome, that it never ran, or that it may have. A call
   * still executing is asked about again until shortly before the run's deadline: the adapter ends a call at its own
   * deadline (the steps' one, a margin before the run's) and records that ending just after.
   */
  async #learn(key: string): Promise<{ readonly kind: 'outcome'; readonly outcome: StepCallOutcome } | { readonly kind: 'no-effect' } | { readonly kind: 'in-doubt' }> {
    for (;;) {
      const leftMs = this.#deadline - this.#deps.clock().getTime() - minLookupMs;
      try {
        // Within what is left before the deadline (a run resumed after it still asks, briefly).
        const timeoutMs = Math.max(minLookupMs, Math.min(this.#deps.settleLookupTimeoutMs ?? 2_000, leftMs));
        const found = await this.#deps.steps.lookup(this.#scope, this.#subject(), key, { timeoutMs, signal: this.#signal });
        if (found.result !== undefined) return { kind: 'outcome', outcome: stepOutcomeOf(found.result) };
        if (beforeExecution.has(found.state) || isTerminalInvocationState(found.state)) return { kind: 'no-effect' };
      } catch (error) {
        if (this.#signal.aborted) throw error;
        // Never recorded by the adapter: the call was not made (its own deadline ends it if it is still queued).
        if (hasErrorCode(error) && error.code === 'NOT_FOUND') return { kind: 'no-effect' };
      }
      if (this.#deadline - this.#deps.clock().getTime() - minLookupMs <= settlePollMs) return { kind: 'in-doubt' };
      await sleep(settlePollMs, this.#signal, `waiting for step call ${key} to settle`);
    }
  }
}

/** The ending a terminal plan records. */
function finishOf(plan: Exclude<FlowPlan, { kind: 'run' }>): RunFinish {
  switch (plan.kind) {
    case 'completed':
      return { status: 'completed', output: plan.output };
    case 'failed':
      return { status: 'failed', failure: plan.failure, ...(plan.stepId === undefined ? {} : { stepId: plan.stepId }) };
    case 'uncertain':
      return { status: 'uncertain', failure: plan.failure, stepId: plan.stepId };
  }
}
