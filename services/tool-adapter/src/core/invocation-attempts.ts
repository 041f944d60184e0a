import {
  canonicalJson,
  isTerminalInvocationState,
  sha256Hex,
  type InvocationCompletion,
  type InvocationResult,
  type IsoDateTime,
  type JsonObject,
  type Scope,
  type ToolFailure,
  type ToolInvocation,
  type Uuid,
} from '@toolplane/contracts';
import { appendEvent, type PipelineEvent } from './invocation-event-log.js';
import { invocationResultOf, requestHashOf, terminalEventsOf, type PipelineContext, type PipelineState } from './invocation-pipeline.js';
import { unsignedReceiptOf } from './receipts.js';

// Idempotency, attempts and crash semantics. One ToolInvocation document exists per (tenant, workspace,
// idempotencyKey): a repeated key with the same request hash gets the stored receipt (or joins the call in
// flight), a different hash is a CONFLICT. A call found Executing with its handler gone was interrupted: a READ or
// a provider-deduplicated write starts a new physical attempt (new InvocationId, same ToolCallId, attempt + 1),
// anything else ends Uncertain and waits for an operator's reconcile.

/** What to do with a request whose idempotency key may already be in use. */
export type IdempotencyDecision =
  /** No invocation holds the key: record a new one. */
  | { readonly kind: 'create' }
  /** The key belongs to a call with other arguments or another tool version. */
  | { readonly kind: 'conflict'; readonly failure: ToolFailure }
  /** The call ended: answer with its stored result and receipt; nothing runs again. */
  | { readonly kind: 'replay'; readonly result: InvocationResult }
  /** The call is in flight (its handler is alive, or it waits for an approval): await its terminal result. */
  | { readonly kind: 'join' }
  /** The call had not started executing and its handler is gone: run the pipeline again (resumePipeline). */
  | { readonly kind: 'resume' }
  /** The call was executing and its handler is gone, and repeating it is safe: start a new attempt. */
  | { readonly kind: 'new_attempt' }
  /** The call was executing and its handler is gone, and repeating it is not safe: it ends Uncertain. */
  | { readonly kind: 'uncertain' };

/** The parts of an incoming request that decide whether it repeats a stored one. */
export interface IncomingRequest {
  readonly scope: Scope;
  readonly toolId: string;
  /** The version the request names, if any. */
  readonly requestedToolVersion: string | undefined;
  readonly arguments: JsonObject;
  /** The completion it asks for, if it is one. */
  readonly completion?: InvocationCompletion | undefined;
}

/** Whether an interrupted execution may be repeated: nothing to repeat for a READ, the provider dedupes otherwise. */
export function isSafeToRepeat(invocation: Pick<ToolInvocation, 'effectiveClass' | 'declaredClass' | 'idempotency'>): boolean {
  const effectiveClass = invocation.effectiveClass ?? invocation.declaredClass;
  return effectiveClass === 'READ' || invocation.idempotency === 'SUPPORTED_WITH_KEY' || invocation.idempotency === 'NATURAL';
}

/**
 * Decides what a request carrying an idempotency key leads to, given the invocation stored under that key (if any)
 * and whether the handler of that invocation may still be alive (its processing lease has not expired). The
 * incoming request hash is computed for the stored invocation's resolved version when the request names none, so a
 * redelivery after the active version changed is still recognised as the same call.
 */
export function decideIdempotency(stored: ToolInvocation | undefined, incoming: IncomingRequest, handlerAlive: boolean): IdempotencyDecision {
  if (stored === undefined) return { kind: 'create' };
  const hash = requestHashOf(incoming.scope, incoming, incoming.requestedToolVersion ?? stored.toolVersion ?? stored.requestedToolVersion);
  if (hash !== stored.requestHash || incoming.toolId !== stored.toolId) {
    return {
      kind: 'conflict',
      failure: { code: 'CONFLICT', message: `the idempotency key ${stored.idempotencyKey} was used for a different request (other arguments or tool version)`.slice(0, 4096), retryable: false },
    };
  }
  if (isTerminalInvocationState(stored.state)) return stored.receipt === undefined ? { kind: 'resume' } : { kind: 'replay', result: invocationResultOf(stored) };
  if (stored.state === 'AwaitingApproval' || handlerAlive) return { kind: 'join' };
  if (stored.state !== 'Executing') return { kind: 'resume' };
  return isSafeToRepeat(stored) ? { kind: 'new_attempt' } : { kind: 'uncertain' };
}

