import {
  MAX_INVOCATION_TIMEOUT_MS,
  compareSideEffectClasses,
  deriveIdempotencyKey,
  invocationStatusByState,
  isRetryable,
  isTerminalInvocationState,
  requestHash,
  requestHashAndArgumentsJson,
  sha256Hex,
  type InvocationRequest,
  type InvocationResult,
  type FlowRunReceipt,
  type IsoDateTime,
  type PipelineStage,
  type PolicyDecision,
  type SandboxKind,
  type SandboxLeaseInfo,
  type Scope,
  type TerminalInvocationState,
  type ToolDescriptor,
  type ToolFailure,
  type ToolInvocation,
  type Uuid,
} from '@toolplane/contracts';
import type { ArgumentCheck, OutputValidator } from './argument-validation.js';
import { gatedCompletionFailure } from './completion.js';
import { cancelledByRelease, inactiveMessage, receivedBeforeRelease, releaseRetirement } from './descriptor-inactivity.js';
import { derivedToolCallId } from './deterministic-ids.js';
import { executionEnding, type ExecutionResult } from './execution-outcome.js';
import { appendEvent, invocationEvent, type PipelineEvent } from './invocation-event-log.js';
import type { CallerIdentity } from './policy-evaluator.js';
import { outputContractFailure, outputSchemaOf } from './output-contract.js';
import { UNRESOLVED_TOOL_VERSION, unsignedReceiptOf, type ReceiptSigner } from './receipts.js';
import { sanitizeFailure, sanitizeResult, storedResultContent, type SanitizedResult } from './result-sanitizer.js';

// The governed pipeline as a pure state machine over the ToolInvocation document. The I/O layer performs each
// stage (resolve the descriptor, validate, evaluate policy, ask for approval, lease credentials and a sandbox,
// persist, execute, …) and feeds its outcome to `advancePipeline`, which accepts only the outcome of the one stage
// that comes next, so no stage can be skipped or reordered. Each accepted outcome yields the next state, the events
// to publish (numbered in the invocation's own sequence) and whether the document must be persisted first.

/** The stages of the pipeline, in their fixed order (a denial jumps to FINISH; DONE ends it). */
export const PIPELINE_STEPS = [
  'TOOL_RESOLUTION',
  'SCHEMA_VALIDATION',
  'AGENT_PERMISSION',
  'TENANT_POLICY',
  'SIDE_EFFECT_CLASSIFICATION',
  'APPROVAL',
  'APPROVAL_DECISION',
  'CREDENTIAL_BROKER',
  'SANDBOX',
  'START',
  'EXECUTE',
  'SANITIZE',
  'FINISH',
  'PUBLISH_TERMINAL',
  'REPLY',
  'DONE',
] as const;

/** One of {@link PIPELINE_STEPS}: the stage whose outcome the pipeline waits for. */
export type PipelineStep = (typeof PIPELINE_STEPS)[number];

/** The outcome of the stage the pipeline waits for, reported by the I/O layer. */
export type StageOutcome =
  /** The descriptor of the requested tool version (the active one when none was named), or undefined if none. */
  | { readonly step: 'TOOL_RESOLUTION'; readonly descriptor: ToolDescriptor | undefined }
  | { readonly step: 'SCHEMA_VALIDATION'; readonly check: ArgumentCheck }
  /** The same policy decision is reported to the three policy stages, which each act on their part of it. */
  | { readonly step: 'AGENT_PERMISSION'; readonly decision: PolicyDecision }
  | { readonly step: 'TENANT_POLICY'; readonly decision: PolicyDecision }
  | { readonly step: 'SIDE_EFFECT_CLASSIFICATION'; readonly decision: PolicyDecision }
  /**
   * No approval needed (only when the decision is allow), a new approval requested, or one granted to an earlier
   * attempt. `current`: the descriptor as the cache has it now (a release may have retired it since resolution).
   */
  | { readonly step: 'APPROVAL'; readonly result: 'not_required'; readonly current?: ToolDescriptor | undefined }
  | { readonly step: 'APPROVAL'; readonly result: 'requested' | 'previously_granted'; readonly approvalId: Uuid; readonly current?: ToolDescriptor | undefined }
  | {
      readonly step: 'APPROVAL_DECISION';
      readonly result: 'granted' | 'rejected' | 'expired' | 'voided';
      readonly approvalId: Uuid;
      /** What the approval is bound to; a decision bound to anything else is not this invocation's. */
      readonly requestHash: string;
      readonly toolVersion: string;
      readonly decidedBy?: string;
      readonly reason?: string;
    }
  | { readonly step: 'CREDENTIAL_BROKER'; readonly result: 'leased'; readonly secretLeaseIds: readonly Uuid[] }
  | { readonly step: 'CREDENTIAL_BROKER'; readonly result: 'denied'; readonly failure: ToolFailure }
  | {
      readonly step: 'SANDBOX';
      readonly result: 'leased';
      readonly sandboxLeaseId: Uuid;
      readonly expiresAt: IsoDateTime;
      /** Which sandbox the call's session runs in (absent: a Process lease as before sandbox profiles). */
      readonly sandbox?: { readonly kind: SandboxKind; readonly info: SandboxLeaseInfo } | undefined;
    }
  | { readonly step: 'SANDBOX'; readonly result: 'not_needed' }
  | { readonly step: 'SANDBOX'; readonly result: 'denied'; readonly failure: ToolFailure }
  /** The started fact: persisted (and ToolCallStarted published) before the provider is called; `current` as for APPROVAL. */
  | { readonly step: 'START'; readonly current?: ToolDescriptor | undefined }
  | { readonly step: 'EXECUTE'; readonly execution: ExecutionResult }
  /**
   * The values of the call's leased secrets, to remove from its result (never stored), and the validator of output
   * schemas: required when the tool declares one, so no result skips its check.
   */
  | { readonly step: 'SANITIZE'; readonly secrets: readonly string[]; readonly outputValidator?: OutputValidator | undefined }
  /** Persist the terminal state and its receipt (the driver has released the sandbox). */
  | { readonly step: 'FINISH' }
  | { readonly step: 'PUBLISH_TERMINAL' }
  | { readonly step: 'REPLY' };

