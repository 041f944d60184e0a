import {
  ToolplaneError,
  isTerminalInvocationState,
  scopeOfSubject,
  sleep,
  toWireError,
  type InvocationRequest,
  type JsonObject,
  type PolicyDecision,
  type Scope,
  type ToolDescriptor,
  type ApprovalRequested,
  type ToolInvocation,
  type WireError,
} from '@toolplane/contracts';
import type { McpTarget } from '@toolplane/mcp';
import type { DeliveryContext } from '@toolplane/messaging';
import { failpoint } from '@toolplane/service-kit';
import { InvocationChangedError, invocationOf, leaseAlive } from '../adapters/invocation-store.js';
import { decideIdempotency, markInterruptedUncertain, startNextAttempt } from '../core/invocation-attempts.js';
import type { ExecutionResult } from '../core/execution-outcome.js';
import type { PipelineEvent } from '../core/invocation-event-log.js';
import { advancePipeline, idempotencyKeyOf, invocationResultOf, receiveInvocation, resumePipeline, terminalEventsOf, type PipelineState, type StageOutcome } from '../core/invocation-pipeline.js';
import { evaluatePolicy, rateLimitChecksFor, type CallerIdentity } from '../core/policy-evaluator.js';
import { targetOf } from '../core/credential-injection.js';
import { brokerCredentials } from './credential-stage.js';
import type { InvocationRuntime } from './invocation-runtime.js';
import { publishEvents, sendReply } from './publishing.js';

// The I/O side of the governed pipeline. The core decides every step (advancePipeline accepts only the outcome of
// the stage that comes next); this file performs the stages, persists the document by compare-and-set whenever a
// transition requires it, publishes events only after the document carrying their numbers is stored, and replies.

/**
 * The places where a fault test can kill (or freeze) the adapter process, armed by TOOLPLANE_FAILPOINTS
 * (`name=kill` or `name=stop`); off otherwise. See the README's "Fault tests".
 */
export const adapterFailpoints = {
  /** The Received fact is stored and InvocationReceived published; nothing else happened. */
  afterReceived: 'adapter.after-received',
  /** Every stage before execution passed; the started fact is about to be written. */
  beforeStarted: 'adapter.before-started',
  /** The started fact is stored and ToolCallStarted published; the provider has not been called. */
  afterStarted: 'adapter.after-started',
  /** The provider returned; the terminal fact is not written. */
  afterProviderReturned: 'adapter.after-provider-returned',
  /** The terminal fact is stored; its events are not published and no reply was sent. */
  afterTerminal: 'adapter.after-terminal',
} as const;

/** What one pipeline run needs besides the state. */
export interface RunContext {
  readonly scope: Scope;
  readonly caller: CallerIdentity | undefined;
  readonly signal: AbortSignal;
  /**
   * The inbox of the delivery driving the run, when it is a copy of the request other than the one stored (it took
   * over a call a dead handler left): it gets the outcome as well as the stored request's inbox.
   */
  readonly replyInbox?: string | undefined;
}

