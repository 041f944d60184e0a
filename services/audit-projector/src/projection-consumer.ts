// A pull consumer of the events stream feeding the batch queue. Any number of replicas pull from one durable
// consumer pinned to one client, so one replica at a time receives and writes: the single writer the read models
// rely on. A message is acknowledged only once the batch holding its event was written. A message that is not a
// valid event, or that the projector refuses, is dead-lettered at once with its reason; a write that keeps failing
// is retried with backoff and dead-lettered after the delivery limit, and the consumer goes on. A write that fails
// because MongoDB went away spends no delivery: its messages are held (the consumer keeps telling the server they are
// being worked on) and the batch is written again once MongoDB answers, however long that takes. A replica told it
// lost the pin writes nothing until it is pinned again: its batches fail as retryable and their messages go back
// to the server, which delivers them to the pinned replica.
import type { SpanContext } from '@opentelemetry/api';
import { LifecycleEvent, ToolplaneError, deadLetterSubject, hasErrorCode, sleep } from '@toolplane/contracts';
import { consume, isRetryableError, type ConsumerDiagnostic, type ConsumerHandle, type Messaging, type PinChange } from '@toolplane/messaging';
import type { StoreStatus } from '@toolplane/service-kit';
import { BatchQueue } from './batch-queue.js';
import { acceptEvent, type AcceptedEvent } from './event-checks.js';
import { groupOfEvent, readyToWrite, writeBatch, type ProjectorWriters, type Target } from './projector.js';
import { currentOrigin, inBatchSpan } from './write-spans.js';

/** How a projection consumer runs. */
export interface ProjectionConsumerOptions {
  readonly messaging: Messaging;
  readonly stream: string;
  /** The durable consumer (declared beforehand). */
  readonly consumer: string;
  readonly writers: ProjectorWriters;
  readonly target: Target;
  readonly batchSize: number;
  readonly lingerMs: number;
  /** How long a call that has not settled waits for the rest of its events before it is written anyway. */
  readonly holdMs: number;
  /** Messages in flight in this process: at least a batch, so the next batch fills while one is written. */
  readonly concurrency: number;
  readonly maxDeliver: number;
  readonly nakBackoffMs: readonly number[];
  readonly maxEventBytes: number;
  /** How long stopping lets batches already being formed finish before their messages are handed back. */
  readonly stopGraceMs: number;
  readonly signal?: AbortSignal;
  readonly onDiagnostic?: (diagnostic: ConsumerDiagnostic) => void;
  /** A batch (or a group retried on its own) could not be written. */
  readonly onWriteFailure?: (error: unknown, events: number) => void;
  /** A batch (or a group retried on its own) was written: its events are in the projections now. Must not throw. */
  readonly onWritten?: (written: readonly AcceptedEvent[]) => void;
  /** This replica was pinned (it is the writer from now on) or learned it lost the pin. */
  readonly onPinChange?: (change: PinChange) => void;
  /**
   * Whether MongoDB answers and the service's indexes are in place: a batch is written only then, and one that fails
   * as unavailable waits for it. Without it, such a batch fails and its messages are redelivered.
   */
  readonly storeStatus?: StoreStatus;
}

/** A running projection consumer. */
export interface ProjectionConsumer {
  /** Stops pulling, lets the batch being written finish, hands waiting messages back for redelivery. */
  stop(): Promise<void>;
  readonly handle: ConsumerHandle;
}

/** A write failure keeps its code but becomes retryable, so its message is redelivered up to the limit. */
function retryable(error: unknown): unknown {
  if (!hasErrorCode(error)) return new ToolplaneError('INTERNAL', 'projecting the event failed', { retryable: true, cause: error });
  if (error.code === 'INVALID_ARGUMENT' || error.code === 'CANCELLED' || isRetryableError(error)) return error;
  return new ToolplaneError(error.code, error.message, { retryable: true, cause: error });
}