/** How an invocation is going to end, decided before FINISH records it. */
export interface PendingEnding {
  readonly state: TerminalInvocationState;
  readonly failure?: ToolFailure;
  readonly deniedStage?: PipelineStage;
  readonly result?: SanitizedResult;
  readonly interrupted?: boolean;
  /** The run of a flow-backed call, as FlowRunner named it. */
  readonly flowRun?: FlowRunReceipt;
}

/** Where an invocation is in the pipeline: the document as it will be persisted, plus in-memory stage results. */
export interface PipelineState {
  readonly step: PipelineStep;
  readonly invocation: ToolInvocation;
  /** The resolved descriptor (from TOOL_RESOLUTION on; after a resume, as the I/O layer reloaded it). */
  readonly descriptor?: ToolDescriptor | undefined;
  /** The policy decision (from AGENT_PERMISSION to APPROVAL). */
  readonly decision?: PolicyDecision | undefined;
  /** How the provider call ended (between EXECUTE and SANITIZE); raw output, never persisted. */
  readonly execution?: ExecutionResult | undefined;
  readonly ending?: PendingEnding | undefined;
}

/** The injected clock and signer. */
export interface PipelineContext {
  readonly now: IsoDateTime;
  readonly signReceipt: ReceiptSigner;
  /** The result size bound; MAX_RESULT_BYTES by default. */
  readonly maxResultBytes?: number;
}

/**
 * What an accepted outcome leads to. The I/O layer persists the document when `persist` is `required` before doing
 * anything else (compare-and-set on its version), and publishes `events` only once a document carrying their
 * sequence numbers is persisted: a crash must never leave a published event whose number could be reused.
 */
export type PipelineTransition =
  | {
      readonly accepted: true;
      readonly state: PipelineState;
      readonly events: readonly PipelineEvent[];
      /** `required`: persist before continuing; `optional`: the document changed; `none`: it did not. */
      readonly persist: 'required' | 'optional' | 'none';
    }
  | { readonly accepted: false; readonly expected: PipelineStep; readonly problem: string };

const preExecutionStage: Partial<Record<PipelineStep, PipelineStage>> = {
  TOOL_RESOLUTION: 'TOOL_RESOLUTION',
  SCHEMA_VALIDATION: 'SCHEMA_VALIDATION',
  AGENT_PERMISSION: 'AGENT_PERMISSION',
  TENANT_POLICY: 'TENANT_POLICY',
  SIDE_EFFECT_CLASSIFICATION: 'SIDE_EFFECT_CLASSIFICATION',
  APPROVAL: 'APPROVAL',
  APPROVAL_DECISION: 'APPROVAL',
  CREDENTIAL_BROKER: 'CREDENTIAL_BROKER',
  SANDBOX: 'SANDBOX',
  // The deadline is checked once more before the started fact: a call that can no longer run is denied, not started.
  START: 'SANDBOX',
};

function reject(state: PipelineState, problem: string): PipelineTransition {
  return { accepted: false, expected: state.step, problem };
}

function accept(state: PipelineState, previous: PipelineState, events: readonly PipelineEvent[] = [], required = false): PipelineTransition {
  const persist = required ? 'required' : state.invocation !== previous.invocation ? 'optional' : 'none';
  return { accepted: true, state, events, persist };
}

function deny(state: PipelineState, stage: PipelineStage, failure: ToolFailure): PipelineTransition {
  return accept({ ...state, step: 'FINISH', ending: { state: 'Denied', failure, deniedStage: stage }, decision: undefined }, state);
}

/**
 * Ends an accepted call that is not executing yet whose descriptor a release retired with CANCEL_PENDING (Cancelled:
 * nothing was started); undefined when the call goes on (FINISH, or not retired by a release).
 */