/** Handles one invocation request from the work queue; resolving acks it. */
export async function handleInvocationRequest(runtime: InvocationRuntime, request: InvocationRequest, delivery: DeliveryContext): Promise<void> {
  const scope = scopeOfSubject(delivery.subject);
  let caller: CallerIdentity;
  try {
    // Scope from the subject only; the token must have been issued for exactly this tenant and workspace.
    const claims = await runtime.verifier.verify(request.contextToken, { tenant: scope.tenant, workspace: scope.workspace, kind: 'agent' });
    caller = { principal: claims.principal, agentId: claims.agentId, agentRevision: claims.agentRevision, roles: claims.roles ?? [] };
  } catch (error) {
    // Nothing is recorded for a caller who cannot be identified.
    sendReply(runtime.messaging, scope, request.replyInbox, { ok: false, error: toWireError(error) });
    return;
  }
  const { key } = idempotencyKeyOf(request);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const stored = await runtime.invocations.find(scope, key, delivery.signal);
    const incoming = { scope, toolId: request.toolId, requestedToolVersion: request.toolVersion, arguments: request.arguments };
    const now = runtime.clock();
    const decision = decideIdempotency(stored === undefined ? undefined : invocationOf(stored), incoming, stored !== undefined && leaseAlive(stored, now));
    try {
      switch (decision.kind) {
        case 'create': {
          const descriptor = runtime.descriptors.resolve(scope, request.toolId, request.toolVersion);
          const received = receiveInvocation(
            { scope, request, caller, invocationId: runtime.newId(), resolvedToolVersion: descriptor?.toolVersion, defaultTimeoutMs: descriptor?.timeoutMs ?? runtime.defaultTimeoutMs },
            { now: now.toISOString() },
          );
          const inserted = await runtime.invocations.insert(received.state.invocation, now, delivery.signal);
          if (!inserted.created) continue; // another delivery created it first: decide again against it
          await publishEvents(runtime.messaging, received.events, delivery.signal);
          failpoint(adapterFailpoints.afterReceived);
          await runPipeline(runtime, { ...received.state, descriptor }, { scope, caller, signal: delivery.signal });
          return;
        }
        case 'conflict':
          sendReply(runtime.messaging, scope, request.replyInbox, { ok: false, error: decision.failure });
          return;
        case 'replay': {
          // A redelivery may follow a crash between the terminal fact and its events: publish them again (rebuilt
          // identically, so within the duplicate window JetStream drops copies that did get out).
          const ended = stored === undefined ? undefined : invocationOf(stored);
          if (ended !== undefined && (delivery.deliveryCount > 1 || recentlyEnded(ended, now))) await publishEvents(runtime.messaging, terminalEventsOf(ended), delivery.signal);
          sendReply(runtime.messaging, scope, request.replyInbox, { ok: true, data: decision.result });
          return;
        }
        case 'join': {
          if (stored === undefined) continue;
          if (stored.state === 'AwaitingApproval') {
            // Parked for as long as the approval lives (hours, maybe): nothing is held for this copy. The decision
            // resumes the call and replies to the stored request's inbox; another copy is answered at once on its own
            // inbox with APPROVAL_PENDING and the key, and re-attaches by it (the SDK's `await(key)`) like the first
            // caller whose wait ends before a human decided.
            // A redelivery (or a recent repeat) may follow a crash before the approval was requested: publish the
            // stored request again (the approval service keeps one per id).
            const outbox = stored.outbox ?? [];
            if (outbox.length > 0 && (delivery.deliveryCount > 1 || now.getTime() - Date.parse(stored.updatedAt) < 60_000)) await publishEvents(runtime.messaging, outbox, delivery.signal);
            if (request.replyInbox !== stored.replyInbox) sendReply(runtime.messaging, scope, request.replyInbox, { ok: false, error: approvalPending(stored) });
            return;
          }
          const awaited = await awaitTerminal(runtime, scope, key, stored.deadline, delivery.signal);
          // The handler holding the call died while this copy waited: take the call over (decide again).
          if (awaited.kind === 'lapsed') continue;
          if (awaited.kind !== 'ended') throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the call with this idempotency key is still in flight');
          sendReply(runtime.messaging, scope, request.replyInbox, { ok: true, data: invocationResultOf(awaited.invocation) });
          return;
        }
        case 'resume': {
          if (stored === undefined) continue;
          const current = invocationOf(stored);
          const point = resumePipeline(current, descriptorFor(runtime, scope, current));
          if (!point.resumable) throw new ToolplaneError('INTERNAL', `invocation ${current.invocationId} cannot resume: ${point.problem}`);
          // Claim the call first (compare-and-set): of two replicas resuming it, one goes on.
          const claimed = await runtime.invocations.advance(current, point.state.invocation, now, { release: isTerminalInvocationState(point.state.invocation.state), signal: delivery.signal });
          await publishEvents(runtime.messaging, point.events, delivery.signal);
          await runPipeline(runtime, { ...point.state, invocation: claimed, descriptor: point.state.descriptor ?? descriptorFor(runtime, scope, claimed) }, { scope, caller, signal: delivery.signal, replyInbox: request.replyInbox });
          return;
        }
        case 'new_attempt': {
          if (stored === undefined) continue;
          const interrupted = invocationOf(stored);
          const next = startNextAttempt(interrupted, runtime.newId(), { now: now.toISOString() });
          const persisted = await runtime.invocations.advance(interrupted, next.state.invocation, now, { signal: delivery.signal });
          await publishEvents(runtime.messaging, [...next.closing, ...next.events], delivery.signal);
          await runPipeline(runtime, { ...next.state, invocation: persisted, descriptor: descriptorFor(runtime, scope, persisted) }, { scope, caller, signal: delivery.signal, replyInbox: request.replyInbox });
          return;
        }
        case 'uncertain': {
          if (stored === undefined) continue;
          await runPipeline(runtime, markInterruptedUncertain(invocationOf(stored)), { scope, caller: undefined, signal: delivery.signal, replyInbox: request.replyInbox });
          return;
        }
      }
    } catch (error) {
      // Another handler moved the call on first: decide again against what it is now.
      if (error instanceof InvocationChangedError) continue;
      throw error;
    }
  }
  throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the idempotency key changed hands repeatedly; retrying');
}

