import { context } from '@opentelemetry/api';
import {
  ToolplaneError,
  isTerminalInvocationState,
  mcpCapabilityOf,
  scopeOfSubject,
  sleep,
  toWireError,
  type InvocationRequest,
  type JsonObject,
  type PolicyDecision,
  type Scope,
  type ToolDescriptor,
  type ToolInvocation,
  type WireError,
} from '@toolplane/contracts';
import type { McpTarget } from '@toolplane/mcp';
import type { DeliveryContext } from '@toolplane/messaging';
import { failpoint } from '@toolplane/service-kit';
import type { CallPosition } from '../adapters/invocation-store.js';
import { activeTraceContext, activeWith, startStageSpan, traceStageError, traceStageOutcome } from '../adapters/invocation-tracing.js';
import type { ArgumentCheck } from '../core/argument-validation.js';
import { checkCompletion } from '../core/completion.js';
import { decideIdempotency, markInterruptedUncertain, startNextAttempt } from '../core/invocation-attempts.js';
import { InvocationChangedError, leaseAlive } from '../core/invocation-decider.js';
import type { ExecutionResult } from '../core/execution-outcome.js';
import type { PipelineEvent } from '../core/invocation-event-log.js';
import { advancePipeline, idempotencyKeyOf, invocationResultOf, receiveInvocation, resumePipeline, type PipelineState, type StageOutcome } from '../core/invocation-pipeline.js';
import { evaluatePolicy, rateLimitChecksFor, type CallerIdentity } from '../core/policy-evaluator.js';
import { targetOf } from '../core/credential-injection.js';
import { brokerCredentials } from './credential-stage.js';
import type { InvocationRuntime } from './invocation-runtime.js';
import { leaseSandbox } from './sandbox-stage.js';
import { serverBundleOf } from './server-bundle.js';

// The I/O side of the governed pipeline on the write path. The core decides every step (advancePipeline accepts only
// the outcome of the stage that comes next); this file performs the stages and appends a call's transitions to its
// subject of the adapter's private stream only where correctness needs a durable fact: the started fact before the
// provider is called, the ending before the reply claims it, the parking before an approval is asked for. The stages
// before those do no external effect, so a new call's first append (at version 0: of two copies of one key, one
// wins) carries Received…Started together, and a denied call is one append. The public events a transition produced
// are published pipelined after its append (with their deterministic ids) and confirmed before the request is
// acked; a handler that finds a call a crash interrupted publishes them again from the call's records.

/**
 * The places where a fault test can kill (or freeze) the adapter process, armed by TOOLPLANE_FAILPOINTS
 * (`name=kill` or `name=stop`); off otherwise. See the README's "Fault tests".
 */
export const adapterFailpoints = {
  /** A new call was received (its token verified, its key free); nothing is stored and nothing was published. */
  afterReceived: 'adapter.after-received',
  /** Every stage before execution passed; the started fact is about to be appended. */
  beforeStarted: 'adapter.before-started',
  /** The started fact (Received…Started) is stored, its events sent but maybe not confirmed; the provider has not been called. */
  afterStarted: 'adapter.after-started',
  /** The provider returned; the terminal fact is not written. */
  afterProviderReturned: 'adapter.after-provider-returned',
  /** The terminal fact is stored; its events are not published and no reply was sent. */
  afterTerminal: 'adapter.after-terminal',
} as const;

/** The public events a handler sent, confirmed (all stored) before its request is acked. */
export class Outbound {
  readonly #sent: Promise<void>[] = [];
  readonly #runtime: Pick<InvocationRuntime, 'outlet'>;

  constructor(runtime: Pick<InvocationRuntime, 'outlet'>) {
    this.#runtime = runtime;
  }

  /** Sends events now, without waiting (a failure surfaces in `confirm`). */
  send(events: readonly PipelineEvent[]): void {
    if (events.length === 0) return;
    const sent = this.#runtime.outlet.publish(events);
    sent.catch(() => undefined); // surfaced by confirm(); never an unhandled rejection meanwhile
    this.#sent.push(sent);
  }

