import {
  ToolplaneError,
  type FlowRunReceipt,
  type FlowRunRecord,
  type FlowRunState,
  type FlowRunStepStatus,
  type FlowRunStepView,
  type FlowRunSummary,
  type FlowRunView,
  type JsonObject,
  type RunCompleted,
  type RunFailed,
  type RunFlowOutcome,
  type RunStarted,
  type RunUncertain,
  type Scope,
  type StepStarted,
  type ToolFailure,
} from '@toolplane/contracts';
import type { Decider } from '@toolplane/event-store';
import type { StepHistory } from './flow-interpreter.js';

// The FlowRun aggregate: a pure decider over the run's records. Every decision is idempotent, because a run is driven
// by whichever replica holds its work message, and a redelivered (or duplicated) message drives it again from its
// record: starting the same run again, starting a step attempt already started, recording an outcome already recorded
// or finishing a run that ended all decide nothing. What would contradict the record is refused: another input for the
// same logical call (CONFLICT), an outcome for an attempt never started, a new attempt while the last is unsettled.
// Nothing is appended after the run's terminal record.

/** One step as the record folds it: its latest attempt and where that attempt is. */
export interface RunStep {
  readonly stepId: string;
  readonly status: FlowRunStepStatus;
  /** The latest attempt started (0 for a step skipped before any). */
  readonly attempt: number;
  readonly started?: StepStarted;
  readonly invocationId?: string;
  readonly output?: JsonObject;
  readonly failure?: ToolFailure;
  readonly endedAt?: string;
}

/** The run's ending record. */
export type RunEnding = RunCompleted | RunFailed | RunUncertain;

/** A FlowRun as its records fold: nothing before RunStarted; steps in the order they were first recorded. */
export interface FlowRunAggregate {
  readonly started?: RunStarted;
  readonly steps: ReadonlyMap<string, RunStep>;
  readonly ending?: RunEnding;
}

/** How a step attempt's call ended, as the runner learnt it from the adapter. */
export type StepCallOutcome =
  | { readonly status: 'succeeded'; readonly invocationId: string; readonly output: JsonObject }
  | { readonly status: 'failed'; readonly invocationId?: string; readonly failure: ToolFailure }
  | { readonly status: 'uncertain'; readonly invocationId?: string; readonly failure: ToolFailure };

/** How a run ends. */
export type RunFinish =
  | { readonly status: 'completed'; readonly output: JsonObject }
  | { readonly status: 'failed'; readonly failure: ToolFailure; readonly stepId?: string }
  | { readonly status: 'uncertain'; readonly failure: ToolFailure; readonly stepId: string };

/** What may be asked of a FlowRun; `at` is the caller's clock (the decider has none). */
export type FlowRunCommand =
  | { readonly type: 'Start'; readonly started: RunStarted }
  | { readonly type: 'RecordSkips'; readonly stepIds: readonly string[]; readonly at: string }
  | { readonly type: 'StartStep'; readonly step: Omit<StepStarted, 'type' | 'flowRunId'> }
  | { readonly type: 'RecordStepOutcome'; readonly stepId: string; readonly attempt: number; readonly outcome: StepCallOutcome; readonly at: string }
  | { readonly type: 'Finish'; readonly finish: RunFinish; readonly at: string };

const initialRun: FlowRunAggregate = { steps: new Map() };

function notStarted(command: FlowRunCommand): ToolplaneError {
  return new ToolplaneError('NOT_FOUND', `no run has been started to apply ${command.type} to`);
}

function decideStart(command: Extract<FlowRunCommand, { type: 'Start' }>, state: FlowRunAggregate): FlowRunRecord[] {
  const started = state.started;
  if (started === undefined) return [command.started];
  if (started.inputHash !== command.started.inputHash) {
    throw new ToolplaneError('CONFLICT', `flow run ${started.flowRunId} was started for tool call ${started.toolCallId} with another input; a tool call id runs one input`);
  }
  return [];
}

function decideStartStep(command: Extract<FlowRunCommand, { type: 'StartStep' }>, state: FlowRunAggregate, flowRunId: string): FlowRunRecord[] {
  const { step } = command;
  const current = state.steps.get(step.stepId);
  if (current !== undefined) {
    if (current.status === 'Skipped') throw new ToolplaneError('CONFLICT', `step ${step.stepId} of flow run ${flowRunId} was skipped; it cannot be started`);
    if (step.attempt <= current.attempt) return [];
    if (current.status === 'Started') {
      throw new ToolplaneError('CONFLICT', `step ${step.stepId} of flow run ${flowRunId}: attempt ${current.attempt} has not settled; attempt ${step.attempt} cannot start`);
    }
  }
  const expected = (current?.attempt ?? 0) + 1;
  if (step.attempt !== expected) throw new ToolplaneError('CONFLICT', `step ${step.stepId} of flow run ${flowRunId}: the next attempt is ${expected}, not ${step.attempt}`);
  return [{ type: 'StepStarted', flowRunId, ...step }];
}

