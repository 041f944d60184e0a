import {
  InvocationStateEvent,
  ToolCallIndexed,
  canonicalJson,
  invocationStateStream,
  invocationStateSubject,
  sha256Hex,
  toolCallIndexSubject,
  type IsoDateTime,
  type Scope,
  type ToolInvocation,
} from '@toolplane/contracts';
import { foldEvents, inMemoryEventStore, isVersionConflict, jetStreamEventStore, type EventStore } from '@toolplane/event-store';
import type { Messaging } from '@toolplane/messaging';
import { InvocationChangedError, invocationDecider, recordedFrom, type InvocationCallState, type InvocationCommand, type TraceContext } from '../core/invocation-decider.js';
import type { PipelineEvent } from '../core/invocation-event-log.js';

// The ToolInvocation aggregate's store: a call's transitions on its own subject of the adapter's private stream
// (TOOLPLANE_INVOCATION_STATE), read in one direct get and appended with the version last read or written. Nothing
// here touches MongoDB. A ToolCallId is indexed (a subject naming the call) when an approval decision or an
// operator's reconcile will have to find the call by it: when the call parks for an approval, and when it ends
// Uncertain; a READ call's hot path writes no index (an operator inspecting another call names its idempotency key).

/** The id of the call holding `idempotencyKey` in `scope` (stable across attempts): the last token of its subject. */
export function invocationDocumentId(scope: Scope, idempotencyKey: string): string {
  return sha256Hex(canonicalJson({ tenant: scope.tenant, workspace: scope.workspace, idempotencyKey }));
}

/** The stream id (subject) of the call holding `idempotencyKey` in `scope`. */
export function callStreamId(scope: Scope, idempotencyKey: string): string {
  return invocationStateSubject(scope, invocationDocumentId(scope, idempotencyKey));
}

/** A call as read or last written: its folded state and the version the next append is guarded by. */
export interface CallPosition {
  readonly streamId: string;
  readonly state: InvocationCallState;
  readonly version: number;
}

/** A stored call in one piece (the call now and its processing lease), as lookups and tests see it. */
export type StoredInvocation = ToolInvocation & { readonly leaseUntil?: IsoDateTime };

/** The call and its lease of a folded state, if there is a call. */
export function storedInvocationOf(state: InvocationCallState): StoredInvocation | undefined {
  if (state.invocation === undefined) return undefined;
  return state.leaseUntil === undefined ? state.invocation : { ...state.invocation, leaseUntil: state.leaseUntil };
}

/** A live handler's hold on the processing lease of an executing call (see `InvocationCalls.holdWhileExecuting`). */
export interface LeaseHold {
  /** Stops renewing; once no renewal is in flight, the call's position as last written (it guards the next append). */
  release(): Promise<CallPosition>;
}

// Decisions of one transition against a call that keeps moving on before the handler gives up and decides again.
const maxDecisions = 3;

/** Reads, records and indexes calls. */
export class InvocationCalls {
  readonly #calls: EventStore<InvocationStateEvent>;
  readonly #index: EventStore<ToolCallIndexed>;
  readonly #leaseMs: number;

  constructor(calls: EventStore<InvocationStateEvent>, index: EventStore<ToolCallIndexed>, leaseMs: number) {
    this.#calls = calls;
    this.#index = index;
    this.#leaseMs = leaseMs;
  }

  /** How long a lease lasts from a write. */
  get leaseMs(): number {
    return this.#leaseMs;
  }

  /** The position of a call nobody recorded yet (a creation appends at version 0 without reading first). */
  unread(scope: Scope, idempotencyKey: string): CallPosition {
    return { streamId: callStreamId(scope, idempotencyKey), state: invocationDecider.initialState(), version: 0 };
  }

  /** The call holding the key, as stored now. */
  async read(scope: Scope, idempotencyKey: string, signal?: AbortSignal): Promise<CallPosition> {
    return this.readStream(callStreamId(scope, idempotencyKey), signal);
  }

  /** A call by its stream id. */
  async readStream(streamId: string, signal?: AbortSignal): Promise<CallPosition> {
    const stored = await this.#calls.readStream(streamId, signal === undefined ? {} : { signal });
    return { streamId, state: foldEvents(invocationDecider, stored.events), version: stored.version };
  }

  /** What came after `position` (a waiter folding on from where it was). */
  async refresh(position: CallPosition, signal?: AbortSignal): Promise<CallPosition> {
    const stored = await this.#calls.readStream(position.streamId, { afterVersion: position.version, ...(signal === undefined ? {} : { signal }) });
    if (stored.events.length === 0) return position;
    return { streamId: position.streamId, state: stored.events.reduce((state, event) => invocationDecider.evolve(state, event), position.state), version: stored.version };
  }

  /** The call a ToolCallId was indexed for (parked for an approval, or ended Uncertain), if any. */
  async findByToolCallId(scope: Scope, toolCallId: string, signal?: AbortSignal): Promise<CallPosition | undefined> {
    const indexed = await this.#index.readStream(toolCallIndexSubject(scope, toolCallId), signal === undefined ? {} : { signal });
    const entry = indexed.events[0];
    if (entry === undefined) return undefined;
    return this.readStream(invocationStateSubject(scope, entry.data.callId), signal);
  }

  /** Records that `toolCallId` is the call of `idempotencyKey` (once: a ToolCallId names one call). */
  async indexToolCallId(scope: Scope, toolCallId: string, idempotencyKey: string, signal?: AbortSignal): Promise<void> {
    const event: ToolCallIndexed = { type: 'ToolCallIndexed', data: { callId: invocationDocumentId(scope, idempotencyKey), idempotencyKey } };
    try {
      await this.#index.appendToStream(toolCallIndexSubject(scope, toolCallId), [event], { expectedVersion: 0, ...(signal === undefined ? {} : { signal }) });
    } catch (error) {
      if (!isVersionConflict(error)) throw error; // indexed already
    }
  }