function cancelIfReleaseEnded(state: PipelineState, current: ToolDescriptor | undefined): PipelineTransition | undefined {
  if (current === undefined || !cancelledByRelease(current) || current.toolId !== state.invocation.toolId || current.toolVersion !== state.invocation.toolVersion) return undefined;
  const failure: ToolFailure = {
    code: 'CANCELLED',
    message: `${current.toolId}@${current.toolVersion} was retired before the call started (${releaseRetirement(current) ?? 'retired'}; in-flight policy CANCEL_PENDING)`,
    retryable: false,
  };
  return accept({ ...state, step: 'FINISH', ending: { state: 'Cancelled', failure }, decision: undefined }, state);
}

function pastDeadline(invocation: ToolInvocation, now: IsoDateTime): boolean {
  return Date.parse(now) > Date.parse(invocation.deadline);
}

/**
 * A granted call resumes with the execution budget it was received with (its deadline − receivedAt), counted from
 * the decision: the wait for a human is not part of the budget, however long it took.
 */
function withFreshBudget(invocation: ToolInvocation, now: IsoDateTime): ToolInvocation {
  const budgetMs = Date.parse(invocation.deadline) - Date.parse(invocation.receivedAt);
  return { ...invocation, deadline: new Date(Date.parse(now) + budgetMs).toISOString(), updatedAt: now };
}

/** Moves on to `next`, unless the deadline has passed before the call started: then the call is denied. */
function proceed(previous: PipelineState, next: PipelineState, ctx: PipelineContext, events: readonly PipelineEvent[] = [], required = false): PipelineTransition {
  const stage = preExecutionStage[previous.step];
  if (stage !== undefined && pastDeadline(next.invocation, ctx.now)) {
    return deny(previous, stage, { code: 'TIMEOUT', message: 'the deadline passed before the call could start', retryable: isRetryable('TIMEOUT') });
  }
  return accept(next, previous, events, required);
}

function sameDecision(state: PipelineState, decision: PolicyDecision): string | undefined {
  const { invocation } = state;
  if (decision.invocationId !== invocation.invocationId || decision.requestHash !== invocation.requestHash || decision.toolId !== invocation.toolId) {
    return 'the policy decision was made for another invocation';
  }
  if (decision.toolVersion !== invocation.toolVersion) return 'the policy decision was made for another tool version';
  if (state.decision !== undefined && state.decision.decisionId !== decision.decisionId) return 'each policy stage must see the same decision';
  return undefined;
}

/** The failure a policy denial ends with. */
function policyFailure(decision: PolicyDecision): ToolFailure {
  return decision.failure ?? { code: 'AUTHORIZATION_DENIED', message: 'denied by policy', retryable: false };
}

function approvalSummary(invocation: ToolInvocation, decision: PolicyDecision): string {
  const agent = invocation.agentId === undefined ? '' : ` by agent ${invocation.agentId}`;
  const text = `${invocation.toolId}@${decision.toolVersion}: a ${decision.effectiveClass} call (${decision.riskClass} risk) for ${invocation.principal}${agent}; request ${invocation.requestHash.slice(0, 16)}`;
  return text.slice(0, 2000);
}

function durationMs(invocation: ToolInvocation): number {
  if (invocation.startedAt === undefined || invocation.endedAt === undefined) return 0;
  return Math.max(0, Date.parse(invocation.endedAt) - Date.parse(invocation.startedAt));
}

/**
 * The events that record how an invocation ended, rebuilt from the terminal document alone (ids, numbers, times and
 * data all follow from it): SandboxReleased when a sandbox was leased, then the terminal event. After a reconcile,
 * only the event of the reconciliation.
 */
export function terminalEventsOf(invocation: ToolInvocation): PipelineEvent[] {
  const { state } = invocation;
  if (!isTerminalInvocationState(state) || invocation.endedAt === undefined) throw new RangeError(`an invocation in state ${state} has not ended`);
  const last = invocation.eventSequence;
  const at = invocation.reconciliation?.at ?? invocation.endedAt;
  const failure = invocation.failure ?? { code: 'INTERNAL' as const, message: 'no failure recorded', retryable: false };
  const duration = durationMs(invocation);
  let terminal: PipelineEvent;
  switch (state) {
    case 'Observed':
      terminal = invocationEvent(
        invocation,
        last,
        'ToolCallCompleted',
        { resultHash: invocation.resultHash ?? sha256Hex(''), truncated: invocation.resultJson === undefined ? false : storedResultContent(invocation.resultJson).truncated, durationMs: duration },
        at,
      );
      break;
    case 'Failed':
      terminal = invocationEvent(invocation, last, 'ToolCallFailed', { failure, durationMs: duration }, at);
      break;
    case 'Cancelled':
      terminal = invocationEvent(invocation, last, 'ToolCallCancelled', { failure, durationMs: duration }, at);
      break;
    case 'Uncertain':
      terminal = invocationEvent(invocation, last, 'ToolEffectUncertain', { failure, ...(invocation.interrupted === true ? {} : { durationMs: duration }) }, at);
      break;
    case 'Denied':
      terminal = invocationEvent(
        invocation,
        last,
        'InvocationDenied',
        {
          stage: invocation.deniedStage ?? 'TOOL_RESOLUTION',
          failure,
          ...(invocation.policyDecisionId === undefined ? {} : { policyDecisionId: invocation.policyDecisionId }),
          ...(invocation.approvalId === undefined ? {} : { approvalId: invocation.approvalId }),
        },
        at,
      );
      break;
  }
  if (invocation.reconciliation !== undefined || invocation.sandboxLeaseId === undefined) return [terminal];
  // A leased sandbox (None needs no lease) is released before the terminal fact.
  const sandboxKind = invocation.sandbox?.sandboxKind ?? 'Process';
  const released = invocationEvent(invocation, last - 1, 'SandboxReleased', { sandboxLeaseId: invocation.sandboxLeaseId, sandboxKind }, at);
  return [released, terminal];
}

