// Where a governed call's latency goes, from the timestamps the adapter puts on its lifecycle events (same host,
// same clock): request sent → InvocationReceived → ToolCallStarted → ToolCallCompleted → reply received.
import { eventFilter, type Scope } from '@toolplane/contracts';
import type { Messaging } from '@toolplane/messaging';

/** The epoch milliseconds of now, with sub-millisecond precision. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

interface CallTimes {
  sent?: number;
  replied?: number;
  received?: number;
  started?: number;
  completed?: number;
}

/** The spans of the timeline (medians over the calls that have every timestamp), in ms. */
export interface StageSpans {
  readonly calls: number;
  /** JetStream publish and ack, the pull, token verification, the key's lookup. */
  readonly sentToReceived: number;
  /** Received document insert, its event, schema check, policy reads, sandbox lease event. */
  readonly receivedToStarted: number;
  /** The started fact (compare-and-set), its events, the MCP call. */
  readonly startedToCompleted: number;
  /** The terminal fact (compare-and-set), its events, the reply. */
  readonly completedToReplied: number;
  readonly total: number;
}

/** Collects the lifecycle events of `scope` and the send/reply times the caller reports, by invocation id. */
export class StageTimeline {
  readonly #calls = new Map<string, CallTimes>();
  #subscription: { unsubscribe(): void } | undefined;
  #recording = false;

  async start(messaging: Messaging, scope: Scope): Promise<void> {
    this.#subscription = messaging.connection.subscribe(eventFilter(scope), {
      callback: (error, message) => {
        if (error !== null || !this.#recording) return;
        const event = JSON.parse(message.string()) as { type: string; metadata: { invocationId?: string; occurredAt: string } };
        const id = event.metadata.invocationId;
        if (id === undefined) return;
        const at = Date.parse(event.metadata.occurredAt);
        if (event.type === 'InvocationReceived') this.#times(id).received = at;
        else if (event.type === 'ToolCallStarted') this.#times(id).started = at;
        else if (event.type === 'ToolCallCompleted') this.#times(id).completed = at;
      },
    });
    await messaging.connection.flush();
  }

  /** Records events (and replies) from now on, until stop(). */
  record(on: boolean): void {
    this.#recording = on;
  }

  /** A reply arrived for the call sent at `sentAt`. */
  replied(invocationId: string, sentAt: number, repliedAt: number): void {
    if (!this.#recording) return;
    const times = this.#times(invocationId);
    times.sent = sentAt;
    times.replied = repliedAt;
  }

  spans(): StageSpans {
    const complete = [...this.#calls.values()].filter(
      (t): t is Required<CallTimes> => t.sent !== undefined && t.replied !== undefined && t.received !== undefined && t.started !== undefined && t.completed !== undefined,
    );
    const median = (values: number[]) => {
      const sorted = values.sort((a, b) => a - b);
      return Number((sorted[Math.floor(sorted.length / 2)] ?? Number.NaN).toFixed(1));
    };
    return {
      calls: complete.length,
      sentToReceived: median(complete.map((t) => t.received - t.sent)),
      receivedToStarted: median(complete.map((t) => t.started - t.received)),
      startedToCompleted: median(complete.map((t) => t.completed - t.started)),
      completedToReplied: median(complete.map((t) => t.replied - t.completed)),
      total: median(complete.map((t) => t.replied - t.sent)),
    };
  }

  stop(): void {
    this.#subscription?.unsubscribe();
  }

  #times(id: string): CallTimes {
    let times = this.#calls.get(id);
    if (times === undefined) {
      times = {};
      this.#calls.set(id, times);
    }
    return times;
  }
}
