import type { ConsumerProgress } from '@toolplane/messaging';
import type { ServiceMetrics } from './service-metrics.js';

/** A durable consumer a service owns, by stream and durable name. */
export interface ConsumerRef {
  readonly stream: string;
  readonly consumer: string;
}

/** Reads a durable consumer's progress (the messaging kit's `consumerProgress`, bound to a connection). */
export type ReadConsumerProgress = (stream: string, consumer: string, signal: AbortSignal) => Promise<ConsumerProgress>;

/** How long one scrape waits for a consumer's info before leaving its samples out. */
export const consumerInfoTimeoutMs = 2_000;

type ConsumerLabel = 'stream' | 'consumer';

/**
 * Declares `consumer_pending`, `consumer_ack_pending` and `consumer_redelivered` for the given consumers, each
 * collected at scrape time. The three gauges are collected concurrently by one scrape; they share one info read
 * per consumer (the read in flight), so a scrape costs one request per consumer, not three. A consumer whose info
 * cannot be read (NATS down, consumer deleted, slow) is left out of that scrape and reported to `onReadFailed`: the
 * rest of the scrape still answers.
 */
export function declareConsumerMetrics(
  metrics: ServiceMetrics,
  consumers: readonly ConsumerRef[],
  read: ReadConsumerProgress,
  options: { readonly signal: AbortSignal; readonly onReadFailed: (ref: ConsumerRef, error: unknown) => void; readonly timeoutMs?: number },
): void {
  if (consumers.length === 0) return;
  const timeoutMs = options.timeoutMs ?? consumerInfoTimeoutMs;
  let inFlight: Promise<readonly (readonly [ConsumerRef, ConsumerProgress])[]> | undefined;

  const readAll = () => {
    inFlight ??= Promise.all(
      consumers.map(async (ref) => {
        try {
          return [[ref, await read(ref.stream, ref.consumer, AbortSignal.any([options.signal, AbortSignal.timeout(timeoutMs)]))] as const];
        } catch (error) {
          options.onReadFailed(ref, error);
          return [];
        }
      }),
    )
      .then((results) => results.flat())
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };

  const gauge = (name: string, help: string, value: (progress: ConsumerProgress) => number) =>
    metrics.gauge<ConsumerLabel>({
      name,
      help,
      labelNames: ['stream', 'consumer'],
      collect: async (set) => {
        for (const [ref, progress] of await readAll()) set({ stream: ref.stream, consumer: ref.consumer }, value(progress));
      },
    });

  gauge('consumer_pending', 'Messages matching the durable consumer not delivered yet.', (p) => p.pending);
  gauge('consumer_ack_pending', 'Messages delivered to the durable consumer and not acknowledged yet.', (p) => p.ackPending);
  gauge('consumer_redelivered', 'Messages delivered to the durable consumer more than once and not acknowledged yet.', (p) => p.redelivered);
}