/**
 * Starts the next physical attempt of an interrupted call that is safe to repeat: the interrupted attempt is closed
 * with ToolCallFailed (in its own sequence), and the new one (new InvocationId, same ToolCallId, attempt + 1) starts
 * from tool resolution, so every stage governs it afresh. An approval granted to the call carries over (it is bound
 * to the unchanged request hash and version). The I/O layer replaces the stored document by compare-and-set.
 */
export function startNextAttempt(
  interrupted: ToolInvocation,
  invocationId: Uuid,
  ctx: Pick<PipelineContext, 'now'>,
): { readonly closing: readonly PipelineEvent[]; readonly state: PipelineState; readonly events: readonly PipelineEvent[]; readonly persist: 'required' } {
  if (interrupted.state !== 'Executing') throw new RangeError(`only an interrupted execution starts a new attempt, not a ${interrupted.state} invocation`);
  const now = ctx.now;
  const duration = interrupted.startedAt === undefined ? 0 : Math.max(0, Date.parse(now) - Date.parse(interrupted.startedAt));
  const readOnly = (interrupted.effectiveClass ?? interrupted.declaredClass) === 'READ';
  const failure: ToolFailure = readOnly
    ? { code: 'TEMPORARY_UNAVAILABLE', message: `attempt ${interrupted.attempt} was interrupted (adapter restart); it is retried as attempt ${interrupted.attempt + 1}`, retryable: true }
    : {
        code: 'UNKNOWN_OUTCOME',
        message: `attempt ${interrupted.attempt} was interrupted (adapter restart); the provider deduplicates by the idempotency key, so it is retried as attempt ${interrupted.attempt + 1}`,
        retryable: true,
      };
  const closing = appendEvent(interrupted, 'ToolCallFailed', { failure, durationMs: duration }, now).event;
  const next: ToolInvocation = {
    invocationId,
    tenant: interrupted.tenant,
    workspace: interrupted.workspace,
    toolCallId: interrupted.toolCallId,
    attempt: interrupted.attempt + 1,
    idempotencyKey: interrupted.idempotencyKey,
    idempotencyKeyDerived: interrupted.idempotencyKeyDerived,
    requestHash: interrupted.requestHash,
    principal: interrupted.principal,
    ...(interrupted.agentId === undefined ? {} : { agentId: interrupted.agentId }),
    ...(interrupted.agentRevision === undefined ? {} : { agentRevision: interrupted.agentRevision }),
    toolId: interrupted.toolId,
    ...(interrupted.toolVersion === undefined ? {} : { toolVersion: interrupted.toolVersion }),
    ...(interrupted.requestedToolVersion === undefined ? {} : { requestedToolVersion: interrupted.requestedToolVersion }),
    correlationId: interrupted.correlationId,
    ...(interrupted.causationId === undefined ? {} : { causationId: interrupted.causationId }),
    ...(interrupted.flowRunId === undefined ? {} : { flowRunId: interrupted.flowRunId }),
    ...(interrupted.workItemId === undefined ? {} : { workItemId: interrupted.workItemId }),
    ...(interrupted.replyInbox === undefined ? {} : { replyInbox: interrupted.replyInbox }),
    argumentsJson: interrupted.argumentsJson,
    ...(interrupted.completion === undefined ? {} : { completion: interrupted.completion }),
    ...(interrupted.approvalId === undefined ? {} : { approvalId: interrupted.approvalId }),
    secretLeaseIds: [],
    state: 'Received',
    eventSequence: 0,
    receivedAt: now,
    deadline: interrupted.deadline,
    updatedAt: now,
    version: interrupted.version,
  };
  const { invocation, event } = appendEvent(
    next,
    'InvocationReceived',
    {
      requestHash: next.requestHash,
      idempotencyKey: next.idempotencyKey,
      idempotencyKeyDerived: next.idempotencyKeyDerived,
      ...(next.requestedToolVersion === undefined ? {} : { requestedToolVersion: next.requestedToolVersion }),
      deadline: next.deadline,
      ...(next.completion === undefined ? {} : { operation: 'completion' as const }),
    },
    now,
  );
  return { closing: [closing], state: { step: 'TOOL_RESOLUTION', invocation }, events: [event], persist: 'required' };
}