/** The number of events {@link terminalEventsOf} yields for a document about to end. */
function terminalEventCount(invocation: ToolInvocation): number {
  return invocation.reconciliation === undefined && invocation.sandboxLeaseId !== undefined ? 2 : 1;
}

/** Records the pending ending: terminal state, result or failure, signed receipt, terminal events. */
function finish(state: PipelineState, ctx: PipelineContext): PipelineTransition {
  const ending = state.ending;
  if (ending === undefined) return reject(state, 'nothing decided how the invocation ends');
  const { receipt: _receipt, ...open } = state.invocation;
  const ended: ToolInvocation = {
    ...open,
    state: ending.state,
    endedAt: ctx.now,
    updatedAt: ctx.now,
    ...(ending.failure === undefined ? {} : { failure: ending.failure }),
    ...(ending.result === undefined ? {} : { resultJson: ending.result.resultJson, resultHash: ending.result.resultHash }),
    ...(ending.deniedStage === undefined ? {} : { deniedStage: ending.deniedStage }),
    ...(ending.interrupted === true ? { interrupted: true } : {}),
    ...(ending.flowRun === undefined ? {} : { flowRun: ending.flowRun }),
  };
  const numbered = { ...ended, eventSequence: ended.eventSequence + terminalEventCount(ended) };
  const signed: ToolInvocation = { ...numbered, receipt: ctx.signReceipt(unsignedReceiptOf(numbered)) };
  return accept({ step: 'PUBLISH_TERMINAL', invocation: signed, descriptor: state.descriptor }, state, terminalEventsOf(signed), true);
}

/**
 * Advances the pipeline by the outcome of the stage it waits for. An outcome of any other stage, or one that does
 * not fit the invocation (a decision for another request, an approval bound to another hash, a skipped approval),
 * is not accepted and changes nothing.
 */
