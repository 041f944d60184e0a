import { randomUUID } from 'node:crypto';
import {
  RunFlowReply,
  RunFlowRequest,
  flowWorkSubject,
  toWireError,
  type JsonObject,
  type RunFlowOutcome,
  type Scope,
  type ToolInvocation,
} from '@toolplane/contracts';
import { expectMessage, publish, type Messaging } from '@toolplane/messaging';
import type { ExecutionResult } from '../core/execution-outcome.js';

// Execution of flow-backed tools: the adapter hands the call to FlowRunner through its work queue (stored before
// anything runs, deduplicated by invocation id) and waits on a subject of its own connection for the run's ending.
// FlowRunner is local to Toolplane: no HTTP loop, no credential, no sandbox. What the answer means:
//   Completed → returned (the flow output), Failed → failed with no effect in doubt, Uncertain → a possible effect;
//   no answer by the deadline → timed out with the request sent (Uncertain unless the tool is READ).

/** What one flow-backed execution needs. */
export interface FlowExecution {
  readonly scope: Scope;
  readonly invocation: ToolInvocation;
  readonly args: JsonObject;
  readonly deadline: Date;
  readonly signal: AbortSignal;
}

/** Runs flow-backed tool calls through FlowRunner. */
export interface FlowRunnerGateway {
  execute(execution: FlowExecution): Promise<ExecutionResult>;
}

/** The meaning of FlowRunner's answer for the pipeline. */
export function flowExecutionResult(outcome: RunFlowOutcome): ExecutionResult {
  switch (outcome.status) {
    case 'Completed':
      return { result: 'returned', output: { structuredContent: outcome.output, content: [{ type: 'text', text: JSON.stringify(outcome.output) }] }, flowRun: outcome.receipt };
    case 'Failed':
      return { result: 'failed', failure: outcome.failure, effect: 'none', ...(outcome.receipt === undefined ? {} : { flowRun: outcome.receipt }) };
    case 'Uncertain':
      return { result: 'failed', failure: { ...outcome.failure, code: 'UNKNOWN_OUTCOME', retryable: false }, effect: 'possible', flowRun: outcome.receipt };
  }
}

/** The gateway over the adapter's NATS connection; `inboxPrefix` is where the connection may receive. */
export function natsFlowRunnerGateway(messaging: Messaging, inboxPrefix = '_INBOX'): FlowRunnerGateway {
  return {
    async execute({ scope, invocation, args, deadline, signal }) {
      const remainingMs = () => deadline.getTime() - Date.now();
      if (invocation.toolVersion === undefined) return { result: 'failed', failure: { code: 'INTERNAL', message: 'a flow-backed call reached execution without a resolved tool version', retryable: false }, effect: 'none' };
      const replySubject = `${inboxPrefix}.flow.${randomUUID().replaceAll('-', '')}`;
      const request = RunFlowRequest.parse({
        toolCallId: invocation.toolCallId,
        invocationId: invocation.invocationId,
        attempt: invocation.attempt,
        idempotencyKey: invocation.idempotencyKey,
        toolId: invocation.toolId,
        toolVersion: invocation.toolVersion,
        input: args,
        principal: invocation.principal,
        ...(invocation.agentId === undefined ? {} : { agentId: invocation.agentId }),
        ...(invocation.agentRevision === undefined ? {} : { agentRevision: invocation.agentRevision }),
        correlationId: invocation.correlationId,
        causationId: invocation.invocationId,
        deadline: deadline.toISOString(),
        replySubject,
      });
      // Subscribed before the hand-off is published on the same connection, so no answer can arrive unheard.
      const timedOut = AbortSignal.timeout(Math.max(1, remainingMs()));
      const expected = expectMessage(messaging, { subject: replySubject, schema: RunFlowReply, signal: AbortSignal.any([signal, timedOut]) });
      try {
        try {
          await publish(messaging, { subject: flowWorkSubject(scope), schema: RunFlowRequest, message: request, msgId: invocation.invocationId, timeoutMs: Math.max(1, Math.min(5_000, remainingMs())), signal });
        } catch (error) {
          // Not stored: FlowRunner never heard of the call, so nothing ran.
          const wire = toWireError(error);
          return { result: 'failed', failure: { code: 'TEMPORARY_UNAVAILABLE', message: `the call could not be handed to FlowRunner: ${wire.message}`.slice(0, 4096), retryable: true }, effect: 'none' };
        }
        let reply: RunFlowReply;
        try {
          reply = await expected.received;
        } catch {
          return signal.aborted ? { result: 'cancelled', requestSent: true } : { result: 'timed_out', requestSent: true };
        }
        if (reply.ok) return flowExecutionResult(reply.data);
        // FlowRunner could not run the call at all (its record unreadable, a fault it gave up on): it may have started
        // steps, so the outcome is in doubt.
        return { result: 'failed', failure: { code: reply.error.code, message: reply.error.message, retryable: reply.error.retryable }, effect: 'possible' };
      } finally {
        expected.close();
      }
    },
  };
}
