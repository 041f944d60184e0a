import { createToolplaneClient, type ToolplaneClient } from '@toolplane/client';
import {
  MAX_INVOCATION_TIMEOUT_MS,
  hasErrorCode,
  isRetryable,
  type InvocationResult,
  type JsonObject,
  type LookupInvocationReply,
  type Scope,
  type ToolFailure,
} from '@toolplane/contracts';
import type { Messaging } from '@toolplane/messaging';
import type { StepTokens, StepTokenSubject } from '../adapters/step-tokens.js';
import type { StepCallOutcome } from '../core/run-aggregate.js';

// A run's steps call their tools through the governed pipeline like any agent: with the client SDK on FlowRunner's own
// connection, under the step attempt's idempotency key (so a resumed run joins or replays the call instead of making
// it again), with the run's ids so the audit projector journals the call under the run, and with a context token
// FlowRunner signs for the run's principal and the flow's agent identity.

/** One step attempt's call. */
export interface StepCall {
  readonly scope: Scope;
  readonly subject: StepTokenSubject;
  readonly toolId: string;
  readonly toolVersion?: string;
  readonly arguments: JsonObject;
  readonly idempotencyKey: string;
  readonly toolCallId: string;
  readonly flowRunId: string;
  readonly workItemId: string;
  readonly correlationId: string;
  /** The outer invocation (the adapter's call of the flow tool) this step is made for. */
  readonly causationId: string;
  /** What is left of the run: the call's deadline at the adapter and the longest the client waits. */
  readonly remainingMs: number;
  /** How long after `remainingMs` the client still looks the call up (the adapter records a call it cut at its deadline just after). */
  readonly recoveryGraceMs: number;
  readonly signal: AbortSignal;
}

/**
 * What a step call came to: an outcome to record, or none by the deadline (`unsettled`: the call may still be queued,
 * parked for an approval, or running; a lookup decides whether its effect is in doubt).
 */
export type StepCallResult = { readonly kind: 'outcome'; readonly outcome: StepCallOutcome } | { readonly kind: 'unsettled'; readonly failure: ToolFailure };

/** How FlowRunner calls and looks up step invocations. */
export interface StepInvoker {
  /**
   * Makes (or re-joins) a step attempt's call. Throws only what the run should not record: CANCELLED when `signal`
   * aborted, and retryable failures (NATS away) for the work message to be redelivered and the run resumed.
   */
  invoke(call: StepCall): Promise<StepCallResult>;
  /** Where the call under a key is (NOT_FOUND: the adapter has not recorded it). */
  lookup(scope: Scope, subject: StepTokenSubject, idempotencyKey: string, options: { readonly timeoutMs: number; readonly signal?: AbortSignal }): Promise<LookupInvocationReply>;
}

/** What a call's result records: its output (structured content, or `{text}`), or its failure. */
export function stepOutcomeOf(result: InvocationResult): StepCallOutcome {
  const { receipt } = result;
  const failure: ToolFailure = receipt.failure ?? { code: 'INTERNAL', message: `the call ended ${receipt.state} without a failure`, retryable: false };
  switch (result.status) {
    case 'SUCCESS':
      return { status: 'succeeded', invocationId: receipt.invocationId, output: result.structuredContent ?? { text: result.textContent ?? '' } };
    case 'UNCERTAIN':
      return { status: 'uncertain', invocationId: receipt.invocationId, failure };
    case 'FAILED':
    case 'DENIED':
    case 'CANCELLED':
      return { status: 'failed', invocationId: receipt.invocationId, failure };
  }
}

/** The failure of a thrown error, for a record (no details: they could carry arguments). */
export function failureOfError(error: { code: ToolFailure['code']; message: string; retryable?: boolean }): ToolFailure {
  return { code: error.code, message: error.message.slice(0, 4096), retryable: error.retryable ?? isRetryable(error.code) };
}

/** The client SDK's answers, turned into what a run records. */
export async function invokeWith(client: ToolplaneClient, tokens: StepTokens, call: StepCall): Promise<StepCallResult> {
  const timeoutMs = Math.min(MAX_INVOCATION_TIMEOUT_MS, Math.max(1, Math.floor(call.remainingMs)));
  const contextToken = await tokens.issue(call.subject, call.remainingMs);
  try {
    const result = await client.invoke(call.toolId, call.arguments, {
      idempotencyKey: call.idempotencyKey,
      toolCallId: call.toolCallId,
      ...(call.toolVersion === undefined ? {} : { toolVersion: call.toolVersion }),
      correlationId: call.correlationId,
      causationId: call.causationId,
      flowRunId: call.flowRunId,
      workItemId: call.workItemId,
      timeoutMs,
      contextToken,
      signal: call.signal,
    });
    return { kind: 'outcome', outcome: stepOutcomeOf(result) };
  } catch (error) {
    if (call.signal.aborted || !hasErrorCode(error)) throw error;
    switch (error.code) {
      // No outcome by the deadline: the call was not made yet, waits for a human, or ran and did not report.
      case 'TIMEOUT':
      case 'APPROVAL_PENDING':
      case 'UNKNOWN_OUTCOME':
        return { kind: 'unsettled', failure: failureOfError(error) };
      case 'CANCELLED':
        throw error;
      default:
        // NATS or the adapter away: the work message is redelivered and the run re-joins the call by its key.
        if (error.retryable) throw error;
        // Refused before anything was recorded (its token, its request): the step failed, nothing ran.
        return { kind: 'outcome', outcome: { status: 'failed', failure: failureOfError(error) } };
    }
  }
}

/** The step invoker on FlowRunner's NATS connection. */
export function clientStepInvoker(messaging: Messaging, tokens: StepTokens): StepInvoker {
  // A client is only a view of the connection for one workspace: made per call, nothing to keep.
  const withClient = async <T>(scope: Scope, work: (client: ToolplaneClient) => Promise<T>, recoveryGraceMs?: number): Promise<T> => {
    const client = await createToolplaneClient({
      messaging,
      scope,
      contextToken: () => Promise.reject(new Error('every step request names its own token')),
      ...(recoveryGraceMs === undefined ? {} : { recoveryGraceMs }),
    });
    try {
      return await work(client);
    } finally {
      await client.close();
    }
  };
  return {
    invoke: (call) => withClient(call.scope, (client) => invokeWith(client, tokens, call), call.recoveryGraceMs),
    lookup: (scope, subject, idempotencyKey, options) =>
      withClient(scope, async (client) =>
        client.lookup(idempotencyKey, { contextToken: await tokens.issue(subject, options.timeoutMs), timeoutMs: options.timeoutMs, ...(options.signal === undefined ? {} : { signal: options.signal }) }),
      ),
  };
}
