import { z } from 'zod';
import { FlowRunState, FlowRunSummary, FlowRunView } from './flow-run-records.js';
import { ExternalId } from './primitives.js';

// FlowRunner's run queries (`tp.v1.cmd.{tenant}.{workspace}.flows.{operation}`), answered from the runs' own records.
// Scope comes from the subject, the operator from the token in the Authorization header; never from a body.

/** FlowRunner's run queries, as they appear in command subjects. */
export const flowRunOperations = {
  getRun: 'getRun',
  listRuns: 'listRuns',
} as const;

/** Names one FlowRun of the scope. */
export const GetRunRequest = z.strictObject({ flowRunId: ExternalId });
export type GetRunRequest = z.infer<typeof GetRunRequest>;

/** The run with its steps (and the live invocation state of its started ones); NOT_FOUND when the scope has none by that id. */
export const GetRunReply = z.strictObject({ run: FlowRunView });
export type GetRunReply = z.infer<typeof GetRunReply>;

/** Lists the scope's runs, latest started first, optionally of one definition or in one state. */
export const ListRunsRequest = z.strictObject({
  definitionName: ExternalId.optional(),
  state: FlowRunState.optional(),
  limit: z.number().int().min(1).max(200).default(50),
});
export type ListRunsRequest = z.infer<typeof ListRunsRequest>;

/** The runs found, latest started first. */
export const ListRunsReply = z.strictObject({ runs: z.array(FlowRunSummary) });
export type ListRunsReply = z.infer<typeof ListRunsReply>;

/** Each run query's request and reply contract, for callers (`call('flows', operation, schemas, body)`) and FlowRunner. */
export const flowRunCommandSchemas = {
  getRun: { request: GetRunRequest, reply: GetRunReply },
  listRuns: { request: ListRunsRequest, reply: ListRunsReply },
} as const satisfies Record<keyof typeof flowRunOperations, { request: z.ZodType; reply: z.ZodType }>;