export function advancePipeline(state: PipelineState, outcome: StageOutcome, ctx: PipelineContext): PipelineTransition {
  if (outcome.step !== state.step) return reject(state, `the pipeline waits for ${state.step}, not ${outcome.step}`);
  const { invocation } = state;
  const now = ctx.now;
  switch (outcome.step) {
    case 'TOOL_RESOLUTION': {
      const descriptor = outcome.descriptor;
      const version = invocation.toolVersion ?? invocation.requestedToolVersion;
      if (descriptor === undefined) {
        return deny(state, 'TOOL_RESOLUTION', { code: 'NOT_FOUND', message: `no tool ${invocation.toolId}${version === undefined ? '' : `@${version}`} in this workspace`, retryable: false });
      }
      if (descriptor.toolId !== invocation.toolId || descriptor.tenant !== invocation.tenant || descriptor.workspace !== invocation.workspace) {
        return reject(state, 'the descriptor is for another tool or scope');
      }
      if (invocation.toolVersion === undefined) return reject(state, 'the invocation was received for a tool that did not resolve; report undefined');
      if (descriptor.toolVersion !== invocation.toolVersion) return reject(state, 'the descriptor is not the version the request hash was computed for');
      if (!descriptor.active) {
        // Received before a release retired the tool (and resumed from its record since): the in-flight policy decides.
        if (!receivedBeforeRelease(descriptor, invocation.receivedAt)) return deny(state, 'TOOL_RESOLUTION', { code: 'CONFLICT', message: inactiveMessage(descriptor), retryable: false });
        const cancelled = cancelIfReleaseEnded(state, descriptor);
        if (cancelled !== undefined) return cancelled;
      }
      if (!descriptor.healthy) {
        return deny(state, 'TOOL_RESOLUTION', { code: 'TEMPORARY_UNAVAILABLE', message: `${descriptor.toolId}@${descriptor.toolVersion} is not healthy`, retryable: true });
      }
      const resolved: ToolInvocation = {
        ...invocation,
        declaredClass: descriptor.sideEffectClass,
        riskClass: descriptor.riskClass,
        idempotency: descriptor.idempotency,
        ...(descriptor.mcpServerId === undefined ? {} : { mcpServerId: descriptor.mcpServerId }),
        updatedAt: now,
      };
      return proceed(state, { ...state, step: 'SCHEMA_VALIDATION', invocation: resolved, descriptor }, ctx);
    }
    case 'SCHEMA_VALIDATION': {
      if (!outcome.check.valid) return deny(state, 'SCHEMA_VALIDATION', outcome.check.failure);
      return proceed(state, { ...state, step: 'AGENT_PERMISSION', invocation: { ...invocation, state: 'Validated', updatedAt: now } }, ctx);
    }
    case 'AGENT_PERMISSION': {
      const problem = sameDecision(state, outcome.decision);
      if (problem !== undefined) return reject(state, problem);
      const decision = outcome.decision;
      if (decision.effect === 'deny' && decision.deniedAt !== 'TENANT_POLICY' && decision.deniedAt !== 'SIDE_EFFECT_CLASSIFICATION') {
        return deny(state, 'AGENT_PERMISSION', policyFailure(decision));
      }
      return proceed(state, { ...state, step: 'TENANT_POLICY', decision }, ctx);
    }
    case 'TENANT_POLICY': {
      const problem = sameDecision(state, outcome.decision);
      if (problem !== undefined) return reject(state, problem);
      if (outcome.decision.effect === 'deny' && outcome.decision.deniedAt === 'TENANT_POLICY') return deny(state, 'TENANT_POLICY', policyFailure(outcome.decision));
      return proceed(state, { ...state, step: 'SIDE_EFFECT_CLASSIFICATION' }, ctx);
    }
    case 'SIDE_EFFECT_CLASSIFICATION': {
      const problem = sameDecision(state, outcome.decision);
      if (problem !== undefined) return reject(state, problem);
      const decision = outcome.decision;
      if (decision.effect === 'deny') return deny(state, 'SIDE_EFFECT_CLASSIFICATION', policyFailure(decision));
      const declared = state.descriptor?.sideEffectClass;
      if (declared === undefined || decision.declaredClass !== declared) return reject(state, 'the decision classified another declared class');
      // The invariant the whole plane rests on: the effective class is never lower than the declared one.
      if (compareSideEffectClasses(decision.effectiveClass, declared) < 0) return reject(state, 'the effective class may be raised, never lowered');
      const authorized: ToolInvocation = {
        ...invocation,
        state: 'Authorized',
        declaredClass: declared,
        effectiveClass: decision.effectiveClass,
        riskClass: decision.riskClass,
        policyDecisionId: decision.decisionId,
        updatedAt: now,
      };
      return proceed(state, { ...state, step: 'APPROVAL', invocation: authorized }, ctx);
    }
    case 'APPROVAL': {
      const decision = state.decision;
      if (decision === undefined) return reject(state, 'no policy decision');
      const cancelled = cancelIfReleaseEnded(state, outcome.current);
      if (cancelled !== undefined) return cancelled;
      // A completion is always a READ that no human is asked about: where the policy would ask one, it is refused.
      if (invocation.completion !== undefined && decision.effect === 'approval_required') return deny(state, 'APPROVAL', gatedCompletionFailure(invocation.toolId));
      if (outcome.result === 'not_required') {
        if (decision.effect !== 'allow') return reject(state, 'the policy decision requires an approval; it cannot be skipped');
        return proceed(state, { ...state, step: 'CREDENTIAL_BROKER', decision: undefined }, ctx);
      }
      if (decision.effect !== 'approval_required') return reject(state, 'the policy decision requires no approval');
      if (outcome.result === 'previously_granted') {
        if (invocation.approvalId === undefined || invocation.approvalId !== outcome.approvalId) return reject(state, 'only an approval granted to an earlier attempt of this call carries over');
        return proceed(state, { ...state, step: 'CREDENTIAL_BROKER', decision: undefined }, ctx);
      }
      // The approval lives for the policy's TTL, not for the caller's wait: the call waits parked (durably, past its
      // deadline) and a grant gives it a fresh execution budget (see APPROVAL_DECISION).
      const ttlMs = decision.approval?.ttlMs ?? 3_600_000;
      const expiresAt = new Date(Date.parse(now) + ttlMs).toISOString();
      const parked: ToolInvocation = { ...invocation, state: 'AwaitingApproval', approvalId: outcome.approvalId, updatedAt: now };
      const { invocation: numbered, event } = appendEvent(
        parked,
        'ApprovalRequested',
        {
          approvalId: outcome.approvalId,
          requestHash: invocation.requestHash,
          sideEffectClass: decision.effectiveClass,
          riskClass: decision.riskClass,
          summary: approvalSummary(invocation, decision),
          approvers: decision.approval?.approvers ?? { roles: ['approver'], principals: [] },
          expiresAt,
        },
        now,
      );
      return proceed(state, { ...state, step: 'APPROVAL_DECISION', invocation: numbered, decision: undefined }, ctx, [event], true);
    }
    case 'APPROVAL_DECISION': {
      if (invocation.approvalId !== outcome.approvalId) return reject(state, 'the decision is about another approval');
      // D21: an approval is bound to the request hash and the exact tool version.
      if (outcome.requestHash !== invocation.requestHash || outcome.toolVersion !== invocation.toolVersion) return reject(state, 'the approval is bound to another request or tool version');
      const by = outcome.decidedBy === undefined ? '' : ` by ${outcome.decidedBy}`;
      const why = outcome.reason === undefined ? '' : `: ${outcome.reason}`;
      switch (outcome.result) {
        case 'rejected':
          return deny(state, 'APPROVAL', { code: 'APPROVAL_REJECTED', message: `the approval was rejected${by}${why}`.slice(0, 4096), retryable: false });
        case 'expired':
          return deny(state, 'APPROVAL', { code: 'APPROVAL_EXPIRED', message: 'the approval expired undecided', retryable: false });
        case 'voided':
          return deny(state, 'APPROVAL', { code: 'CONFLICT', message: `the approval is void: the tool version was suspended or retired${why}`.slice(0, 4096), retryable: false });
        case 'granted':
          if (state.descriptor === undefined) {
            return deny(state, 'APPROVAL', { code: 'CONFLICT', message: `${invocation.toolId}@${invocation.toolVersion ?? '?'} is no longer available`, retryable: false });
          }
          return proceed(state, { ...state, step: 'CREDENTIAL_BROKER', invocation: withFreshBudget(invocation, now) }, ctx);
      }
      break;
    }
    case 'CREDENTIAL_BROKER': {
      if (outcome.result === 'denied') return deny(state, 'CREDENTIAL_BROKER', outcome.failure);
      // One lease per connection: the tool's own dependencies, plus those its server's settings name.
      const needed = new Set(state.descriptor?.secretDependencies ?? []).size;
      if (outcome.secretLeaseIds.length < needed) return reject(state, `the tool needs at least ${needed} credential lease(s), got ${outcome.secretLeaseIds.length}`);
      if (new Set(outcome.secretLeaseIds).size !== outcome.secretLeaseIds.length) return reject(state, 'each connection is leased once');
      const brokered = { ...invocation, secretLeaseIds: [...outcome.secretLeaseIds], updatedAt: now };
      return proceed(state, { ...state, step: 'SANDBOX', invocation: brokered }, ctx);
    }
    case 'SANDBOX': {
      if (outcome.result === 'denied') return deny(state, 'SANDBOX', outcome.failure);
      const kind = state.descriptor?.sandboxKind ?? 'None';
      if (outcome.result === 'not_needed') {
        if (kind !== 'None') return reject(state, `the tool runs in a ${kind} sandbox; lease one`);
        return proceed(state, { ...state, step: 'START', invocation: { ...invocation, state: 'Brokered', updatedAt: now } }, ctx);
      }
      if (kind === 'None') return reject(state, 'the tool runs without a sandbox');
      // The lease names the sandbox the session really runs in (Bubblewrap, or Process with the sandbox off).
      const leasedKind = outcome.sandbox?.kind ?? kind;
      const record = outcome.sandbox === undefined ? undefined : { sandboxLeaseId: outcome.sandboxLeaseId, sandboxKind: leasedKind, ...outcome.sandbox.info };
      const leased = { ...invocation, state: 'Brokered' as const, sandboxLeaseId: outcome.sandboxLeaseId, ...(record === undefined ? {} : { sandbox: record }), updatedAt: now };
      const { invocation: numbered, event } = appendEvent(
        leased,
        'SandboxLeased',
        { sandboxLeaseId: outcome.sandboxLeaseId, sandboxKind: leasedKind, expiresAt: outcome.expiresAt, ...(outcome.sandbox === undefined ? {} : { sandbox: outcome.sandbox.info }) },
        now,
      );
      return proceed(state, { ...state, step: 'START', invocation: numbered }, ctx, [event]);
    }
    case 'START': {
      const cancelled = cancelIfReleaseEnded(state, outcome.current);
      if (cancelled !== undefined) return cancelled;
      const { declaredClass, effectiveClass, riskClass, policyDecisionId } = invocation;
      if (declaredClass === undefined || effectiveClass === undefined || riskClass === undefined || policyDecisionId === undefined) {
        return reject(state, 'the invocation was not classified and authorized');
      }
      const started: ToolInvocation = { ...invocation, state: 'Executing', startedAt: now, updatedAt: now };
      const { invocation: numbered, event } = appendEvent(
        started,
        'ToolCallStarted',
        {
          requestHash: invocation.requestHash,
          idempotencyKey: invocation.idempotencyKey,
          ...(state.descriptor?.auditRequirements.argumentsHash === true ? { argumentsHash: sha256Hex(invocation.argumentsJson) } : {}),
          declaredSideEffectClass: declaredClass,
          sideEffectClass: effectiveClass,
          riskClass,
          policyDecisionId,
          ...(invocation.approvalId === undefined ? {} : { approvalId: invocation.approvalId }),
          ...(invocation.sandboxLeaseId === undefined ? {} : { sandboxLeaseId: invocation.sandboxLeaseId }),
          secretLeaseIds: invocation.secretLeaseIds,
          ...(invocation.mcpServerId === undefined ? {} : { mcpServerId: invocation.mcpServerId }),
          deadline: invocation.deadline,
        },
        now,
      );
      return proceed(state, { ...state, step: 'EXECUTE', invocation: numbered }, ctx, [event], true);
    }
    case 'EXECUTE':
      return accept({ ...state, step: 'SANITIZE', execution: outcome.execution }, state);
    case 'SANITIZE': {
      const execution = state.execution;
      if (execution === undefined) return reject(state, 'nothing was executed');
      const effectiveClass = invocation.effectiveClass ?? invocation.declaredClass ?? 'PRIVILEGED';
      const ending = executionEnding(execution, effectiveClass);
      let pending: PendingEnding;
      if (ending.state === 'Observed' && execution.result === 'returned') {
        const contract = outputSchemaOf(state.descriptor);
        if (contract !== undefined && outcome.outputValidator === undefined) return reject(state, 'the tool declares an output schema; report SANITIZE with an output validator');
        const options = { ...(ctx.maxResultBytes === undefined ? {} : { maxBytes: ctx.maxResultBytes }), ...(execution.inputTruncated === true ? { inputTruncated: true } : {}) };
        const result = sanitizeResult(execution.output, outcome.secrets, options);
        // A result that breaks the tool's declared output schema ends the call Failed (see output-contract.ts).
        const broken = contract === undefined || outcome.outputValidator === undefined ? undefined : outputContractFailure(contract, result, outcome.outputValidator);
        pending = broken === undefined ? { state: 'Observed', result } : { state: 'Failed', failure: broken };
      } else if (ending.state === 'Observed') {
        return reject(state, 'an execution without a result cannot be observed');
      } else {
        pending = { state: ending.state, failure: sanitizeFailure(ending.failure, outcome.secrets) };
      }
      // A flow-backed call's run (FlowRunner's answer names it): kept on the invocation, signed into its receipt.
      const flowRun = execution.result === 'returned' || execution.result === 'failed' ? execution.flowRun : undefined;
      if (flowRun !== undefined) pending = { ...pending, flowRun };
      return accept({ ...state, step: 'FINISH', execution: undefined, ending: pending }, state);
    }
    case 'FINISH':
      return finish(state, ctx);
    case 'PUBLISH_TERMINAL':
      return accept({ ...state, step: 'REPLY' }, state);
    case 'REPLY':
      return accept({ ...state, step: 'DONE' }, state);
  }
  return reject(state, `no stage ${String((outcome as { step: unknown }).step)}`);
}