/** The answer to a copy of a request whose call waits for a human: where it is, and the key to re-attach with. */
function approvalPending(parked: ToolInvocation): WireError {
  return new ToolplaneError('APPROVAL_PENDING', `the call waits for a human approval; re-attach with its idempotency key ${parked.idempotencyKey}`, {
    details: { idempotencyKey: parked.idempotencyKey, state: parked.state, ...(parked.approvalId === undefined ? {} : { approvalId: parked.approvalId }) },
  }).toWire();
}

/** Ended within the stream's duplicate window (two minutes by default): republished events are dropped there. */
function recentlyEnded(invocation: ToolInvocation, now: Date): boolean {
  return invocation.endedAt !== undefined && now.getTime() - Date.parse(invocation.endedAt) < 60_000;
}

/** The descriptor a stored invocation is bound to (its resolved version), if the read model still has it. */
export function descriptorFor(runtime: InvocationRuntime, scope: Scope, invocation: ToolInvocation): ToolDescriptor | undefined {
  return invocation.toolVersion === undefined ? undefined : runtime.descriptors.resolve(scope, invocation.toolId, invocation.toolVersion);
}

/** How a wait for the call in flight ended. */
type AwaitedCall = { readonly kind: 'ended'; readonly invocation: ToolInvocation } | { readonly kind: 'lapsed' } | { readonly kind: 'parked' } | { readonly kind: 'still_running' };

/**
 * Waits (bounded by the call's deadline) for the call holding `key` to end, or for its handler's processing lease to
 * lapse (that handler died: the waiting copy takes the call over instead of waiting out a redelivery).
 */
async function awaitTerminal(runtime: InvocationRuntime, scope: Scope, key: string, deadline: string, signal: AbortSignal): Promise<AwaitedCall> {
  const until = Math.min(Date.parse(deadline) + 1_000, runtime.clock().getTime() + 30_000);
  for (let wait = 20; runtime.clock().getTime() < until; wait = Math.min(wait * 2, 500)) {
    const stored = await runtime.invocations.find(scope, key, signal);
    if (stored !== undefined && isTerminalInvocationState(stored.state) && stored.receipt !== undefined) return { kind: 'ended', invocation: invocationOf(stored) };
    if (stored?.state === 'AwaitingApproval') return { kind: 'parked' };
    if (stored !== undefined && !isTerminalInvocationState(stored.state) && !leaseAlive(stored, runtime.clock())) return { kind: 'lapsed' };
    await sleep(wait, signal, 'waiting for the call in flight');
  }
  return { kind: 'still_running' };
}

/**
 * Drives the pipeline from `initial` until it is done (or parked for an approval). `initial.invocation` is the
 * document as stored (its version is the compare-and-set guard of the next write).
 */