  /**
   * Records a transition the core decided on the call at `position` (`invocation` as it now is, the public events
   * it produced); the processing lease is renewed unless `settled` (ended, or parked for an approval). Fails with
   * InvocationChangedError when another handler moved the call on first.
   */
  async record(
    position: CallPosition,
    transition: { readonly invocation: ToolInvocation; readonly events: readonly PipelineEvent[]; readonly settled: boolean; readonly now: Date; readonly traceContext?: TraceContext | undefined },
    signal?: AbortSignal,
  ): Promise<CallPosition> {
    const from = position.state.invocation === undefined ? undefined : recordedFrom(position.state.invocation);
    const leaseUntil = transition.settled ? undefined : this.#leaseFrom(transition.now);
    const { invocation, events, traceContext } = transition;
    return this.#handle(position, { type: 'RecordTransition', data: { from, invocation, events, leaseUntil, traceContext } }, signal);
  }

  /**
   * Decides the command on the call at `position` and appends what it decided at that version. A lost race is decided
   * again against what won (reading only what came after): the decider refuses a record that no longer continues the
   * call it was decided on (InvocationChangedError), while lease renewals appended meanwhile (this handler's own, one
   * stored late after a NATS reconnect) do not stand in its way.
   */
  async #handle(position: CallPosition, command: InvocationCommand, signal?: AbortSignal): Promise<CallPosition> {
    let current = position;
    for (let decision = 1; ; decision += 1) {
      const events = invocationDecider.decide(command, current.state);
      if (events.length === 0) return current;
      try {
        const appended = await this.#calls.appendToStream(current.streamId, events, { expectedVersion: current.version, ...(signal === undefined ? {} : { signal }) });
        return { streamId: current.streamId, state: events.reduce((state, event) => invocationDecider.evolve(state, event), current.state), version: appended.nextExpectedVersion };
      } catch (error) {
        if (!isVersionConflict(error)) throw error;
        if (decision >= maxDecisions) throw new InvocationChangedError(`the call ${current.streamId} kept moving on while a transition was decided`);
      }
      current = await this.refresh(current, signal);
    }
  }

  /**
   * Keeps the processing lease of an executing call alive while its provider call runs: every third of the lease, a
   * renewal is appended at the version the handler last wrote, so it can never land after (and undo) a later write:
   * a renewal that finds the call moved on (taken over) is refused and stops the renewing, and the handler's next
   * write then loses too. `release()` waits for the renewal in flight and hands back the position as last written.
   */
  holdWhileExecuting(position: CallPosition, clock: () => Date): LeaseHold {
    let current = position;
    let renewing: Promise<void> | undefined;
    let stopped = false;
    const invocationId = position.state.invocation?.invocationId ?? '';
    const renew = async () => {
      try {
        // A renewal not acknowledged within the lease is withdrawn (the publisher does not send it again later).
        current = await this.#handle(current, { type: 'RenewLease', data: { invocationId, leaseUntil: this.#leaseFrom(clock()) } }, AbortSignal.timeout(this.#leaseMs));
        // Moved on (taken over): the decider renewed nothing; stop. This handler's ending write then loses too.
        if (current.state.invocation?.invocationId !== invocationId || current.state.invocation.state !== 'Executing') stop();
      } catch (error) {
        // A NATS outage longer than the publisher rides out only lets the lease lapse early: a takeover then starts
        // a READ again or ends a write Uncertain, and this handler's ending write loses its expected version.
        if (error instanceof InvocationChangedError) stop();
      }
    };
    const timer = setInterval(() => {
      if (stopped || renewing !== undefined) return;
      renewing = renew().finally(() => (renewing = undefined));
    }, Math.max(100, Math.floor(this.#leaseMs / 3)));
    timer.unref();
    const stop = () => {
      stopped = true;
      clearInterval(timer);
    };
    return {
      release: async () => {
        stop();
        await renewing;
        return current;
      },
    };
  }

  #leaseFrom(now: Date): string {
    return new Date(now.getTime() + this.#leaseMs).toISOString();
  }
}

/** Message ids of appends: distinct per decision without hashing the record (arguments and results can be large). */
function callMsgId(streamId: string, expectedVersion: number, events: readonly InvocationStateEvent[]): string {
  const first = events[0];
  if (first?.type === 'InvocationLeaseRenewed') return `${streamId}:${expectedVersion}:lease:${first.data.leaseUntil}`;
  const invocation = first?.data.invocation;
  return `${streamId}:${expectedVersion}:${invocation?.invocationId ?? ''}:${invocation?.eventSequence ?? 0}:${invocation?.state ?? ''}:${invocation?.updatedAt ?? ''}:${first?.data.leaseUntil ?? ''}`;
}

/** The calls on JetStream: the private stream's subjects, events validated on read (the decider built what is appended). */
export function jetStreamInvocationCalls(messaging: Messaging, leaseMs: number): InvocationCalls {
  const subjectOf = (streamId: string) => streamId;
  return new InvocationCalls(
    jetStreamEventStore(messaging, { stream: invocationStateStream.name, subjectOf, schema: InvocationStateEvent, trustAppends: true, msgIdOf: callMsgId }),
    jetStreamEventStore(messaging, { stream: invocationStateStream.name, subjectOf, schema: ToolCallIndexed }),
    leaseMs,
  );
}

/** The calls in memory (unit tests of the handlers). */
export function inMemoryInvocationCalls(leaseMs: number): InvocationCalls {
  return new InvocationCalls(inMemoryEventStore<InvocationStateEvent>(), inMemoryEventStore<ToolCallIndexed>(), leaseMs);
}
