// Realistic lifecycle events of tool calls, as the tool adapter emits them, built from plain plans so that unit,
// property and integration tests (and the benchmark) share them. Every event is validated against its contract.
import { randomBytes } from 'node:crypto';
import { LifecycleEvent, type ToolFailure } from '@toolplane/contracts';
import type { CallEvent } from '../src/call-fold.js';

/** How one attempt of a call ends (`InFlight`: it has started and not ended yet). */
export type AttemptOutcome = 'Completed' | 'Failed' | 'Cancelled' | 'Uncertain' | 'Denied' | 'InFlight';

/** One physical attempt. */
export interface AttemptPlan {
  readonly outcome: AttemptOutcome;
  readonly approval?: boolean;
  readonly sandbox?: boolean;
}

/** One logical call and its attempts, in attempt order. */
export interface CallPlan {
  readonly tenant: string;
  readonly workspace: string;
  readonly toolCallId: string;
  readonly flowRunId?: string;
  readonly agentId?: string;
  readonly toolId?: string;
  readonly attempts: readonly AttemptPlan[];
  /** Epoch ms of the first event; later events follow a second apart. */
  readonly startMs?: number;
}

// Ids differ from one test process to the next: the events stream drops a message whose id it has seen in the
// last two minutes, and a rerun must not look like a repetition of the previous run.
const processPrefix = randomBytes(4).toString('hex');

/** A UUID (v4 layout) from a number and a kind (`salt`), unique to this process. */
export function uuidOf(n: number, salt = 0): string {
  const hex = (n * 7919 + salt * 104729).toString(16).padStart(12, '0').slice(-12);
  return `${processPrefix}-0000-4000-8${String(salt % 10)}00-${hex}`;
}

const hash = (seed: string) => Buffer.from(seed.padEnd(32, '.')).toString('hex').slice(0, 64).padEnd(64, '0');

let counter = 0;
/** A fresh number for ids, unique within the process. */
export function nextId(): number {
  counter += 1;
  return counter;
}

function failureOf(outcome: AttemptOutcome): ToolFailure {
  switch (outcome) {
    case 'Cancelled':
      return { code: 'CANCELLED', message: 'the caller cancelled', retryable: false };
    case 'Uncertain':
      return { code: 'UNKNOWN_OUTCOME', message: 'the connection dropped after the request was sent', retryable: false, providerErrorType: 'ConnectionReset' };
    case 'Denied':
      return { code: 'AUTHORIZATION_DENIED', message: 'the agent may not call this tool', retryable: false };
    default:
      return { code: 'TEMPORARY_UNAVAILABLE', message: 'the server answered 503', retryable: true, providerErrorType: 'HttpStatus(503)' };
  }
}

/** The events of a call, attempt after attempt, each attempt's events in sequence order. */
export function callEvents(plan: CallPlan): CallEvent[] {
  const events: CallEvent[] = [];
  let clock = plan.startMs ?? Date.parse('2026-03-01T10:00:00.000Z');
  const toolId = plan.toolId ?? 'github.create_issue';
  plan.attempts.forEach((attempt, index) => {
    const attemptNo = index + 1;
    const invocationId = uuidOf(nextId(), 1);
    let sequence = 0;
    const emit = (type: CallEvent['type'], data: Record<string, unknown>, resolved = true) => {
      sequence += 1;
      clock += 1000;
      const metadata = {
        eventId: uuidOf(nextId(), 2),
        tenant: plan.tenant,
        workspace: plan.workspace,
        principal: 'user:alice@example.com',
        ...(plan.agentId === undefined ? {} : { agentId: plan.agentId, agentRevision: '7' }),
        toolCallId: plan.toolCallId,
        invocationId,
        attempt: attemptNo,
        sequence,
        toolId,
        ...(resolved ? { toolVersion: '1.2.0' } : {}),
        ...(plan.flowRunId === undefined ? {} : { flowRunId: plan.flowRunId, workItemId: `wi-${plan.flowRunId}` }),
        correlationId: `corr-${plan.toolCallId}`,
        occurredAt: new Date(clock).toISOString(),
      };
      events.push(LifecycleEvent.parse({ type, data, metadata }) as CallEvent);
    };
    const requestHash = hash(`request-${plan.toolCallId}`);
    const policyDecisionId = uuidOf(nextId(), 3);
    emit('InvocationReceived', { requestHash, idempotencyKey: `key-${plan.toolCallId}`, idempotencyKeyDerived: false }, false);
    if (attempt.outcome === 'Denied') {
      emit('InvocationDenied', { stage: 'AGENT_PERMISSION', failure: failureOf('Denied'), policyDecisionId });
      return;
    }
    const approvalId = attempt.approval ? uuidOf(nextId(), 4) : undefined;
    if (approvalId !== undefined) {
      emit('ApprovalRequested', {
        approvalId,
        requestHash,
        sideEffectClass: 'WRITE',
        riskClass: 'MEDIUM',
        summary: 'create an issue',
        approvers: { roles: ['approver'], principals: [] },
        expiresAt: new Date(clock + 3_600_000).toISOString(),
      });
    }
    const sandboxLeaseId = attempt.sandbox ? uuidOf(nextId(), 5) : undefined;
    if (sandboxLeaseId !== undefined) emit('SandboxLeased', { sandboxLeaseId, sandboxKind: 'Process', expiresAt: new Date(clock + 60_000).toISOString() });
    emit('ToolCallStarted', {
      requestHash,
      idempotencyKey: `key-${plan.toolCallId}`,
      argumentsHash: hash(`args-${plan.toolCallId}`),
      declaredSideEffectClass: 'WRITE',
      sideEffectClass: 'WRITE',
      riskClass: 'MEDIUM',
      policyDecisionId,
      ...(approvalId === undefined ? {} : { approvalId }),
      ...(sandboxLeaseId === undefined ? {} : { sandboxLeaseId }),
      secretLeaseIds: [],
      deadline: new Date(clock + 30_000).toISOString(),
    });
    switch (attempt.outcome) {
      case 'Completed':
        emit('ToolCallCompleted', { resultHash: hash(`result-${plan.toolCallId}-${attemptNo}`), truncated: false, durationMs: 1200 + attemptNo });
        break;
      case 'Failed':
        emit('ToolCallFailed', { failure: failureOf('Failed'), durationMs: 300 + attemptNo });
        break;
      case 'Cancelled':
        emit('ToolCallCancelled', { failure: failureOf('Cancelled'), durationMs: 50 });
        break;
      case 'Uncertain':
        emit('ToolEffectUncertain', { failure: failureOf('Uncertain') });
        break;
      case 'InFlight':
        break;
    }
    if (sandboxLeaseId !== undefined && attempt.outcome !== 'InFlight') emit('SandboxReleased', { sandboxLeaseId, sandboxKind: 'Process' });
  });
  return events;
}

/** A deterministic shuffle (a linear congruential generator), so a failure can be replayed. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i -= 1) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
