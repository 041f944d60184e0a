import { ToolplaneError, isTerminalInvocationState, type InvocationRecorded, type InvocationStateEvent, type IsoDateTime, type ToolInvocation } from '@toolplane/contracts';
import type { Decider } from '@toolplane/event-store';
import type { PipelineEvent } from './invocation-event-log.js';

// The ToolInvocation aggregate on the write path. The governed pipeline's pure core (receiveInvocation,
// advancePipeline, resumePipeline, startNextAttempt, markInterruptedUncertain, reconcileInvocation) decides every
// transition of a call; this decider records them: each record is the call as it now is, the public lifecycle
// events the transition produced, and the processing lease of the handler that wrote it. Appends are guarded by the
// version the handler read (or wrote last), so of two handlers one moves a call on; the decider adds the rules a
// version alone cannot state: a record continues the call it was decided on, an ended call only changes by
// reconciliation, and a lease is renewed only while the call executes (a renewal can never undo an ending).

/** A call as its records fold: the call now, its lease, and every public event its transitions produced. */
export interface InvocationCallState {
  readonly invocation: ToolInvocation | undefined;
  /** While in the future, the handler that last wrote the call may still be working on it. */
  readonly leaseUntil: IsoDateTime | undefined;
  /** The public events of every transition, in order: what a handler republishes after a crash. */
  readonly published: readonly PipelineEvent[];
  /** The trace context the call was parked in (for an approval), if it was traced: its resumption continues it. */
  readonly parkedTrace?: TraceContext | undefined;
}

/** A W3C trace context as a record keeps it. */
export type TraceContext = NonNullable<InvocationRecorded['data']['traceContext']>;

/** Where a call's transition comes from: the record it continues (none for a new call). */
export interface RecordedFrom {
  readonly invocationId: string;
  readonly eventSequence: number;
  readonly state: ToolInvocation['state'];
}

/** The commands of the ToolInvocation aggregate. */
export type InvocationCommand =
  /** Record a transition the core decided, continuing `from` (undefined: the call must not exist yet). */
  | {
      readonly type: 'RecordTransition';
      readonly data: {
        readonly from: RecordedFrom | undefined;
        readonly invocation: ToolInvocation;
        readonly events: readonly PipelineEvent[];
        readonly leaseUntil?: IsoDateTime | undefined;
        /** Kept only when the transition parks the call for an approval. */
        readonly traceContext?: TraceContext | undefined;
      };
    }
  /** Renew the lease of the executing attempt `invocationId`. */
  | { readonly type: 'RenewLease'; readonly data: { readonly invocationId: string; readonly leaseUntil: IsoDateTime } };

/** The call moved on from what its handler decided against: decide again against what it is now (retryable). */
export class InvocationChangedError extends ToolplaneError {
  constructor(message: string) {
    super('CONFLICT', message, { retryable: true });
  }
}

/** The `from` of a transition decided on `invocation`. */
export function recordedFrom(invocation: ToolInvocation): RecordedFrom {
  return { invocationId: invocation.invocationId, eventSequence: invocation.eventSequence, state: invocation.state };
}

function sameRecord(stored: ToolInvocation, from: RecordedFrom): boolean {
  return stored.invocationId === from.invocationId && stored.eventSequence === from.eventSequence && stored.state === from.state;
}

function decide(command: InvocationCommand, state: InvocationCallState): InvocationStateEvent[] {
  const stored = state.invocation;
  switch (command.type) {
    case 'RecordTransition': {
      const { from, invocation, events, leaseUntil, traceContext } = command.data;
      if (from === undefined) {
        if (stored !== undefined) throw new InvocationChangedError(`the call with idempotency key ${stored.idempotencyKey} exists already`);
      } else if (stored === undefined || !sameRecord(stored, from)) {
        throw new InvocationChangedError(`invocation ${from.invocationId} was moved on by another handler (now ${stored?.state ?? 'absent'})`);
      }
      if (stored !== undefined && isTerminalInvocationState(stored.state) && !(stored.state === 'Uncertain' && invocation.reconciliation !== undefined)) {
        throw new ToolplaneError('CONFLICT', `invocation ${stored.invocationId} ended ${stored.state}; only reconciling an Uncertain call changes it`);
      }
      if (stored !== undefined && (invocation.tenant !== stored.tenant || invocation.workspace !== stored.workspace || invocation.idempotencyKey !== stored.idempotencyKey)) {
        throw new ToolplaneError('INTERNAL', 'a transition must stay in its call (scope and idempotency key)');
      }
      // The arguments never change within a call: stored once, with the first record.
      const { argumentsJson, ...rest } = invocation;
      const recorded = stored === undefined ? invocation : argumentsJson === stored.argumentsJson ? rest : invocation;
      const kept = traceContext !== undefined && invocation.state === 'AwaitingApproval' ? { traceContext } : {};
      return [{ type: 'InvocationRecorded', data: { invocation: recorded, events: [...events], ...(leaseUntil === undefined ? {} : { leaseUntil }), ...kept } }];
    }
    case 'RenewLease':
      // Only the executing attempt's lease is renewed: after its ending (or a takeover) there is nothing to renew.
      if (stored === undefined || stored.invocationId !== command.data.invocationId || stored.state !== 'Executing') return [];
      return [{ type: 'InvocationLeaseRenewed', data: { ...command.data } }];
  }
}

function evolve(state: InvocationCallState, event: InvocationStateEvent): InvocationCallState {
  switch (event.type) {
    case 'InvocationRecorded': {
      const { invocation, events, leaseUntil, traceContext } = event.data;
      const argumentsJson = invocation.argumentsJson ?? state.invocation?.argumentsJson ?? '{}';
      // A parked call's trace context lasts while it waits (its claim by a decision records none).
      const parkedTrace = invocation.state === 'AwaitingApproval' ? (traceContext ?? state.parkedTrace) : undefined;
      return { invocation: { ...invocation, argumentsJson }, leaseUntil, published: [...state.published, ...(events as PipelineEvent[])], ...(parkedTrace === undefined ? {} : { parkedTrace }) };
    }
    case 'InvocationLeaseRenewed':
      if (state.invocation?.invocationId !== event.data.invocationId) return state;
      return { ...state, leaseUntil: event.data.leaseUntil };
  }
}

/** The ToolInvocation aggregate's decider. */
export const invocationDecider: Decider<InvocationCallState, InvocationCommand, InvocationStateEvent> = {
  decide,
  evolve,
  initialState: () => ({ invocation: undefined, leaseUntil: undefined, published: [] }),
};

/** Whether the handler that last wrote the call may still be working on it. */
export function leaseAlive(state: InvocationCallState, now: Date): boolean {
  return state.leaseUntil !== undefined && Date.parse(state.leaseUntil) > now.getTime();
}