/**
 * Ends an interrupted call that is not safe to repeat: the pipeline continues at FINISH with an Uncertain ending
 * (UNKNOWN_OUTCOME, ToolEffectUncertain without a duration). It is never retried automatically.
 */
export function markInterruptedUncertain(interrupted: ToolInvocation): PipelineState {
  if (interrupted.state !== 'Executing') throw new RangeError(`only an interrupted execution ends Uncertain, not a ${interrupted.state} invocation`);
  const failure: ToolFailure = {
    code: 'UNKNOWN_OUTCOME',
    message: 'the adapter stopped while the call was executing; whether it took effect is unknown: reconcile before retrying',
    retryable: false,
  };
  return { step: 'FINISH', invocation: interrupted, ending: { state: 'Uncertain', failure, interrupted: true } };
}

/** An operator's finding about an Uncertain call. */
export interface Reconciliation {
  /** observed: the effect happened; failed: it did not. */
  readonly outcome: 'observed' | 'failed';
  readonly operator: string;
  readonly reason: string;
}

/** The settled invocation and its event, or why it cannot be reconciled. */
export type ReconcileResult =
  | { readonly accepted: true; readonly invocation: ToolInvocation; readonly events: readonly PipelineEvent[]; readonly persist: 'required' }
  | { readonly accepted: false; readonly failure: ToolFailure };

/**
 * Settles an Uncertain invocation as Observed or Failed, recording the operator and reason, re-signing the receipt
 * and emitting ToolCallCompleted or ToolCallFailed. An Observed reconciliation has no provider result: its result
 * is a note naming the operator and reason, whose hash the receipt commits to.
 */
export function reconcileInvocation(invocation: ToolInvocation, reconciliation: Reconciliation, ctx: PipelineContext): ReconcileResult {
  if (invocation.state !== 'Uncertain') {
    return { accepted: false, failure: { code: 'CONFLICT', message: `only an Uncertain invocation can be reconciled; this one is ${invocation.state}`, retryable: false } };
  }
  const reason = reconciliation.reason.trim().slice(0, 1024);
  if (reason === '') return { accepted: false, failure: { code: 'INVALID_ARGUMENT', message: 'a reconciliation needs a reason', retryable: false } };
  const now: IsoDateTime = ctx.now;
  const record = { outcome: reconciliation.outcome, by: reconciliation.operator, reason, at: now };
  const { receipt: _receipt, failure: previous, ...rest } = invocation;
  let settled: ToolInvocation;
  if (reconciliation.outcome === 'observed') {
    // Stored as the sanitizer stores results: one text block.
    const resultJson = canonicalJson({ content: [{ type: 'text', text: `The effect was confirmed on reconciliation by ${reconciliation.operator}: ${reason}` }], truncated: false });
    settled = { ...rest, state: 'Observed', resultJson, resultHash: sha256Hex(resultJson), reconciliation: record, updatedAt: now };
  } else {
    const failure: ToolFailure = {
      code: previous?.code ?? 'UNKNOWN_OUTCOME',
      message: `reconciled as not having taken effect by ${reconciliation.operator}: ${reason}`.slice(0, 4096),
      retryable: false,
      ...(previous?.providerErrorType === undefined ? {} : { providerErrorType: previous.providerErrorType }),
    };
    settled = { ...rest, state: 'Failed', failure, reconciliation: record, updatedAt: now };
  }
  const numbered = { ...settled, eventSequence: settled.eventSequence + 1 };
  const signed: ToolInvocation = { ...numbered, receipt: ctx.signReceipt(unsignedReceiptOf(numbered)) };
  return { accepted: true, invocation: signed, events: terminalEventsOf(signed), persist: 'required' };
}