export async function runPipeline(runtime: InvocationRuntime, initial: PipelineState, run: RunContext): Promise<void> {
  let state = initial;
  let stored = initial.invocation;
  let pending: PipelineEvent[] = [];
  const memo: StageMemo = { secrets: [] };
  while (state.step !== 'DONE') {
    if (state.step === 'APPROVAL_DECISION') return; // parked: the approval decision resumes it, on any replica
    let outcome: StageOutcome;
    if (state.step === 'EXECUTE') {
      // The lease is renewed while the provider call runs, so only a dead handler's call can be taken over. Renewals
      // move the version on: the next write is guarded by the version the last one produced.
      const hold = runtime.invocations.holdWhileExecuting(stored, runtime.clock);
      try {
        outcome = await performStage(runtime, state, run, memo);
      } finally {
        stored = await hold.release();
      }
    } else {
      outcome = await performStage(runtime, state, run, memo);
    }
    const now = runtime.clock();
    const transition = advancePipeline(state, outcome, { now: now.toISOString(), signReceipt: runtime.signReceipt });
    if (!transition.accepted) throw new ToolplaneError('INTERNAL', `the pipeline refused the ${outcome.step} outcome: ${transition.problem}`);
    pending = [...pending, ...transition.events];
    state = transition.state;
    if (transition.persist === 'required') {
      const starting = outcome.step === 'START';
      if (starting) failpoint(adapterFailpoints.beforeStarted);
      const settled = isTerminalInvocationState(state.invocation.state) || state.invocation.state === 'AwaitingApproval';
      // A parked call keeps its ApprovalRequested in the document: the only copy if the publish below never happens.
      const outbox = state.invocation.state === 'AwaitingApproval' ? pending.filter((event): event is ApprovalRequested => event.type === 'ApprovalRequested') : undefined;
      // How a call ended is recorded even while shutting down (the provider call is over either way): a terminal
      // write is not given the abort signal, so a stop cannot leave an ended call looking as if it were executing.
      const signal = isTerminalInvocationState(state.invocation.state) ? undefined : run.signal;
      stored = await runtime.invocations.advance(stored, state.invocation, now, { release: settled, ...(outbox === undefined ? {} : { outbox }), ...(signal ? { signal } : {}) });
      state = { ...state, invocation: stored };
      if (isTerminalInvocationState(stored.state)) failpoint(adapterFailpoints.afterTerminal);
      await publishEvents(runtime.messaging, pending, signal);
      pending = [];
      if (starting) failpoint(adapterFailpoints.afterStarted);
    }
  }
}

/** What one run keeps in memory between stages: the policy decision, the leased secret values and the target they are injected into (never stored). */
interface StageMemo {
  decision?: PolicyDecision;
  secrets: readonly string[];
  target?: McpTarget | undefined;
}

async function performStage(runtime: InvocationRuntime, state: PipelineState, run: RunContext, memo: StageMemo): Promise<StageOutcome> {
  const { invocation, descriptor } = state;
  switch (state.step) {
    case 'TOOL_RESOLUTION':
      return { step: 'TOOL_RESOLUTION', descriptor: invocation.toolVersion === undefined ? undefined : descriptor };
    case 'SCHEMA_VALIDATION':
      return { step: 'SCHEMA_VALIDATION', check: runtime.validators.validate(mustHave(descriptor), JSON.parse(invocation.argumentsJson)) };
    case 'AGENT_PERMISSION':
    case 'TENANT_POLICY':
    case 'SIDE_EFFECT_CLASSIFICATION': {
      memo.decision ??= await decide(runtime, state, run);
      return { step: state.step, decision: memo.decision };
    }
    case 'APPROVAL': {
      if (memo.decision?.effect === 'allow') return { step: 'APPROVAL', result: 'not_required' };
      if (invocation.approvalId !== undefined) return { step: 'APPROVAL', result: 'previously_granted', approvalId: invocation.approvalId };
      return { step: 'APPROVAL', result: 'requested', approvalId: runtime.newId() };
    }
    case 'CREDENTIAL_BROKER': {
      mustHave(descriptor);
      const brokered = await brokerCredentials(runtime, state, run.scope, run.signal);
      memo.secrets = brokered.secrets;
      memo.target = brokered.target;
      return brokered.outcome;
    }
    case 'SANDBOX':
      // A Process sandbox is the MCP adapter's process isolation of stdio servers (scrubbed env, own group, limits).
      if (mustHave(descriptor).sandboxKind === 'None') return { step: 'SANDBOX', result: 'not_needed' };
      return { step: 'SANDBOX', result: 'leased', sandboxLeaseId: runtime.newId(), expiresAt: invocation.deadline };
    case 'START':
    case 'FINISH':
    case 'PUBLISH_TERMINAL':
      return { step: state.step };
    case 'EXECUTE': {
      const execution = await execute(runtime, state, run, memo.target);
      failpoint(adapterFailpoints.afterProviderReturned);
      return { step: 'EXECUTE', execution };
    }
    case 'SANITIZE':
      return { step: 'SANITIZE', secrets: memo.secrets };
    case 'REPLY': {
      // The stored request's inbox, and the driving copy's own when it is another one: every copy gets its reply.
      const reply = { ok: true, data: invocationResultOf(invocation) } as const;
      for (const inbox of new Set([invocation.replyInbox, run.replyInbox])) sendReply(runtime.messaging, run.scope, inbox, reply);
      return { step: 'REPLY' };
    }
    case 'APPROVAL_DECISION':
    case 'DONE':
      throw new ToolplaneError('INTERNAL', `no stage to perform at ${state.step}`);
  }
}