function decideOutcome(command: Extract<FlowRunCommand, { type: 'RecordStepOutcome' }>, state: FlowRunAggregate, flowRunId: string): FlowRunRecord[] {
  const current = state.steps.get(command.stepId);
  if (current === undefined || current.status === 'Skipped' || command.attempt > current.attempt) {
    throw new ToolplaneError('CONFLICT', `step ${command.stepId} of flow run ${flowRunId} has no attempt ${command.attempt} started`);
  }
  // An earlier attempt's outcome, or this attempt's again: recorded already (or superseded).
  if (command.attempt < current.attempt || current.status !== 'Started') return [];
  const base = { flowRunId, at: command.at, stepId: command.stepId, attempt: command.attempt };
  const { outcome } = command;
  const invocation = outcome.invocationId === undefined ? {} : { invocationId: outcome.invocationId };
  switch (outcome.status) {
    case 'succeeded':
      return [{ type: 'StepSucceeded', ...base, invocationId: outcome.invocationId, output: outcome.output }];
    case 'failed':
      return [{ type: 'StepFailed', ...base, ...invocation, failure: outcome.failure }];
    case 'uncertain':
      return [{ type: 'StepUncertain', ...base, ...invocation, failure: outcome.failure }];
  }
}

function decideFinish(command: Extract<FlowRunCommand, { type: 'Finish' }>, flowRunId: string): FlowRunRecord[] {
  const { finish, at } = command;
  switch (finish.status) {
    case 'completed':
      return [{ type: 'RunCompleted', flowRunId, at, output: finish.output }];
    case 'failed':
      return [{ type: 'RunFailed', flowRunId, at, failure: finish.failure, ...(finish.stepId === undefined ? {} : { stepId: finish.stepId }) }];
    case 'uncertain':
      return [{ type: 'RunUncertain', flowRunId, at, failure: finish.failure, stepId: finish.stepId }];
  }
}

function withStep(state: FlowRunAggregate, step: RunStep): FlowRunAggregate {
  const steps = new Map(state.steps);
  steps.set(step.stepId, step);
  return { ...state, steps };
}

function evolveRun(state: FlowRunAggregate, record: FlowRunRecord): FlowRunAggregate {
  switch (record.type) {
    case 'RunStarted':
      return state.started === undefined ? { ...state, started: record } : state;
    case 'StepSkipped':
      return state.steps.has(record.stepId) ? state : withStep(state, { stepId: record.stepId, status: 'Skipped', attempt: 0, endedAt: record.at });
    case 'StepStarted':
      return withStep(state, { stepId: record.stepId, status: 'Started', attempt: record.attempt, started: record });
    case 'StepSucceeded':
    case 'StepFailed':
    case 'StepUncertain': {
      const current = state.steps.get(record.stepId);
      if (current === undefined || current.attempt !== record.attempt) return state;
      const status: FlowRunStepStatus = record.type === 'StepSucceeded' ? 'Succeeded' : record.type === 'StepFailed' ? 'Failed' : 'Uncertain';
      return withStep(state, {
        ...current,
        status,
        endedAt: record.at,
        ...(record.invocationId === undefined ? {} : { invocationId: record.invocationId }),
        ...(record.type === 'StepSucceeded' ? { output: record.output } : { failure: record.failure }),
      });
    }
    case 'RunCompleted':
    case 'RunFailed':
    case 'RunUncertain':
      return state.ending === undefined ? { ...state, ending: record } : state;
  }
}

/** The FlowRun decider (Emmett's shape): pure, idempotent, nothing after the terminal record. */
export const flowRunDecider: Decider<FlowRunAggregate, FlowRunCommand, FlowRunRecord> = {
  initialState: () => initialRun,
  evolve: evolveRun,
  decide(command, state) {
    if (command.type === 'Start') return decideStart(command, state);
    const started = state.started;
    if (started === undefined) throw notStarted(command);
    if (state.ending !== undefined) return [];
    const { flowRunId } = started;
    switch (command.type) {
      case 'RecordSkips':
        return [...new Set(command.stepIds)].filter((stepId) => !state.steps.has(stepId)).map((stepId) => ({ type: 'StepSkipped', flowRunId, at: command.at, stepId }));
      case 'StartStep':
        return decideStartStep(command, state, flowRunId);
      case 'RecordStepOutcome':
        return decideOutcome(command, state, flowRunId);
      case 'Finish':
        return decideFinish(command, flowRunId);
    }
  },
};

/** The state a run is in, from its ending. */
export function runStateOf(state: FlowRunAggregate): FlowRunState {
  switch (state.ending?.type) {
    case undefined:
      return 'Running';
    case 'RunCompleted':
      return 'Completed';
    case 'RunFailed':
      return 'Failed';
    case 'RunUncertain':
      return 'Uncertain';
  }
}

