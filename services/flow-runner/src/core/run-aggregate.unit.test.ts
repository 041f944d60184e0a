import { describe, expect, it } from 'vitest';
import { FlowRunRecord, hasErrorCode, type RunStarted } from '@toolplane/contracts';
import { foldEvents } from '@toolplane/event-store';
import {
  flowRunDecider,
  runOutcomeOf,
  runStateOf,
  runViewOf,
  stepHistoryOf,
  unsettledSteps,
  type FlowRunAggregate,
  type FlowRunCommand,
} from './run-aggregate.js';

const at = '2026-03-01T10:00:00.000Z';
const started: RunStarted = {
  type: 'RunStarted',
  flowRunId: 'fr-1',
  at,
  workItemId: 'wi-1',
  toolCallId: 'call-1',
  invocationId: '00000000-0000-4000-8000-000000000001',
  toolId: 'flows.orders.refund',
  toolVersion: '3',
  definitionName: 'orders.refund',
  definitionVersion: 3,
  flowId: 'refund',
  flowVersion: 2,
  inputHash: 'a'.repeat(64),
  principal: 'user:alice@example.com',
  correlationId: 'corr-1',
  deadline: '2026-03-01T10:01:00.000Z',
};
const startStep = (stepId: string, attempt = 1): FlowRunCommand => ({
  type: 'StartStep',
  step: { stepId, attempt, at, toolId: 'orders.lookup', idempotencyKey: `flow:${stepId}:${attempt}`, toolCallId: `fr-1:${stepId}:${attempt}` },
});
const succeed = (stepId: string, attempt = 1): FlowRunCommand => ({
  type: 'RecordStepOutcome',
  stepId,
  attempt,
  at,
  outcome: { status: 'succeeded', invocationId: '00000000-0000-4000-8000-00000000000a', output: { total: 5 } },
});
const failure = { code: 'TEMPORARY_UNAVAILABLE' as const, message: 'down', retryable: true };

/** Decides the commands in order, appending what each decided; the records and the state they fold to. */
function run(commands: readonly FlowRunCommand[]): { records: FlowRunRecord[]; state: FlowRunAggregate } {
  const records: FlowRunRecord[] = [];
  let state = flowRunDecider.initialState();
  for (const command of commands) {
    const decided = flowRunDecider.decide(command, state);
    for (const record of decided) FlowRunRecord.parse(record);
    records.push(...decided);
    state = decided.reduce((folded, record) => flowRunDecider.evolve(folded, record), state);
  }
  return { records, state };
}

function codeOf(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    if (hasErrorCode(error)) return error.code;
    throw error;
  }
  return 'OK';
}