  /** Resolves once everything sent is stored; fails (the request is retried and republishes) otherwise. */
  async confirm(): Promise<void> {
    await Promise.all(this.#sent);
  }
}

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
  /** The call's arguments as parsed at the edge, when the run has them (otherwise parsed once from the record). */
  readonly arguments?: JsonObject | undefined;
  readonly outbound: Outbound;
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
    runtime.outlet.reply(scope, request.replyInbox, { ok: false, error: toWireError(error) });
    return;
  }
  const { key } = idempotencyKeyOf(request);
  const incoming = { scope, toolId: request.toolId, requestedToolVersion: request.toolVersion, arguments: request.arguments, completion: request.completion };
  const outbound = new Outbound(runtime);
  // A first delivery is taken for a new call (its creation is the append at version 0, which fails if the key is
  // taken); a redelivery reads first.
  let position = delivery.deliveryCount > 1 ? await runtime.calls.read(scope, key, delivery.signal) : runtime.calls.unread(scope, key);
  for (let attempt = 0; attempt < 4; attempt += 1) {
    if (attempt > 0) position = await runtime.calls.read(scope, key, delivery.signal);
    const stored = position.state.invocation;
    const now = runtime.clock();
    const decision = decideIdempotency(stored, incoming, leaseAlive(position.state, now));
    const run = { scope, caller, signal: delivery.signal, replyInbox: request.replyInbox, outbound };
    try {
      switch (decision.kind) {
        case 'create': {
          // A read of a resource or prompt never runs a descriptor of another kind: that one is not found.
          const resolved = runtime.descriptors.resolve(scope, request.toolId, request.toolVersion);
          const descriptor = resolved === undefined || request.capability === undefined || mcpCapabilityOf(resolved) === request.capability ? resolved : undefined;
          const received = receiveInvocation(
            { scope, request, caller, invocationId: runtime.newId(), resolvedToolVersion: descriptor?.toolVersion, defaultTimeoutMs: descriptor?.timeoutMs ?? runtime.defaultTimeoutMs },
            { now: now.toISOString() },
          );
          failpoint(adapterFailpoints.afterReceived);
          // The stored request's inbox is this one: no second inbox to answer.
          await runPipeline(runtime, { ...received.state, descriptor }, { ...run, replyInbox: undefined, arguments: request.arguments }, { position, events: received.events });
          break;
        }
        case 'conflict':
          runtime.outlet.reply(scope, request.replyInbox, { ok: false, error: decision.failure });
          return;
        case 'replay': {
          // A redelivery may follow a crash between the terminal fact and its events: publish them again (stored
          // with the call, identical, so within the duplicate window JetStream drops copies that did get out).
          if (stored !== undefined && (delivery.deliveryCount > 1 || recentlyEnded(stored, now))) outbound.send(position.state.published);
          runtime.outlet.reply(scope, request.replyInbox, { ok: true, data: decision.result });
          break;
        }
        case 'join': {
          if (stored === undefined) continue;
          if (stored.state === 'AwaitingApproval') {
            // Parked for as long as the approval lives (hours, maybe): nothing is held for this copy. The decision
            // resumes the call and replies to the stored request's inbox; another copy is answered at once on its own
            // inbox with APPROVAL_PENDING and the key, and re-attaches by it (the SDK's `await(key)`) like the first
            // caller whose wait ends before a human decided. A redelivery (or a recent repeat) may follow a crash
            // before the approval was requested: publish the call's events again (the approval service keeps one
            // approval per id).
            if (delivery.deliveryCount > 1 || now.getTime() - Date.parse(stored.updatedAt) < 60_000) outbound.send(position.state.published);
            if (request.replyInbox !== stored.replyInbox) runtime.outlet.reply(scope, request.replyInbox, { ok: false, error: approvalPending(stored) });
            break;
          }
          const awaited = await awaitTerminal(runtime, position, stored.deadline, delivery.signal);
          // The handler holding the call died while this copy waited: take the call over (decide again).
          if (awaited.kind === 'lapsed') continue;
          if (awaited.kind !== 'ended') throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the call with this idempotency key is still in flight');
          runtime.outlet.reply(scope, request.replyInbox, { ok: true, data: invocationResultOf(awaited.invocation) });
          break;
        }
        case 'resume': {
          if (stored === undefined) continue;
          const point = resumePipeline(stored, descriptorFor(runtime, scope, stored));
          if (!point.resumable) throw new ToolplaneError('INTERNAL', `invocation ${stored.invocationId} cannot resume: ${point.problem}`);
          // What the interrupted handler may not have got out; then the stages again (the first append wins).
          outbound.send(position.state.published);
          await runPipeline(runtime, { ...point.state, descriptor: point.state.descriptor ?? descriptorFor(runtime, scope, point.state.invocation) }, run, { position, events: point.events });
          break;
        }
        case 'new_attempt': {
          if (stored === undefined) continue;
          const next = startNextAttempt(stored, runtime.newId(), { now: now.toISOString() });
          outbound.send(position.state.published);
          await runPipeline(runtime, { ...next.state, descriptor: descriptorFor(runtime, scope, next.state.invocation) }, run, { position, events: [...next.closing, ...next.events] });
          break;
        }
        case 'uncertain': {
          if (stored === undefined) continue;
          outbound.send(position.state.published);
          await runPipeline(runtime, markInterruptedUncertain(stored), { ...run, caller: undefined }, { position, events: [] });
          break;
        }
      }
      await outbound.confirm();
      return;
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
 * Waits (bounded by the call's deadline) for the call to end, or for its handler's processing lease to lapse (that
 * handler died: the waiting copy takes the call over instead of waiting out a redelivery). Reads only what was
 * appended since the last look.
 */
async function awaitTerminal(runtime: InvocationRuntime, position: CallPosition, deadline: string, signal: AbortSignal): Promise<AwaitedCall> {
  const until = Math.min(Date.parse(deadline) + 1_000, runtime.clock().getTime() + 30_000);
  let current = position;
  for (let wait = 20; runtime.clock().getTime() < until; wait = Math.min(wait * 2, 500)) {
    await sleep(wait, signal, 'waiting for the call in flight');
    current = await runtime.calls.refresh(current, signal);
    const stored = current.state.invocation;
    if (stored !== undefined && isTerminalInvocationState(stored.state) && stored.receipt !== undefined) return { kind: 'ended', invocation: stored };
    if (stored?.state === 'AwaitingApproval') return { kind: 'parked' };
    if (stored !== undefined && !isTerminalInvocationState(stored.state) && !leaseAlive(current.state, runtime.clock())) return { kind: 'lapsed' };
  }
  return { kind: 'still_running' };
}

/** Where a run starts: the call as read or last written, and the public events decided but not yet appended. */
export interface RunStart {
  readonly position: CallPosition;
  readonly events: readonly PipelineEvent[];
}

/**
 * Drives the pipeline from `initial` until it is done (or parked for an approval), appending a transition wherever
 * the core says it must be persisted (at the version last read or written: a handler that lost the call to another
 * one fails with InvocationChangedError and decides again) and sending its events after the append.
 */
export async function runPipeline(runtime: InvocationRuntime, initial: PipelineState, run: RunContext, start: RunStart): Promise<void> {
  let state = initial;
  let position = start.position;
  let pending: PipelineEvent[] = [...start.events];
  const memo: StageMemo = { secrets: [], arguments: run.arguments };
  // One clock read per stage: a stage's end is the next one's start.
  let stageStartedMs = runtime.elapsedMs();
  while (state.step !== 'DONE') {
    if (state.step === 'APPROVAL_DECISION') return; // parked: the approval decision resumes it, on any replica
    const step = state.step;
    // The stage's span; what a recording stage does (requests, appends, published events) runs with it active. With
    // tracing off the span is the API's no-op and `traced` is undefined: the stage is called as it is.
    const span = startStageSpan(step, state.invocation);
    const traced = activeWith(span);
    try {
      let outcome: StageOutcome;
      if (state.step === 'EXECUTE') {
        // The lease is renewed while the provider call runs, so only a dead handler's call can be taken over. Renewals
        // are appends: the next write is guarded by the version the last one produced.
        const hold = runtime.calls.holdWhileExecuting(position, runtime.clock);
        try {
          outcome = await (traced === undefined ? performStage(runtime, state, run, memo) : context.with(traced, performStage, undefined, runtime, state, run, memo));
        } finally {
          position = await hold.release();
        }
      } else {
        // A stage without I/O is performed in the same turn: no await between the ending's events and the reply, so
        // both leave in one socket write.
        const performed = traced === undefined ? performStage(runtime, state, run, memo) : context.with(traced, performStage, undefined, runtime, state, run, memo);
        outcome = performed instanceof Promise ? await performed : performed;
      }
      const now = runtime.clock();
      const transition = advancePipeline(state, outcome, { now: now.toISOString(), signReceipt: runtime.signReceipt });
      if (!transition.accepted) throw new ToolplaneError('INTERNAL', `the pipeline refused the ${outcome.step} outcome: ${transition.problem}`);
      pending.push(...transition.events);
      state = transition.state;
      if (transition.persist === 'required') {
        const starting = outcome.step === 'START';
        const persisted = traced === undefined ? persistTransition(runtime, run, position, state, pending, now, starting) : context.with(traced, persistTransition, undefined, runtime, run, position, state, pending, now, starting);
        position = await persisted;
        // Sent in the turn that goes on to the next stage, not inside the append's: an ending's events and the reply
        // still leave in one socket write.
        if (traced === undefined) sendPersisted(run, pending, starting);
        else context.with(traced, sendPersisted, undefined, run, pending, starting);
        pending = [];
      }
      traceStageOutcome(span, outcome, state);
    } catch (error) {
      traceStageError(span, error);
      throw error;
    } finally {
      span.end();
    }
    const stageEndedMs = runtime.elapsedMs();
    runtime.observer.stagePerformed(step, (stageEndedMs - stageStartedMs) / 1000);
    stageStartedMs = stageEndedMs;
  }
}

/** Appends a transition the core said must be persisted, at the version last read or written; the position it leaves the call at. */
async function persistTransition(
  runtime: InvocationRuntime,
  run: RunContext,
  position: CallPosition,
  state: PipelineState,
  pending: readonly PipelineEvent[],
  now: Date,
  starting: boolean,
): Promise<CallPosition> {
  if (starting) failpoint(adapterFailpoints.beforeStarted);
  const { invocation } = state;
  const ended = isTerminalInvocationState(invocation.state);
  const parked = invocation.state === 'AwaitingApproval';
  // How a call ended is recorded even while shutting down (the provider call is over either way): a terminal
  // write is not given the abort signal, so a stop cannot leave an ended call looking as if it were executing.
  const signal = ended ? undefined : run.signal;
  // An approval decision and an operator's reconcile find the call by its ToolCallId: indexed before the
  // ApprovalRequested (or the Uncertain ending) can be seen.
  if (parked || invocation.state === 'Uncertain') await runtime.calls.indexToolCallId(run.scope, invocation.toolCallId, invocation.idempotencyKey, signal);
  // A parked call keeps the trace it parked in: the decision resumes it there.
  const traceContext = parked ? activeTraceContext() : undefined;
  const recorded = await runtime.calls.record(position, { invocation, events: pending, settled: ended || parked, now, traceContext }, signal);
  if (ended) runtime.observer.ended(invocation);
  else if (parked) runtime.observer.parked(invocation);
  if (ended) failpoint(adapterFailpoints.afterTerminal);
  return recorded;
}

/** Sends the events of a transition once it is appended. */
function sendPersisted(run: RunContext, pending: readonly PipelineEvent[], starting: boolean): void {
  run.outbound.send(pending);
  if (starting) failpoint(adapterFailpoints.afterStarted);
}

/** The arguments of the run's call, parsed once. */
function argumentsOf(memo: StageMemo, invocation: ToolInvocation): JsonObject {
  memo.arguments ??= JSON.parse(invocation.argumentsJson) as JsonObject;
  return memo.arguments;
}

/** What one run keeps in memory between stages: the policy decision, the leased secret values and the target they are injected into (never stored). */
interface StageMemo {
  decision?: PolicyDecision;
  secrets: readonly string[];
  target?: McpTarget | undefined;
  arguments?: JsonObject | undefined;
}

/** The outcome of the stage the pipeline waits for: at once for a stage without I/O, otherwise once its I/O is done. */
function performStage(runtime: InvocationRuntime, state: PipelineState, run: RunContext, memo: StageMemo): StageOutcome | Promise<StageOutcome> {
  const { invocation, descriptor } = state;
  switch (state.step) {
    case 'TOOL_RESOLUTION':
      return { step: 'TOOL_RESOLUTION', descriptor: invocation.toolVersion === undefined ? undefined : descriptor };
    case 'SCHEMA_VALIDATION':
      return { step: 'SCHEMA_VALIDATION', check: validateArguments(runtime, mustHave(descriptor), invocation, argumentsOf(memo, invocation)) };
    case 'AGENT_PERMISSION':
    case 'TENANT_POLICY':
    case 'SIDE_EFFECT_CLASSIFICATION': {
      const step = state.step;
      if (memo.decision !== undefined) return { step, decision: memo.decision };
      return decide(runtime, state, run, argumentsOf(memo, invocation)).then((decision) => {
        memo.decision = decision;
        return { step, decision };
      });
    }
    case 'APPROVAL': {
      // The descriptor as the cache has it now: a release retired since resolution with CANCEL_PENDING ends the call here.
      const current = descriptorFor(runtime, run.scope, invocation);
      if (memo.decision?.effect === 'allow') return { step: 'APPROVAL', result: 'not_required', current };
      if (invocation.approvalId !== undefined) return { step: 'APPROVAL', result: 'previously_granted', approvalId: invocation.approvalId, current };
      return { step: 'APPROVAL', result: 'requested', approvalId: runtime.newId(), current };
    }
    case 'CREDENTIAL_BROKER': {
      mustHave(descriptor);
      return brokerCredentials(runtime, state, run.scope, run.signal).then((brokered) => {
        memo.secrets = brokered.secrets;
        memo.target = brokered.target;
        return brokered.outcome;
      });
    }
    case 'SANDBOX':
      // A local server's sandbox is the one its pooled session runs in (sandbox-stage.ts); a remote one needs none.
      if (mustHave(descriptor).sandboxKind === 'None') return { step: 'SANDBOX', result: 'not_needed' };
      return leaseSandbox(runtime.sandbox ?? { mode: 'bubblewrap' }, memo.target, { sandboxLeaseId: runtime.newId(), expiresAt: invocation.deadline });
    case 'START':
      // Re-resolved before the started fact: the last point where a call of a retired release can still be cancelled.
      return { step: 'START', current: descriptorFor(runtime, run.scope, invocation) };
    case 'FINISH':
    case 'PUBLISH_TERMINAL':
      return { step: state.step };
    case 'EXECUTE':
      return execute(runtime, state, run, memo.target, argumentsOf(memo, invocation)).then((execution) => {
        failpoint(adapterFailpoints.afterProviderReturned);
        return { step: 'EXECUTE', execution };
      });
    case 'SANITIZE':
      return { step: 'SANITIZE', secrets: memo.secrets, outputValidator: runtime.validators };
    case 'REPLY': {
      // The stored request's inbox, and the driving copy's own when it is another one: every copy gets its reply.
      const reply = { ok: true, data: invocationResultOf(invocation) } as const;
      for (const inbox of new Set([invocation.replyInbox, run.replyInbox])) runtime.outlet.reply(run.scope, inbox, reply);
      return { step: 'REPLY' };
    }
    case 'APPROVAL_DECISION':
    case 'DONE':
      throw new ToolplaneError('INTERNAL', `no stage to perform at ${state.step}`);
  }
}

/** The arguments against the input schema; a completion's partial set against the arguments it may name (completion.ts). */
function validateArguments(runtime: InvocationRuntime, descriptor: ToolDescriptor, invocation: ToolInvocation, args: JsonObject): ArgumentCheck {
  return invocation.completion === undefined ? runtime.validators.validate(descriptor, args) : checkCompletion(descriptor, invocation.completion, args);
}

function mustHave(descriptor: ToolDescriptor | undefined): ToolDescriptor {
  if (descriptor === undefined) throw new ToolplaneError('INTERNAL', 'the pipeline reached a stage that needs the descriptor without one');
  return descriptor;
}

async function decide(runtime: InvocationRuntime, state: PipelineState, run: RunContext, args: JsonObject): Promise<PolicyDecision> {
  const { invocation } = state;
  const descriptor = mustHave(state.descriptor);
  const caller = run.caller;
  if (caller === undefined) throw new ToolplaneError('INTERNAL', 'a policy decision needs the verified caller');
  const [agentProfile, tenantPolicy, serverBundle] = await Promise.all([
    runtime.policies.agentProfile(run.scope.tenant, run.scope.workspace, caller.agentId, run.signal),
    runtime.policies.tenantPolicy(run.scope.tenant, runtime.clock(), run.signal),
    serverBundleOf(runtime, run.scope, descriptor, run.signal),
  ]);
  const subject = {
    invocationId: invocation.invocationId,
    ...run.scope,
    toolId: invocation.toolId,
    toolVersion: descriptor.toolVersion,
    requestHash: invocation.requestHash,
    arguments: args,
  };
  const checks = rateLimitChecksFor({ subject, descriptor, caller, tenantPolicy, serverBundle });
  // A lost race for a counter's slot means another call was counted first: evaluate again with the new count.
  for (let attempt = 0; attempt < 8; attempt += 1) {
    const now = runtime.clock();
    const rateCounters = await runtime.rateCounters.load(checks, now.getTime(), run.signal);
    const evaluation = evaluatePolicy({ subject, descriptor, caller, agentProfile, tenantPolicy, serverBundle, rateCounters, now: now.toISOString() });
    if (await runtime.rateCounters.claim(evaluation.rateCounterUpdates, run.signal)) return evaluation.decision;
  }
  throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the rate-limit counters are too contended; retrying');
}

async function execute(runtime: InvocationRuntime, state: PipelineState, run: RunContext, brokered: McpTarget | undefined, args: JsonObject): Promise<ExecutionResult> {
  const descriptor = mustHave(state.descriptor);
  const { invocation } = state;
  // Where a tool runs is its kind's: a Flow in FlowRunner (local to Toolplane), an MCP tool on its server.
  if (descriptor.kind === 'Flow') {
    // The run is bounded by its definition's timeout (the descriptor's), or by the call's own deadline if sooner.
    const deadline = new Date(Math.min(Date.parse(invocation.deadline), runtime.clock().getTime() + descriptor.timeoutMs));
    return runtime.flows.execute({ scope: run.scope, invocation, args, deadline, signal: run.signal });
  }
  if (descriptor.mcpServerId === undefined) {
    return { result: 'failed', failure: { code: 'INTERNAL', message: 'an MCP tool descriptor names no server', retryable: false }, effect: 'none' };
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
    args,
    ...(invocation.completion === undefined ? {} : { completion: invocation.completion }),
    deadline: new Date(invocation.deadline),
    signal: run.signal,
    now: runtime.clock,
  });
}