/** How a request arrived: everything the core needs to record it. */
export interface InvocationArrival {
  /** From the subject, never from the body. */
  readonly scope: Scope;
  readonly request: InvocationRequest;
  /** From the verified context token. */
  readonly caller: CallerIdentity;
  /** A fresh id for this physical attempt, drawn by the I/O layer. */
  readonly invocationId: Uuid;
  /** The exact version the request resolves to (the named one, or the active one); undefined when the tool is unknown. */
  readonly resolvedToolVersion: string | undefined;
  /** The deadline when the request gives none; the descriptor's timeout when known. */
  readonly defaultTimeoutMs: number;
}

/** The idempotency key of a request: the caller's, or one derived deterministically from its durable execution. */
export function idempotencyKeyOf(request: InvocationRequest): { readonly key: string; readonly derived: boolean } {
  if (request.idempotencyKey !== undefined) return { key: request.idempotencyKey, derived: false };
  if (request.durableExecutionId === undefined || request.agentRevision === undefined) throw new RangeError('a request without an idempotency key names its durable execution and agent revision');
  return {
    key: deriveIdempotencyKey({
      durableExecutionId: request.durableExecutionId,
      agentRevision: request.agentRevision,
      toolId: request.toolId,
      arguments: request.arguments,
      completion: request.completion,
    }),
    derived: true,
  };
}

