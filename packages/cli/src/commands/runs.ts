import { FlowRunState, ToolplaneError, flowRunCommandSchemas, type FlowRunView, type ToolFailure } from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields, formatTable } from '../output.js';
import { parseLimit } from './calls.js';

// `toolplane runs …`: FlowRuns of the workspace as FlowRunner records them: the run's definition, effective Flow
// version, state and steps (ids, tool, attempt, status, invocation, failure; never inputs or outputs), and for a step
// still running, where its invocation is at the tool adapter (AwaitingApproval for a gated step). As an operator.

/** `--state running|completed|failed|uncertain`, any case. */
export function parseRunState(value: string): FlowRunState {
  const state = FlowRunState.options.find((option) => option.toLowerCase() === value.trim().toLowerCase());
  if (state === undefined) throw new ToolplaneError('INVALID_ARGUMENT', `--state must be one of ${FlowRunState.options.map((option) => option.toLowerCase()).join(', ')}`);
  return state;
}

function failureText(failure: ToolFailure | undefined): string | undefined {
  return failure === undefined ? undefined : `${failure.code}: ${failure.message}`;
}

function runFields(run: FlowRunView): string {
  const fields = formatFields([
    ['flow run', run.flowRunId],
    ['state', run.state],
    ['definition', `${run.definitionName}@${run.definitionVersion}`],
    ['flow', `${run.flowId}@${run.flowVersion}`],
    ['tool call', run.toolCallId],
    ['work item', run.workItemId],
    ['invocation', run.invocationId],
    ['principal', run.principal],
    ['agent', run.agentId === undefined ? undefined : `${run.agentId}${run.agentRevision === undefined ? '' : `@${run.agentRevision}`}`],
    ['correlation', run.correlationId],
    ['started at', run.startedAt],
    ['deadline', run.deadline],
    ['ended at', run.endedAt],
    ['failure', failureText(run.failure)],
    ['failed step', run.failedStepId],
  ]);
  const steps = formatTable(
    ['STEP', 'STATUS', 'TOOL', 'ATTEMPT', 'INVOCATION', 'LIVE', 'FAILURE'],
    run.steps.map((step) => [
      step.stepId,
      step.status,
      step.toolId === undefined ? undefined : step.toolVersion === undefined ? step.toolId : `${step.toolId}@${step.toolVersion}`,
      step.attempt,
      step.invocationId ?? step.invocation?.invocationId,
      step.invocation?.state,
      step.failure?.code,
    ]),
  );
  return `${fields}\n${steps}`;
}

/** `toolplane runs get|list`: FlowRuns of the workspace. */
export const runsCommands: CommandGroup = (program, context) => {
  const runs = program.command('runs').description('Inspect FlowRuns of the workspace: their Flow version, state and steps.');

  withToken(runs.command('get'))
    .description('show one FlowRun: definition, Flow version, state, failure, and each step (with the live state of a running one)')
    .argument('<flowRunId>', 'the FlowRun id (a flow tool call’s receipt names it)')
    .action(async (flowRunId: string, options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('flows', 'getRun', flowRunCommandSchemas.getRun, { flowRunId }, await operatorHeaders(ctx, options));
      ctx.print(reply.run, () => runFields(reply.run));
    });

  withToken(runs.command('list'))
    .description('list FlowRuns of the workspace, latest started first')
    .option('--definition <name>', 'only runs of this tool definition')
    .option('--state <state>', `only runs in this state (${FlowRunState.options.map((option) => option.toLowerCase()).join(', ')})`, parseRunState)
    .option('--limit <n>', 'at most this many (1-200, default 50)', parseLimit)
    .action(async (options: TokenOptions & { definition?: string; state?: FlowRunState; limit?: number }) => {
      const ctx = context();
      const reply = await ctx.call(
        'flows',
        'listRuns',
        flowRunCommandSchemas.listRuns,
        {
          ...(options.definition === undefined ? {} : { definitionName: options.definition }),
          ...(options.state === undefined ? {} : { state: options.state }),
          ...(options.limit === undefined ? {} : { limit: options.limit }),
        },
        await operatorHeaders(ctx, options),
      );
      ctx.print(reply, () =>
        formatTable(
          ['FLOW RUN', 'STATE', 'DEFINITION', 'FLOW', 'STEPS', 'STARTED', 'ENDED', 'FAILURE'],
          reply.runs.map((run) => [run.flowRunId, run.state, run.definitionName, `${run.flowId}@${run.flowVersion}`, run.stepCount, run.startedAt, run.endedAt, run.failure?.code]),
        ),
      );
    });
};
