import type { z } from 'zod';
import {
  ToolplaneError,
  commandFilter,
  flowRunCommandSchemas,
  flowRunOperations,
  flowRunStreamId,
  scopeOfSubject,
  type FlowRunRecord,
  type FlowRunStepView,
  type FlowRunView,
  type GetRunReply,
  type ListRunsReply,
  type ListRunsRequest,
  type Scope,
} from '@toolplane/contracts';
import { verifyOperator, type TokenVerifier } from '@toolplane/auth';
import { foldEvents, type EventStore, type StoredAppend } from '@toolplane/event-store';
import { serve, type Messaging, type ServeDiagnostic, type ServeHandle } from '@toolplane/messaging';
import { flowRunDecider, runSummaryOf, runViewOf } from '../core/run-aggregate.js';
import type { StepInvoker } from './step-invoker.js';

// The run queries, answered from the runs' own records (no read model): getRun folds one run's subject and asks the
// tool adapter where each started step's invocation is (so a step parked for an approval shows AwaitingApproval);
// listRuns folds every run of the workspace read by subject filter. Neither shows an input or an output.

/** The queue group every FlowRunner replica answers run queries in. */
export const RUN_QUERIES_QUEUE = 'flow-runner-runs';

/** What the run queries read. */
export interface RunQueryDeps {
  readonly runs: EventStore<FlowRunRecord>;
  /** Every append of a scope's runs, in stream order. */
  readonly readAllRuns: (scope: Scope, signal?: AbortSignal) => Promise<readonly StoredAppend<FlowRunRecord>[]>;
  readonly steps: StepInvoker;
  /** How long one lookup of a started step's invocation may take (default 2 000 ms). */
  readonly lookupTimeoutMs?: number;
}

/** One run of the scope with its steps, and the live state of the started ones; NOT_FOUND when there is none. */
export async function getRun(deps: RunQueryDeps, scope: Scope, flowRunId: string, signal?: AbortSignal): Promise<GetRunReply> {
  const stored = await deps.runs.readStream(flowRunStreamId(scope, flowRunId), signal === undefined ? {} : { signal });
  const state = foldEvents(flowRunDecider, stored.events);
  const view = runViewOf(scope, state, stored.version);
  if (view === undefined || state.started === undefined) throw new ToolplaneError('NOT_FOUND', `no flow run ${flowRunId} in ${scope.tenant}/${scope.workspace}`);
  const { started } = state;
  const subject = { scope, principal: started.principal, flowId: started.flowId, flowVersion: started.flowVersion };
  const steps = await Promise.all(
    view.steps.map(async (step): Promise<FlowRunStepView> => {
      if (step.status !== 'Started' || step.idempotencyKey === undefined) return step;
      try {
        const found = await deps.steps.lookup(scope, subject, step.idempotencyKey, { timeoutMs: deps.lookupTimeoutMs ?? 2_000, ...(signal === undefined ? {} : { signal }) });
        return { ...step, invocation: { invocationId: found.invocationId, attempt: found.attempt, state: found.state, ...(found.approvalId === undefined ? {} : { approvalId: found.approvalId }) } };
      } catch {
        // Not recorded by the adapter yet, or the adapter away: the run's own record is still the answer.
        return step;
      }
    }),
  );
  return { run: { ...view, steps } };
}

/** The scope's runs, latest started first, narrowed by definition and state. */
export async function listRuns(deps: RunQueryDeps, scope: Scope, request: ListRunsRequest, signal?: AbortSignal): Promise<ListRunsReply> {
  const byRun = new Map<string, { records: FlowRunRecord[]; version: number }>();
  for (const append of await deps.readAllRuns(scope, signal)) {
    for (const record of append.events) {
      const run = byRun.get(record.flowRunId) ?? { records: [], version: 0 };
      run.records.push(record);
      run.version = append.seq;
      byRun.set(record.flowRunId, run);
    }
  }
  const views: FlowRunView[] = [];
  for (const run of byRun.values()) {
    const view = runViewOf(scope, foldEvents(flowRunDecider, run.records), run.version);
    if (view === undefined) continue;
    if (request.definitionName !== undefined && view.definitionName !== request.definitionName) continue;
    if (request.state !== undefined && view.state !== request.state) continue;
    views.push(view);
  }
  views.sort((a, b) => (a.startedAt === b.startedAt ? (a.flowRunId < b.flowRunId ? -1 : 1) : a.startedAt < b.startedAt ? 1 : -1));
  return { runs: views.slice(0, request.limit).map(runSummaryOf) };
}

type Operation = keyof typeof flowRunCommandSchemas;
type Handler<O extends Operation> = (scope: Scope, request: z.output<(typeof flowRunCommandSchemas)[O]['request']>, signal: AbortSignal) => Promise<z.input<(typeof flowRunCommandSchemas)[O]['reply']>>;

/** What the run queries are served with. */
export interface RunQueryServing {
  readonly queries: RunQueryDeps;
  /** Verifies operator tokens: any operator of the workspace may read its runs. */
  readonly verifier: TokenVerifier;
  readonly onDiagnostic?: (diagnostic: ServeDiagnostic) => void;
  readonly signal?: AbortSignal;
}

/** Serves getRun and listRuns on `commandSubject(scope, 'flows', operation)`; resolves once both are subscribed. */
export async function serveRunQueries(messaging: Messaging, serving: RunQueryServing): Promise<ServeHandle[]> {
  const { queries } = serving;
  const handlers: { [O in Operation]: Handler<O> } = {
    getRun: (scope, request, signal) => getRun(queries, scope, request.flowRunId, signal),
    listRuns: (scope, request, signal) => listRuns(queries, scope, request, signal),
  };
  const serveOne = <O extends Operation>(operation: O) =>
    serve(messaging, {
      subject: commandFilter('flows', { operation: flowRunOperations[operation] }),
      queue: RUN_QUERIES_QUEUE,
      requestSchema: flowRunCommandSchemas[operation].request,
      replySchema: flowRunCommandSchemas[operation].reply,
      handler: async (request, context) => {
        const scope = scopeOfSubject(context.subject);
        await verifyOperator(serving.verifier, scope, context.headers);
        return (handlers[operation] as Handler<O>)(scope, request as z.output<(typeof flowRunCommandSchemas)[O]['request']>, context.signal);
      },
      ...(serving.onDiagnostic === undefined ? {} : { onDiagnostic: serving.onDiagnostic }),
      ...(serving.signal === undefined ? {} : { signal: serving.signal }),
    });
  return Promise.all((Object.keys(handlers) as Operation[]).map((operation) => serveOne(operation)));
}
