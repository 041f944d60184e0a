import { kvKeyToken } from './descriptor-read-model.js';
import { MAX_MESSAGE_BYTES } from './limits.js';
import type { Scope } from './primitives.js';
import type { StreamDefinition } from './streams.js';

// FlowRunner's own record and its work queue.
//
// The record: the Flow, ToolDefinition and FlowRun aggregates as event streams, one subject per aggregate, in a
// stream only FlowRunner reads and writes (a run's step outputs are tool results, which stay private):
//
//   tp.v1.flowrunner.flow.{tenant}.{workspace}.{b64url(flowId)}
//   tp.v1.flowrunner.definition.{tenant}.{workspace}.{b64url(definitionName)}
//   tp.v1.flowrunner.run.{tenant}.{workspace}.{flowRunId}
//
// The work queue: the tool adapter hands each execution of a flow-backed tool to FlowRunner as one message on
// `tp.v1.flowwork.{tenant}.{workspace}`, held by one replica at a time until the run ends (another replica takes it
// over after a crash and resumes the run from its record).

const FLOW_RUNNER_SUBJECT_PREFIX = 'tp.v1.flowrunner';
const FLOW_WORK_SUBJECT_PREFIX = 'tp.v1.flowwork';

/** The kinds of aggregate FlowRunner's stream holds, as the third token of their subjects. */
export const flowRunnerAggregateKinds = ['flow', 'definition', 'run'] as const;
export type FlowRunnerAggregateKind = (typeof flowRunnerAggregateKinds)[number];

/** FlowRunner's private stream (direct gets allowed: an aggregate is read in one round trip). */
export const flowRunnerStream = {
  name: 'TOOLPLANE_FLOWS',
  description: 'Flow, ToolDefinition and FlowRun aggregates of FlowRunner; private to FlowRunner.',
  subjects: [`${FLOW_RUNNER_SUBJECT_PREFIX}.>`],
  retention: 'limits',
  storage: 'file',
  duplicateWindowMs: 2 * 60_000,
  maxMsgSize: MAX_MESSAGE_BYTES,
  // The record itself: kept until an operator sets a limit.
  maxAgeMs: 0,
  maxBytes: -1,
  allowDirect: true,
} as const satisfies StreamDefinition;

/** The work queue of flow executions: each message is removed once the replica that ran it acks it. */
export const flowWorkStream = {
  name: 'TOOLPLANE_FLOW_WORK',
  description: 'Executions of flow-backed tools handed from the tool adapter to FlowRunner; work queue.',
  subjects: [`${FLOW_WORK_SUBJECT_PREFIX}.>`],
  retention: 'workqueue',
  storage: 'file',
  duplicateWindowMs: 2 * 60_000,
  maxMsgSize: MAX_MESSAGE_BYTES,
  // Runs are bounded by their definition's timeout (at most 15 minutes); the age limit only bounds what an outage leaves.
  maxAgeMs: 24 * 60 * 60_000,
  maxBytes: -1,
} as const satisfies StreamDefinition;

/** The stream id (subject tail) of a Flow aggregate (every version of one flow). */
export function flowStreamId(scope: Scope, flowId: string): string {
  return `${scope.tenant}.${scope.workspace}.${kvKeyToken(flowId)}`;
}

/** The stream id (subject tail) of a ToolDefinition aggregate. */
export function toolDefinitionStreamId(scope: Scope, definitionName: string): string {
  return `${scope.tenant}.${scope.workspace}.${kvKeyToken(definitionName)}`;
}

/** The stream id (subject tail) of a FlowRun aggregate. */
export function flowRunStreamId(scope: Scope, flowRunId: string): string {
  return `${scope.tenant}.${scope.workspace}.${kvKeyToken(flowRunId)}`;
}

/** The subject of a FlowRunner aggregate. */
export function flowRunnerSubject(kind: FlowRunnerAggregateKind, streamId: string): string {
  return `${FLOW_RUNNER_SUBJECT_PREFIX}.${kind}.${streamId}`;
}

/** The subject filter of one kind of aggregate of a scope (or of every scope). */
export function flowRunnerFilter(kind: FlowRunnerAggregateKind, scope?: Scope): string {
  return scope === undefined ? `${FLOW_RUNNER_SUBJECT_PREFIX}.${kind}.>` : `${FLOW_RUNNER_SUBJECT_PREFIX}.${kind}.${scope.tenant}.${scope.workspace}.>`;
}

/** The subject the adapter hands a scope's flow executions to. */
export function flowWorkSubject(scope: Scope): string {
  return `${FLOW_WORK_SUBJECT_PREFIX}.${scope.tenant}.${scope.workspace}`;
}

/** The filter of every scope's flow executions (FlowRunner's consumer). */
export function flowWorkFilter(): string {
  return `${FLOW_WORK_SUBJECT_PREFIX}.>`;
}
