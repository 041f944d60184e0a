// The RuntimeToolCall fold: pure, no I/O, no clock. The fold state of a call is a map from attempt number to
// that attempt's state, itself a grow-only map of events by sequence plus registers ordered by (sequence,
// eventId). mergeCallStates is commutative, associative and idempotent (a join-semilattice), so folding the same
// events in any order, any number of times, gives the same state, and a batch's delta can be merged into a
// stored state with the same result as folding its events one by one.
import {
  CallEventType,
  canonicalJson,
  type ApprovalRequested,
  type CallAttemptIdentity,
  type CallAttemptState,
  type CallEventSummary,
  type InvocationEvent,
  type InvocationState,
  type LifecycleEvent,
  type RuntimeToolCall,
  type RuntimeToolCallAttemptView,
} from '@toolplane/contracts';

/** An event with an invocation's own metadata (attempt, sequence): it folds into a RuntimeToolCall. */
export type CallEvent = InvocationEvent | ApprovalRequested;

/** The fold state of one logical call: attempt number (as a decimal key) → that attempt's state. */
export type CallFoldState = Readonly<Record<string, CallAttemptState>>;

/** Whether an event folds into a RuntimeToolCall. */
export function isCallEvent(event: LifecycleEvent): event is CallEvent {
  return CallEventType.safeParse(event.type).success;
}

/** The key of a call's document: tenant and workspace are subject tokens (no `/`), so the prefix is unambiguous. */
export function callKey(event: Pick<CallEvent, 'metadata'>): string {
  const { tenant, workspace, toolCallId } = event.metadata;
  return `${tenant}/${workspace}/${toolCallId}`;
}

/** The empty fold state. */
export const emptyCallState: CallFoldState = {};

/** Folds one event into a call's state. */
export function foldCallEvent(state: CallFoldState, event: CallEvent): CallFoldState {
  return mergeCallStates(state, callStateOf(event));
}

/** The state a single event stands for. */
export function callStateOf(event: CallEvent): CallFoldState {
  const m = event.metadata;
  const identity: CallAttemptIdentity = compact({
    sequence: m.sequence,
    eventId: m.eventId,
    invocationId: m.invocationId,
    principal: m.principal,
    agentId: m.agentId,
    agentRevision: m.agentRevision,
    toolId: m.toolId,
    correlationId: m.correlationId,
    causationId: m.causationId,
    flowRunId: m.flowRunId,
    workItemId: m.workItemId,
  });
  const attempt: CallAttemptState = compact({
    identity,
    toolVersion: m.toolVersion === undefined ? undefined : { sequence: m.sequence, eventId: m.eventId, value: m.toolVersion },
    events: { [String(m.sequence)]: eventSummary(event) },
  });
  return { [String(m.attempt)]: attempt };
}

/** What a RuntimeToolCall keeps of an event: ids, hashes, classes, failure and duration; never arguments or results. */
export function eventSummary(event: CallEvent): CallEventSummary {
  const base = { type: event.type, eventId: event.metadata.eventId, occurredAt: event.metadata.occurredAt };
  switch (event.type) {
    case 'InvocationReceived':
      return { ...base, requestHash: event.data.requestHash, idempotencyKey: event.data.idempotencyKey };
    case 'InvocationDenied':
      return compact({ ...base, stage: event.data.stage, failure: event.data.failure, policyDecisionId: event.data.policyDecisionId, approvalId: event.data.approvalId });
    case 'ApprovalRequested':
      return { ...base, approvalId: event.data.approvalId, requestHash: event.data.requestHash, sideEffectClass: event.data.sideEffectClass, riskClass: event.data.riskClass };
    case 'SandboxLeased':
    case 'SandboxReleased':
      return { ...base, sandboxLeaseId: event.data.sandboxLeaseId };
    case 'ToolCallStarted':
      return compact({
        ...base,
        requestHash: event.data.requestHash,
        idempotencyKey: event.data.idempotencyKey,
        argumentsHash: event.data.argumentsHash,
        declaredSideEffectClass: event.data.declaredSideEffectClass,
        sideEffectClass: event.data.sideEffectClass,
        riskClass: event.data.riskClass,
        policyDecisionId: event.data.policyDecisionId,
        approvalId: event.data.approvalId,
        sandboxLeaseId: event.data.sandboxLeaseId,
      });
    case 'ToolCallCompleted':
      return { ...base, resultHash: event.data.resultHash, truncated: event.data.truncated, durationMs: event.data.durationMs };
    case 'ToolCallFailed':
    case 'ToolCallCancelled':
      return { ...base, failure: event.data.failure, durationMs: event.data.durationMs };
    case 'ToolEffectUncertain':
      return compact({ ...base, failure: event.data.failure, durationMs: event.data.durationMs });
  }
}

/** The join of two call states: every attempt of either, attempts present in both merged. */
export function mergeCallStates(a: CallFoldState, b: CallFoldState): CallFoldState {
  if (a === b) return a;
  const merged: Record<string, CallAttemptState> = { ...a };
  for (const [attempt, state] of Object.entries(b)) {
    const mine = merged[attempt];
    merged[attempt] = mine === undefined ? state : mergeAttempts(mine, state);
  }
  return sortKeys(merged);
}