describe('the FlowRun decider', () => {
  it('starts a run once: the same start again decides nothing; another input for the same run is CONFLICT', () => {
    const { records, state } = run([{ type: 'Start', started }, { type: 'Start', started }]);
    expect(records.map((record) => record.type)).toEqual(['RunStarted']);
    expect(codeOf(() => flowRunDecider.decide({ type: 'Start', started: { ...started, inputHash: 'b'.repeat(64) } }, state))).toBe('CONFLICT');
    expect(runStateOf(state)).toBe('Running');
  });

  it('refuses every other command before the run started (NOT_FOUND)', () => {
    expect(codeOf(() => flowRunDecider.decide(startStep('lookup'), flowRunDecider.initialState()))).toBe('NOT_FOUND');
  });

  it('appends nothing for a step attempt started twice or an outcome recorded twice', () => {
    const { records } = run([{ type: 'Start', started }, startStep('lookup'), startStep('lookup'), succeed('lookup'), succeed('lookup'), startStep('lookup')]);
    expect(records.map((record) => record.type)).toEqual(['RunStarted', 'StepStarted', 'StepSucceeded']);
  });

  it('refuses an outcome for an attempt never started, and a new attempt while the last is unsettled', () => {
    const { state } = run([{ type: 'Start', started }, startStep('lookup')]);
    expect(codeOf(() => flowRunDecider.decide(succeed('other'), state))).toBe('CONFLICT');
    expect(codeOf(() => flowRunDecider.decide(succeed('lookup', 2), state))).toBe('CONFLICT');
    expect(codeOf(() => flowRunDecider.decide(startStep('lookup', 2), state))).toBe('CONFLICT');
    expect(codeOf(() => flowRunDecider.decide(startStep('fresh', 2), state))).toBe('CONFLICT');
  });

  it('starts a retry after a failed attempt; the history shows the new attempt unsettled, then its outcome', () => {
    const failed: FlowRunCommand = { type: 'RecordStepOutcome', stepId: 'lookup', attempt: 1, at, outcome: { status: 'failed', failure } };
    const afterFailure = run([{ type: 'Start', started }, startStep('lookup'), failed]).state;
    expect(stepHistoryOf(afterFailure).get('lookup')).toEqual({ attempts: 1, outcome: { status: 'failed', failure } });
    const retried = run([{ type: 'Start', started }, startStep('lookup'), failed, startStep('lookup', 2)]).state;
    expect(stepHistoryOf(retried).get('lookup')).toEqual({ attempts: 2 });
    expect(unsettledSteps(retried).map((step) => step.stepId)).toEqual(['lookup']);
    // The late outcome of attempt 1 changes nothing.
    expect(flowRunDecider.decide(failed, retried)).toEqual([]);
  });

  it('records skips once, never for a step already started, and maps them into the history', () => {
    const { records, state } = run([
      { type: 'Start', started },
      startStep('lookup'),
      { type: 'RecordSkips', stepIds: ['notify', 'notify', 'lookup'], at },
      { type: 'RecordSkips', stepIds: ['notify'], at },
    ]);
    expect(records.filter((record) => record.type === 'StepSkipped').map((record) => (record as { stepId: string }).stepId)).toEqual(['notify']);
    expect(stepHistoryOf(state).get('notify')).toEqual({ attempts: 0, outcome: { status: 'skipped' } });
    expect(codeOf(() => flowRunDecider.decide(startStep('notify'), state))).toBe('CONFLICT');
  });

  it('decides nothing after the terminal record, and replays the same outcome with the receipt', () => {
    const { records, state } = run([
      { type: 'Start', started },
      startStep('lookup'),
      succeed('lookup'),
      { type: 'Finish', finish: { status: 'completed', output: { refunded: true } }, at },
      { type: 'Finish', finish: { status: 'failed', failure }, at },
      startStep('notify'),
      { type: 'RecordSkips', stepIds: ['notify'], at },
    ]);
    expect(records.map((record) => record.type)).toEqual(['RunStarted', 'StepStarted', 'StepSucceeded', 'RunCompleted']);
    expect(runStateOf(state)).toBe('Completed');
    expect(runOutcomeOf(state)).toEqual({
      status: 'Completed',
      output: { refunded: true },
      receipt: { workItemId: 'wi-1', flowRunId: 'fr-1', flowId: 'refund', flowVersion: 2, definitionName: 'orders.refund', toolCallId: 'call-1', correlationId: 'corr-1' },
    });
    expect(foldEvents(flowRunDecider, records)).toEqual(state);
  });

  it('ends Uncertain naming the step, and its view shows no outputs', () => {
    const uncertain: FlowRunCommand = { type: 'RecordStepOutcome', stepId: 'refund', attempt: 1, at, outcome: { status: 'uncertain', failure: { code: 'UNKNOWN_OUTCOME', message: 'interrupted', retryable: false } } };
    const { state } = run([
      { type: 'Start', started },
      startStep('lookup'),
      succeed('lookup'),
      startStep('refund'),
      uncertain,
      { type: 'Finish', finish: { status: 'uncertain', failure: { code: 'UNKNOWN_OUTCOME', message: 'refund did not report', retryable: false }, stepId: 'refund' }, at },
    ]);
    expect(runOutcomeOf(state)?.status).toBe('Uncertain');
    const view = runViewOf({ tenant: 't1', workspace: 'w1' }, state, 7);
    expect(view?.state).toBe('Uncertain');
    expect(view?.failedStepId).toBe('refund');
    expect(view?.steps.map((step) => [step.stepId, step.status, step.attempt])).toEqual([
      ['lookup', 'Succeeded', 1],
      ['refund', 'Uncertain', 1],
    ]);
    expect(JSON.stringify(view)).not.toContain('total');
  });
});