function mustHave(descriptor: ToolDescriptor | undefined): ToolDescriptor {
  if (descriptor === undefined) throw new ToolplaneError('INTERNAL', 'the pipeline reached a stage that needs the descriptor without one');
  return descriptor;
}

async function decide(runtime: InvocationRuntime, state: PipelineState, run: RunContext): Promise<PolicyDecision> {
  const { invocation } = state;
  const descriptor = mustHave(state.descriptor);
  const caller = run.caller;
  if (caller === undefined) throw new ToolplaneError('INTERNAL', 'a policy decision needs the verified caller');
  const [agentProfile, tenantPolicy] = await Promise.all([
    runtime.policies.agentProfile(run.scope.tenant, run.scope.workspace, caller.agentId, run.signal),
    runtime.policies.tenantPolicy(run.scope.tenant, runtime.clock(), run.signal),
  ]);
  const subject = {
    invocationId: invocation.invocationId,
    ...run.scope,
    toolId: invocation.toolId,
    toolVersion: descriptor.toolVersion,
    requestHash: invocation.requestHash,
    arguments: JSON.parse(invocation.argumentsJson) as JsonObject,
  };
  const checks = rateLimitChecksFor({ subject, descriptor, caller, tenantPolicy });
  // A lost race for a counter's slot means another call was counted first: evaluate again with the new count.
  for (let attempt = 0; attempt < 8; attempt += 1) {
    const now = runtime.clock();
    const rateCounters = await runtime.rateCounters.load(checks, now.getTime(), run.signal);
    const evaluation = evaluatePolicy({ subject, descriptor, caller, agentProfile, tenantPolicy, rateCounters, now: now.toISOString() });
    if (await runtime.rateCounters.claim(evaluation.rateCounterUpdates, run.signal)) return evaluation.decision;
  }
  throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the rate-limit counters are too contended; retrying');
}

async function execute(runtime: InvocationRuntime, state: PipelineState, run: RunContext, brokered: McpTarget | undefined): Promise<ExecutionResult> {
  const descriptor = mustHave(state.descriptor);
  const { invocation } = state;
  if (descriptor.kind !== 'Mcp' || descriptor.mcpServerId === undefined) {
    return { result: 'failed', failure: { code: 'INTERNAL', message: `${descriptor.kind} tools are not executed by this adapter yet`, retryable: false }, effect: 'none' };
  }
  let target = brokered;
  try {
    // The credential stage built the target unless it could not reach the registry (and had nothing to lease).
    target ??= targetOf(await runtime.servers(run.scope, descriptor.mcpServerId, run.signal), new Map());
  } catch (error) {
    const wire = toWireError(error);
    return { result: 'failed', failure: { code: wire.code, message: `the tool's server cannot be reached: ${wire.message}`.slice(0, 4096), retryable: wire.retryable }, effect: 'none' };
  }
  return runtime.executor.execute({
    target,
    serverKey: `${run.scope.tenant}/${run.scope.workspace}/${descriptor.mcpServerId}`,
    descriptor,
    effectiveClass: invocation.effectiveClass ?? descriptor.sideEffectClass,
    args: JSON.parse(invocation.argumentsJson) as Record<string, unknown>,
    deadline: new Date(invocation.deadline),
    signal: run.signal,
    now: runtime.clock,
  });
}