function mergeAttempts(a: CallAttemptState, b: CallAttemptState): CallAttemptState {
  const events: Record<string, CallEventSummary> = { ...a.events };
  for (const [sequence, event] of Object.entries(b.events)) {
    const mine = events[sequence];
    events[sequence] = mine === undefined ? event : greater(mine, event, (x, y) => compareStrings(x.eventId, y.eventId));
  }
  const toolVersion = a.toolVersion === undefined ? b.toolVersion : b.toolVersion === undefined ? a.toolVersion : greater(a.toolVersion, b.toolVersion, byStamp);
  return compact({ identity: greater(a.identity, b.identity, byStamp), toolVersion, events: sortKeys(events) });
}

function byStamp(a: { sequence: number; eventId: string }, b: { sequence: number; eventId: string }): number {
  return a.sequence - b.sequence || compareStrings(a.eventId, b.eventId);
}

// The larger of two register values; equal keys (the same event seen twice) fall back to their canonical JSON,
// so that even two different values under one event id merge the same way whatever the order.
function greater<T>(a: T, b: T, compare: (a: T, b: T) => number): T {
  const order = compare(a, b);
  if (order !== 0) return order > 0 ? a : b;
  if (a === b) return a;
  const left = canonicalJson(a);
  const right = canonicalJson(b);
  return left >= right ? a : b;
}

const stateByType: Readonly<Record<CallEvent['type'], InvocationState | undefined>> = {
  InvocationReceived: 'Received',
  InvocationDenied: 'Denied',
  ApprovalRequested: 'AwaitingApproval',
  SandboxLeased: 'Brokered',
  SandboxReleased: undefined,
  ToolCallStarted: 'Executing',
  ToolCallCompleted: 'Observed',
  ToolCallFailed: 'Failed',
  ToolCallCancelled: 'Cancelled',
  ToolEffectUncertain: 'Uncertain',
};

const terminalTypes: ReadonlySet<string> = new Set(['InvocationDenied', 'ToolCallCompleted', 'ToolCallFailed', 'ToolCallCancelled', 'ToolEffectUncertain']);

/**
 * Whether these events of a call leave nothing to wait for: every attempt among them has ended, and every
 * sandbox leased was released. The projector writes a call once it has settled (rather than once per batch its
 * events straddle), so this only decides when to write, never what.
 */
export function callSettled(events: readonly CallEvent[]): boolean {
  const open = new Set<number>();
  const ended = new Set<number>();
  const leases = new Set<string>();
  for (const event of events) {
    open.add(event.metadata.attempt);
    if (terminalTypes.has(event.type)) ended.add(event.metadata.attempt);
    if (event.type === 'SandboxLeased') leases.add(`${event.metadata.attempt}/${event.data.sandboxLeaseId}`);
  }
  for (const event of events) if (event.type === 'SandboxReleased') leases.delete(`${event.metadata.attempt}/${event.data.sandboxLeaseId}`);
  return leases.size === 0 && [...open].every((attempt) => ended.has(attempt));
}

interface AttemptFacts {
  readonly attempt: number;
  readonly state: CallAttemptState;
  /** Its events by ascending sequence. */
  readonly events: readonly (CallEventSummary & { readonly sequence: number })[];
  readonly status: InvocationState;
  readonly terminal?: CallEventSummary;
  readonly receivedAt?: string;
  readonly startedAt?: string;
  readonly highestSequence: number;
}

function factsOf(attempt: number, state: CallAttemptState): AttemptFacts {
  const events = Object.entries(state.events)
    .map(([sequence, event]) => ({ ...event, sequence: Number(sequence) }))
    .sort((x, y) => x.sequence - y.sequence);
  const terminal = events.filter((event) => terminalTypes.has(event.type)).at(-1);
  const bearing = events.filter((event) => stateByType[event.type] !== undefined).at(-1);
  // A terminal event decides the state even if a later sequence (a sandbox release) follows it.
  const status = stateByType[(terminal ?? bearing)?.type ?? 'InvocationReceived'] ?? 'Received';
  return compact({
    attempt,
    state,
    events,
    status,
    terminal,
    receivedAt: earliest(events.filter((event) => event.type === 'InvocationReceived').map((event) => event.occurredAt)),
    startedAt: earliest(events.filter((event) => event.type === 'ToolCallStarted').map((event) => event.occurredAt)),
    highestSequence: events.at(-1)?.sequence ?? state.identity.sequence,
  });
}

function attemptsOf(state: CallFoldState): AttemptFacts[] {
  return Object.entries(state)
    .map(([attempt, attemptState]) => factsOf(Number(attempt), attemptState))
    .sort((x, y) => x.attempt - y.attempt);
}

/** The latest value a field has in the latest attempt that has it (attempts by number, events by sequence). */
function latestField<K extends keyof CallEventSummary>(attempts: readonly AttemptFacts[], field: K): CallEventSummary[K] | undefined {
  for (let i = attempts.length - 1; i >= 0; i -= 1) {
    const events = (attempts[i] as AttemptFacts).events;
    for (let j = events.length - 1; j >= 0; j -= 1) {
      const value = (events[j] as CallEventSummary)[field];
      if (value !== undefined) return value;
    }
  }
  return undefined;
}