/**
 * The record as the interpreter reads it: per step, the attempts started and the latest attempt's outcome (none while
 * it is unsettled, so the interpreter plans it again with the same attempt and the runner re-joins its call).
 */
export function stepHistoryOf(state: FlowRunAggregate): ReadonlyMap<string, StepHistory> {
  const history = new Map<string, StepHistory>();
  for (const step of state.steps.values()) {
    switch (step.status) {
      case 'Skipped':
        history.set(step.stepId, { attempts: step.attempt, outcome: { status: 'skipped' } });
        break;
      case 'Started':
        history.set(step.stepId, { attempts: step.attempt });
        break;
      case 'Succeeded':
        history.set(step.stepId, { attempts: step.attempt, outcome: { status: 'succeeded', output: step.output ?? {} } });
        break;
      case 'Failed':
      case 'Uncertain':
        history.set(step.stepId, { attempts: step.attempt, outcome: { status: step.status === 'Failed' ? 'failed' : 'uncertain', failure: failureOf(step) } });
        break;
    }
  }
  return history;
}

function failureOf(step: RunStep): ToolFailure {
  return step.failure ?? { code: 'INTERNAL', message: `step ${step.stepId} ended without a recorded failure`, retryable: false };
}

/** The steps started and not settled: the calls a resumed run re-joins, and those a deadline leaves in doubt. */
export function unsettledSteps(state: FlowRunAggregate): RunStep[] {
  return [...state.steps.values()].filter((step) => step.status === 'Started');
}

/** The receipt of a run: what identifies it to the caller. */
export function runReceiptOf(started: RunStarted): FlowRunReceipt {
  return {
    workItemId: started.workItemId,
    flowRunId: started.flowRunId,
    flowId: started.flowId,
    flowVersion: started.flowVersion,
    definitionName: started.definitionName,
    toolCallId: started.toolCallId,
    correlationId: started.correlationId,
  };
}

/** The outcome a terminal run replies with (the same every time it is asked); undefined while it runs. */
export function runOutcomeOf(state: FlowRunAggregate): RunFlowOutcome | undefined {
  const { started, ending } = state;
  if (started === undefined || ending === undefined) return undefined;
  const receipt = runReceiptOf(started);
  switch (ending.type) {
    case 'RunCompleted':
      return { status: 'Completed', output: ending.output, receipt };
    case 'RunFailed':
      return { status: 'Failed', failure: ending.failure, receipt };
    case 'RunUncertain':
      return { status: 'Uncertain', failure: ending.failure, receipt };
  }
}

function stepViewOf(step: RunStep): FlowRunStepView {
  const started = step.started;
  return {
    stepId: step.stepId,
    status: step.status,
    attempt: step.attempt,
    ...(started === undefined
      ? {}
      : {
          toolId: started.toolId,
          ...(started.toolVersion === undefined ? {} : { toolVersion: started.toolVersion }),
          idempotencyKey: started.idempotencyKey,
          toolCallId: started.toolCallId,
          startedAt: started.at,
        }),
    ...(step.invocationId === undefined ? {} : { invocationId: step.invocationId }),
    ...(step.failure === undefined ? {} : { failure: step.failure }),
    ...(step.endedAt === undefined ? {} : { endedAt: step.endedAt }),
  };
}

/** A run as queries show it (no outputs, no input); undefined when it was never started. */
export function runViewOf(scope: Scope, state: FlowRunAggregate, version: number): FlowRunView | undefined {
  const { started, ending } = state;
  if (started === undefined) return undefined;
  return {
    tenant: scope.tenant,
    workspace: scope.workspace,
    flowRunId: started.flowRunId,
    workItemId: started.workItemId,
    toolCallId: started.toolCallId,
    invocationId: started.invocationId,
    toolId: started.toolId,
    definitionName: started.definitionName,
    definitionVersion: started.definitionVersion,
    flowId: started.flowId,
    flowVersion: started.flowVersion,
    state: runStateOf(state),
    principal: started.principal,
    ...(started.agentId === undefined ? {} : { agentId: started.agentId }),
    ...(started.agentRevision === undefined ? {} : { agentRevision: started.agentRevision }),
    correlationId: started.correlationId,
    ...(started.causationId === undefined ? {} : { causationId: started.causationId }),
    inputHash: started.inputHash,
    deadline: started.deadline,
    startedAt: started.at,
    ...(ending === undefined ? {} : { endedAt: ending.at }),
    ...(ending === undefined || ending.type === 'RunCompleted' ? {} : { failure: ending.failure }),
    ...(ending !== undefined && ending.type !== 'RunCompleted' && ending.stepId !== undefined ? { failedStepId: ending.stepId } : {}),
    version,
    steps: [...state.steps.values()].map(stepViewOf),
  };
}

/** A run in a listing. */
export function runSummaryOf(view: FlowRunView): FlowRunSummary {
  const { steps, ...rest } = view;
  return { ...rest, stepCount: steps.length };
}