/** The request hash of a request for a given exact version (UNRESOLVED_TOOL_VERSION when the tool is unknown). */
export function requestHashOf(scope: Scope, request: Pick<InvocationRequest, 'toolId' | 'arguments' | 'completion'>, toolVersion: string | undefined): string {
  return requestHash({ ...scope, toolId: request.toolId, toolVersion: toolVersion ?? UNRESOLVED_TOOL_VERSION, arguments: request.arguments, completion: request.completion });
}

/** The deadline of a request: the earliest of its own deadline, its timeout (or the default) and the longest allowed. */
function deadlineOf(request: InvocationRequest, receivedAt: IsoDateTime, defaultTimeoutMs: number): IsoDateTime {
  const received = Date.parse(receivedAt);
  const candidates = [received + Math.min(request.timeoutMs ?? defaultTimeoutMs, MAX_INVOCATION_TIMEOUT_MS)];
  if (request.deadline !== undefined) candidates.push(Date.parse(request.deadline));
  return new Date(Math.min(...candidates)).toISOString();
}

/**
 * Records a new invocation (state Received) and its InvocationReceived event; the I/O layer inserts it under the
 * unique (tenant, workspace, idempotencyKey) index after {@link decideIdempotency} said `create`.
 */
export function receiveInvocation(arrival: InvocationArrival, ctx: Pick<PipelineContext, 'now'>): { readonly state: PipelineState; readonly events: readonly PipelineEvent[]; readonly persist: 'required' } {
  const { scope, request, caller } = arrival;
  const { key, derived } = idempotencyKeyOf(request);
  const version = arrival.resolvedToolVersion ?? request.toolVersion;
  const agentRevision = caller.agentRevision ?? (caller.agentId === undefined ? undefined : request.agentRevision);
  // One canonicalization of the arguments gives both their stored text and the request hash over them.
  const { requestHash, argumentsJson } = requestHashAndArgumentsJson({
    ...scope,
    toolId: request.toolId,
    toolVersion: version ?? UNRESOLVED_TOOL_VERSION,
    arguments: request.arguments,
    completion: request.completion,
  });
  const received: ToolInvocation = {
    invocationId: arrival.invocationId,
    tenant: scope.tenant,
    workspace: scope.workspace,
    toolCallId: request.toolCallId ?? derivedToolCallId(scope, key),
    attempt: 1,
    idempotencyKey: key,
    idempotencyKeyDerived: derived,
    requestHash,
    principal: caller.principal,
    ...(caller.agentId === undefined ? {} : { agentId: caller.agentId }),
    ...(agentRevision === undefined ? {} : { agentRevision }),
    toolId: request.toolId,
    ...(arrival.resolvedToolVersion === undefined ? {} : { toolVersion: arrival.resolvedToolVersion }),
    ...(request.toolVersion === undefined ? {} : { requestedToolVersion: request.toolVersion }),
    correlationId: request.correlationId,
    ...(request.causationId === undefined ? {} : { causationId: request.causationId }),
    ...(request.flowRunId === undefined ? {} : { flowRunId: request.flowRunId }),
    ...(request.workItemId === undefined ? {} : { workItemId: request.workItemId }),
    ...(request.replyInbox === undefined ? {} : { replyInbox: request.replyInbox }),
    argumentsJson,
    ...(request.completion === undefined ? {} : { completion: request.completion }),
    secretLeaseIds: [],
    state: 'Received',
    eventSequence: 0,
    receivedAt: ctx.now,
    deadline: deadlineOf(request, ctx.now, arrival.defaultTimeoutMs),
    updatedAt: ctx.now,
    version: 1,
  };
  const { invocation, event } = appendEvent(
    received,
    'InvocationReceived',
    {
      requestHash: received.requestHash,
      idempotencyKey: key,
      idempotencyKeyDerived: derived,
      ...(request.toolVersion === undefined ? {} : { requestedToolVersion: request.toolVersion }),
      ...(request.deadline === undefined && request.timeoutMs === undefined ? {} : { deadline: received.deadline }),
      ...(request.completion === undefined ? {} : { operation: 'completion' as const }),
    },
    ctx.now,
  );
  return { state: { step: 'TOOL_RESOLUTION', invocation }, events: [event], persist: 'required' };
}