/**
 * The RuntimeToolCall a fold state stands for. Throws on an empty state (a call document always has an event).
 */
export function projectCall(scope: { tenant: string; workspace: string; toolCallId: string }, state: CallFoldState): RuntimeToolCall {
  const attempts = attemptsOf(state);
  const latest = attempts.at(-1);
  if (latest === undefined) throw new Error('projectCall: a call without events');
  const identity = latest.state.identity;
  const allEvents = attempts.flatMap((attempt) => attempt.events);
  const ended = attempts.map((attempt) => attempt.terminal?.occurredAt).filter((at): at is string => at !== undefined);
  const latestIdentityWith = <K extends keyof CallAttemptIdentity>(field: K): CallAttemptIdentity[K] | undefined =>
    attempts
      .map((attempt) => attempt.state.identity[field])
      .filter((value) => value !== undefined)
      .at(-1);
  const toolVersion = latest.state.toolVersion?.value ?? attempts.map((attempt) => attempt.state.toolVersion?.value).filter((value) => value !== undefined).at(-1);
  const started = attempts.map((attempt) => attempt.startedAt).filter((at): at is string => at !== undefined);
  const received = attempts.map((attempt) => attempt.receivedAt).filter((at): at is string => at !== undefined);
  const occurred = allEvents.map((event) => event.occurredAt);
  const startedEvent = latest.events.filter((event) => event.type === 'ToolCallStarted' || event.type === 'ApprovalRequested').at(-1);
  return compact({
    tenant: scope.tenant,
    workspace: scope.workspace,
    toolCallId: scope.toolCallId,
    principal: identity.principal,
    agentId: identity.agentId,
    agentRevision: identity.agentRevision,
    toolId: identity.toolId,
    toolVersion,
    invocationId: identity.invocationId,
    attemptCount: latest.attempt,
    state: latest.status,
    // Normalised, so that stored times compare as instants in queries (`calls list --since`, its order).
    firstEventAt: new Date(earliest(occurred) as string).toISOString(),
    lastEventAt: new Date(latestOf(occurred) as string).toISOString(),
    receivedAt: earliest(received),
    startedAt: earliest(started),
    endedAt: latestOf(ended),
    durationMs: latest.terminal?.durationMs,
    failure: latest.terminal?.failure,
    approvalId: latestField([latest], 'approvalId') ?? latestField(attempts, 'approvalId'),
    policyDecisionId: latestField([latest], 'policyDecisionId') ?? latestField(attempts, 'policyDecisionId'),
    correlationId: identity.correlationId,
    causationId: identity.causationId,
    flowRunId: identity.flowRunId ?? latestIdentityWith('flowRunId'),
    workItemId: identity.workItemId ?? latestIdentityWith('workItemId'),
    requestHash: latestField([latest], 'requestHash'),
    idempotencyKey: latestField([latest], 'idempotencyKey') ?? latestField(attempts, 'idempotencyKey'),
    argumentsHash: latestField([latest], 'argumentsHash'),
    resultHash: latestField([latest], 'resultHash'),
    sideEffectClass: startedEvent?.sideEffectClass,
    riskClass: startedEvent?.riskClass,
    sequenceHighWater: Object.fromEntries(attempts.map((attempt) => [String(attempt.attempt), attempt.highestSequence])),
    attempts: sortKeys({ ...state }),
  });
}

/** One line per attempt, for `calls show`. */
export function attemptViews(state: CallFoldState): RuntimeToolCallAttemptView[] {
  return attemptsOf(state).map((attempt) =>
    compact({
      attempt: attempt.attempt,
      invocationId: attempt.state.identity.invocationId,
      state: attempt.status,
      highestSequence: attempt.highestSequence,
      receivedAt: attempt.receivedAt,
      startedAt: attempt.startedAt,
      endedAt: attempt.terminal?.occurredAt,
      durationMs: attempt.terminal?.durationMs,
      failure: attempt.terminal?.failure,
    }),
  );
}

// ISO 8601 strings of one instant may be written differently (with or without milliseconds): compare instants,
// and the strings only to break a tie, so that the choice never depends on the order of arrival.
function compareInstants(a: string, b: string): number {
  return Date.parse(a) - Date.parse(b) || compareStrings(a, b);
}

function earliest(values: readonly string[]): string | undefined {
  return values.reduce<string | undefined>((min, value) => (min === undefined || compareInstants(value, min) < 0 ? value : min), undefined);
}

function latestOf(values: readonly string[]): string | undefined {
  return values.reduce<string | undefined>((max, value) => (max === undefined || compareInstants(value, max) > 0 ? value : max), undefined);
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A record with its keys in numeric order, so that equal states are also equal as stored documents. */
function sortKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([x], [y]) => Number(x) - Number(y)));
}

/** The object without its undefined fields: what the store keeps, so documents compare equal after a round trip. */
export function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as T;
}