/** An accepted event with the span its message was handled in, so the batch's write joins the event's trace. */
interface Queued {
  readonly accepted: AcceptedEvent;
  readonly origin: SpanContext | undefined;
  /** The delivery's signal: it aborts when the consumer stops handling (after its grace period). */
  readonly signal: AbortSignal;
}

/** A failure that ends when MongoDB answers again (not a lost pin, which another replica's writes resolve). */
function storeAway(error: unknown): boolean {
  return hasErrorCode(error) && error.code === 'TEMPORARY_UNAVAILABLE';
}

// The pause between writes of a batch after MongoDB answered again, by failure: a store that answers pings but fails
// writes is not hammered.
const rewriteDelayMs = (failures: number) => Math.min(250 * failures, 2_000);

/** Starts consuming into the projections. */
export async function startProjectionConsumer(options: ProjectionConsumerOptions): Promise<ProjectionConsumer> {
  let pinLost = false;
  const onPinChange = (change: PinChange) => {
    pinLost = !change.pinned;
    // Whatever this replica remembered may predate another one's writes while it was not pinned.
    options.writers.calls.forget();
    options.onPinChange?.(change);
  };
  const queue = new BatchQueue<Queued>({
    maxItems: options.batchSize,
    lingerMs: options.lingerMs,
    write: async (queued) => {
      const items = queued.map((entry) => entry.accepted);
      // A consumer hands every message the same signal.
      const signal = queued[0]?.signal;
      const store = options.storeStatus;
      for (let failures = 0; ; ) {
        try {
          if (pinLost) throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'this replica lost its pin: another one writes the projections now', { retryable: true });
          // Not before the indexes are in place: the chain's unique index is what keeps an event from being chained twice.
          if (store !== undefined && !store.available) await store.whenAvailable(signal === undefined ? {} : { signal });
          await inBatchSpan(
            queued.map((entry) => entry.origin),
            () => writeBatch(options.writers, options.target, items),
          );
          break;
        } catch (error) {
          // Once per batch: an outage is logged by the service kit when it begins and when it ends.
          if (failures === 0) options.onWriteFailure?.(error, items.length);
          failures += 1;
          if (pinLost || store === undefined || !storeAway(error) || signal?.aborted) throw error;
          try {
            await store.whenAvailable({ ...(signal === undefined ? {} : { signal }), recheck: true });
            await sleep(rewriteDelayMs(failures), signal, 'writing a batch again');
          } catch {
            // The consumer is stopping: the messages go back to the server.
            throw error;
          }
        }
      }
      options.onWritten?.(items);
    },
    groupOf: (entry) => groupOfEvent(entry.accepted.event),
    ready: (queued) => readyToWrite(queued.map((entry) => entry.accepted.event)),
    holdMs: options.holdMs,
    // Held calls must leave room for a batch of ready ones, or the consumer would stall with every slot held.
    maxHeld: Math.max(0, options.concurrency - options.batchSize),
    isolate: (error) => !isRetryableError(error),
  });
  const handle = await consume(options.messaging, {
    stream: options.stream,
    consumer: options.consumer,
    schema: LifecycleEvent,
    deadLetterSubject: deadLetterSubject(options.stream, options.consumer),
    maxDeliver: options.maxDeliver,
    nakBackoffMs: options.nakBackoffMs,
    concurrency: options.concurrency,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onDiagnostic ? { onDiagnostic: options.onDiagnostic } : {}),
    onPinChange,
    handler: async (event, context) => {
      // Refusals are not retryable: the consumer dead-letters the message with this reason.
      const accepted = acceptEvent(event, context.subject, options.maxEventBytes);
      try {
        await queue.add({ accepted, origin: currentOrigin(), signal: context.signal }, context.signal);
      } catch (error) {
        throw retryable(error);
      }
    },
  });
  return {
    handle,
    stop: async () => {
      await handle.stop({ graceMs: options.stopGraceMs });
      await queue.close(new ToolplaneError('CANCELLED', 'the projection consumer stopped'));
    },
  };
}