/** Where a stored invocation resumes after its request was redelivered (or a decision arrived) on any replica. */
export type ResumePoint =
  | { readonly resumable: true; readonly state: PipelineState; readonly events: readonly PipelineEvent[] }
  | { readonly resumable: false; readonly problem: string };

/**
 * Resumes a stored invocation whose previous handler is gone. Terminal: publish its terminal events again (they
 * are rebuilt identically) and reply. Parked for approval: wait for the decision (`descriptor` is the bound
 * version, reloaded). Before execution: run every stage again from tool resolution, since leases and decisions of
 * the lost run were never used. Executing: not here — see decideIdempotency (new attempt or Uncertain).
 */
export function resumePipeline(invocation: ToolInvocation, descriptor?: ToolDescriptor): ResumePoint {
  const { state } = invocation;
  if (isTerminalInvocationState(state)) {
    if (invocation.receipt === undefined) return { resumable: false, problem: 'a terminal invocation without a receipt' };
    return { resumable: true, state: { step: 'PUBLISH_TERMINAL', invocation, descriptor }, events: terminalEventsOf(invocation) };
  }
  if (state === 'AwaitingApproval') {
    const bound = descriptor !== undefined && descriptor.toolId === invocation.toolId && descriptor.toolVersion === invocation.toolVersion ? descriptor : undefined;
    return { resumable: true, state: { step: 'APPROVAL_DECISION', invocation, descriptor: bound }, events: [] };
  }
  if (state === 'Executing') return { resumable: false, problem: 'an interrupted execution is retried as a new attempt or ends Uncertain, never resumed' };
  const {
    declaredClass: _declared,
    effectiveClass: _effective,
    riskClass: _risk,
    idempotency: _idempotency,
    policyDecisionId: _decision,
    sandboxLeaseId: _sandbox,
    sandbox: _sandboxLease,
    mcpServerId: _server,
    ...identity
  } = invocation;
  return { resumable: true, state: { step: 'TOOL_RESOLUTION', invocation: { ...identity, state: 'Received', secretLeaseIds: [] } }, events: [] };
}

/**
 * The normalized answer of a terminal invocation: status, content (only on success), truncation flag, provenance
 * (always untrusted tool data) and the signed receipt. Also what a repeated key replays.
 */
export function invocationResultOf(invocation: ToolInvocation): InvocationResult {
  const { state, receipt } = invocation;
  if (!isTerminalInvocationState(state) || receipt === undefined) throw new RangeError(`an invocation in state ${state} has no result yet`);
  const content = state === 'Observed' && invocation.resultJson !== undefined ? storedResultContent(invocation.resultJson) : { truncated: false };
  return { status: invocationStatusByState[state], ...content, provenance: 'untrusted-tool-data', receipt };
}
