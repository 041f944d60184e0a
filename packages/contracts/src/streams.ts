import { MAX_MESSAGE_BYTES } from './limits.js';
import { deadLetterFilter, eventFilter, invocationRequestFilter } from './subjects.js';

/**
 * A JetStream stream as plain data; the messaging kit translates it into the client's configuration (durations
 * to nanoseconds). Replica count is a deployment choice (1 locally, 3 on a cluster) and is not part of it: every
 * stream and bucket is declared with the service's NATS_STREAM_REPLICAS (the connection's `streamReplicas`); limits
 * are age-based, so the discard policy stays the server's default (old).
 */
export interface StreamDefinition {
  readonly name: string;
  readonly description: string;
  readonly subjects: readonly string[];
  /** `workqueue`: a message is removed once one consumer acks it; `limits`: kept until a limit removes it. */
  readonly retention: 'limits' | 'workqueue';
  readonly storage: 'file' | 'memory';
  /** How long a Nats-Msg-Id is remembered to drop duplicates. */
  readonly duplicateWindowMs: number;
  /** The largest message in bytes, headers included. */
  readonly maxMsgSize: number;
  /** How long a message is kept; 0 keeps it until another limit removes it. */
  readonly maxAgeMs: number;
  /** The most bytes kept; -1 for no limit. */
  readonly maxBytes: number;
  /** Whether direct gets are allowed (an aggregate's log read in one round trip). */
  readonly allowDirect?: boolean;
}

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

/** The streams of Toolplane v1. Their subjects never overlap, and no command or reply subject is in any of them. */
export const streams = {
  /** Invocation requests, each consumed once by one tool-adapter replica. */
  invocations: {
    name: 'TOOLPLANE_INVOCATIONS',
    description: 'Invocation requests of every tenant; work queue for the tool adapter.',
    subjects: [invocationRequestFilter()],
    retention: 'workqueue',
    storage: 'file',
    duplicateWindowMs: 2 * MINUTE_MS,
    maxMsgSize: MAX_MESSAGE_BYTES,
    // Requests carry deadlines far shorter than this; the age limit only bounds what an outage leaves behind.
    maxAgeMs: DAY_MS,
    maxBytes: -1,
  },
  /** Every lifecycle event; projections are folded from it and can be rebuilt from its first sequence. */
  events: {
    name: 'TOOLPLANE_EVENTS',
    description: 'Lifecycle events of every tenant; the record projections are built and rebuilt from.',
    subjects: [eventFilter()],
    retention: 'limits',
    storage: 'file',
    duplicateWindowMs: 2 * MINUTE_MS,
    maxMsgSize: MAX_MESSAGE_BYTES,
    // Kept until an operator sets a limit: a rebuild replays from the first sequence.
    maxAgeMs: 0,
    maxBytes: -1,
  },
  /** Messages consumers gave up on, with the reason, for operators to inspect and replay. */
  deadLetters: {
    name: 'TOOLPLANE_DEAD_LETTERS',
    description: 'Dead letters of every consumer, with the reason they were given up on.',
    subjects: [deadLetterFilter()],
    retention: 'limits',
    storage: 'file',
    duplicateWindowMs: 2 * MINUTE_MS,
    maxMsgSize: MAX_MESSAGE_BYTES,
    maxAgeMs: 30 * DAY_MS,
    maxBytes: -1,
  },
} as const satisfies Record<string, StreamDefinition>;
