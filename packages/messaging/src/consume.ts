import { setMaxListeners } from 'node:events';
import type { z } from 'zod';
import { millis, nanos } from '@nats-io/nats-core';
import type { Consumer, ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import { ToolplaneError } from '@toolplane/contracts';
import { pause, settledOrElapsed } from './abort.js';
import type { Messaging, StopOptions, Stoppable } from './messaging.js';
import { toToolplaneError } from './nats-errors.js';
import { minPinTimeoutMs, pinnedGroupOf } from './consumer-spec.js';
import { processMessage, type ConsumerDiagnostic, type MessageHandler, type ProcessingContext } from './process-message.js';
import { defaultNakBackoffMs } from './settlement.js';

/** A pull consumption: which durable consumer, the contract of its messages, and how to handle and retry them. */
export interface ConsumeOptions<S extends z.ZodType> {
  readonly stream: string;
  /** The durable consumer's name (declare it first with ensureConsumer). */
  readonly consumer: string;
  readonly schema: S;
  readonly handler: MessageHandler<z.output<S>>;
  /** Where undecodable, rejected and exhausted messages go as DeadLetter; a stream must capture it. */
  readonly deadLetterSubject: string;
  /** Deliveries a message gets, the first included, before a retryable failure is dead-lettered. */
  readonly maxDeliver: number;
  /** nak delays by delivery count (the last one repeats); default 1 s, 5 s, 15 s, 30 s, 60 s. */
  readonly nakBackoffMs?: readonly number[];
  /** Messages handled at once by this process; default 1. */
  readonly concurrency?: number;
  /** Aborting it stops the consumer, as stop() does. */
  readonly signal?: AbortSignal;
  /** Retries, dead letters and fetch problems, for the service to log. */
  readonly onDiagnostic?: (diagnostic: ConsumerDiagnostic) => void;
  /** The clock stamped on dead letters; default the system clock. */
  readonly now?: () => Date;
  /**
   * For a consumer with one active client (declared `pinned`): told when the server pins this client (it is the
   * one receiving from now on) and when this client learns that it lost the pin or stopped pulling (another one
   * may be receiving). Without a pin change nothing is called; a client that stalls learns of its loss only
   * when it pulls again.
   */
  readonly onPinChange?: (change: PinChange) => void;
}

/** A change of the pin of a consumer with one active client, as this client sees it. */
export type PinChange = { readonly pinned: true; readonly id: string } | { readonly pinned: false };

/** A running consumer. */
export interface ConsumerHandle extends Stoppable {
  readonly stream: string;
  readonly consumer: string;
  /** Resolves once the consumer has stopped (or its connection closed) and every in-flight handler settled. */
  closed(): Promise<void>;
}

// A pull request stays open this long when no message comes; stop() ends it earlier.
const fetchExpiresMs = 10_000;
// A pinned client's pulls keep its pin only if the next one arrives within the pin timeout.
const pinnedExpiresMs = (timeoutMs: number) => Math.max(1_000, Math.min(fetchExpiresMs, Math.floor(timeoutMs / 2)));
const maxFetchRetryMs = 30_000;

// Concurrent waits on the delivery signal one handler may hold (its pipelined publishes and requests).
const listenersPerHandler = 64;

/**
 * Starts pulling from a durable consumer. Each message is decoded and validated; an invalid one is
 * dead-lettered at once. A valid one goes to `handler` and is acked only after the handler resolves; a
 * retryable failure (by error code) is nak'ed with backoff until `maxDeliver`, anything else is
 * dead-lettered with its reason. Fails with NOT_FOUND when the consumer does not exist.
 *
 * A consumer declared `pinned` (one active client) is pulled with its priority group by one long-lived pull
 * subscription, which carries the pin the server hands out from pull to pull (separate fetches would each start
 * without it and wait out the pin timeout). There the consumer's max_ack_pending, not `concurrency` alone,
 * bounds what this process holds: messages beyond the free handler slots wait in the client.
 */
export async function consume<S extends z.ZodType>(m: Messaging, options: ConsumeOptions<S>): Promise<ConsumerHandle> {
  const what = `consuming ${options.stream}/${options.consumer}`;
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(options.maxDeliver) || options.maxDeliver < 1) throw new ToolplaneError('INVALID_ARGUMENT', `${what}: maxDeliver must be a positive integer`);
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new ToolplaneError('INVALID_ARGUMENT', `${what}: concurrency must be a positive integer`);
  let consumer: Consumer;
  try {
    consumer = await m.jetstream.consumers.get(options.stream, options.consumer);
  } catch (error) {
    throw toToolplaneError(error, what);
  }
  const { config } = await consumer.info(true);
  if (config.deliver_subject) throw new ToolplaneError('INVALID_ARGUMENT', `${what}: ${options.consumer} is a push consumer; consume() needs a pull consumer`);
  const pinnedGroup = pinnedGroupOf(config);
  const serverMaxDeliver = config.max_deliver ?? -1;
  if (serverMaxDeliver > 0 && serverMaxDeliver < options.maxDeliver) {
    throw new ToolplaneError('INVALID_ARGUMENT', `${what}: the consumer's max_deliver (${serverMaxDeliver}) is below maxDeliver (${options.maxDeliver}); messages would stall`);
  }

  const handlers = new AbortController();
  // Every in-flight handler waits on this one signal, several times at once (pipelined publishes): a listener count
  // far above Node's default warning threshold of 10 is expected. Each wait removes its listener when it settles.
  setMaxListeners(Math.max(10, concurrency * listenersPerHandler), handlers.signal);
  const fetching = new AbortController();
  const inflight = new Set<Promise<void>>();
  let batch: ConsumerMessages | undefined;
  const onDiagnostic = options.onDiagnostic;
  const ctx: ProcessingContext<S> = {
    messaging: m,
    stream: options.stream,
    consumer: options.consumer,
    schema: options.schema,
    handler: options.handler,
    deadLetterSubject: options.deadLetterSubject,
    policy: { maxDeliver: options.maxDeliver, backoffMs: options.nakBackoffMs ?? defaultNakBackoffMs },
    ackWaitMs: millis(config.ack_wait ?? nanos(30_000)),
    serverBackoffMs: (config.backoff ?? []).map((ns) => millis(ns)),
    signal: handlers.signal,
    now: options.now ?? (() => new Date()),
    report: (diagnostic) => {
      try {
        onDiagnostic?.(diagnostic);
      } catch {
        // A failing diagnostics sink (a logger) must not break message handling.
      }
    },
  };

  const dispatch = (msg: JsMsg) => {
    const work = processMessage(ctx, msg).finally(() => inflight.delete(work));
    inflight.add(work);
  };

  // Fetched after stop() began: hand it straight back for another replica rather than let its ack wait run out.
  const handBack = (msg: JsMsg) => {
    try {
      msg.nak();
    } catch (error) {
      ctx.report({ type: 'settle_failed', streamSequence: msg.info.streamSequence, action: 'nak', error });
    }
  };

  let pinned = false;
  const pinChanged = (change: PinChange) => {
    if (change.pinned === pinned && !change.pinned) return;
    pinned = change.pinned;
    try {
      options.onPinChange?.(change);
    } catch {
      // A failing observer must not break message handling.
    }
  };
  const watchPin = async (messages: ConsumerMessages) => {
    for await (const status of messages.status()) {
      if (status.type === 'consumer_pinned') pinChanged({ pinned: true, id: status.id });
      else if (status.type === 'consumer_unpinned') pinChanged({ pinned: false });
    }
  };

  // Fetch only as many messages as there are free slots: a fetched message's ack wait is already running.
  const fetchOnce = async () => {
    if (inflight.size >= concurrency) {
      await Promise.race(inflight);
      return;
    }
    batch = await consumer.fetch({ max_messages: concurrency - inflight.size, expires: fetchExpiresMs });
    if (fetching.signal.aborted) batch.stop();
    for await (const msg of batch) {
      if (fetching.signal.aborted) handBack(msg);
      else dispatch(msg);
    }
  };

  // One pull subscription for as long as it lasts: the pin travels with it.
  const consumePinned = async (group: string) => {
    const timeoutMs = millis(config.priority_timeout ?? nanos(minPinTimeoutMs));
    const messages = await consumer.consume({ max_messages: concurrency, expires: pinnedExpiresMs(timeoutMs), group });
    batch = messages;
    if (fetching.signal.aborted) messages.stop();
    const watching = watchPin(messages).catch(() => undefined);
    try {
      for await (const msg of messages) {
        while (inflight.size >= concurrency && !fetching.signal.aborted) await Promise.race(inflight);
        if (fetching.signal.aborted) handBack(msg);
        else dispatch(msg);
      }
    } finally {
      messages.stop();
      await watching;
      // Stopping keeps the pin until the handlers settled (their batches may still write), then hands it over.
      if (!fetching.signal.aborted) pinChanged({ pinned: false });
    }
  };

  const pull = async () => {
    let failures = 0;
    while (!fetching.signal.aborted && !m.connection.isClosed()) {
      try {
        if (pinnedGroup === undefined) await fetchOnce();
        else await consumePinned(pinnedGroup);
        failures = 0;
      } catch (error) {
        if (fetching.signal.aborted || m.connection.isClosed()) break;
        failures += 1;
        ctx.report({ type: 'fetch_failed', error: toToolplaneError(error, what) });
        await pause(Math.min(maxFetchRetryMs, 500 * 2 ** failures), fetching.signal);
      } finally {
        batch = undefined;
      }
    }
  };

  const done = pull()
    .catch((error: unknown) => ctx.report({ type: 'fetch_failed', error: toToolplaneError(error, what) }))
    .then(async () => {
      // The connection closed under us: handlers still running cannot settle their messages any more.
      if (!handlers.signal.aborted && m.connection.isClosed()) handlers.abort(new ToolplaneError('CANCELLED', `${what}: the connection closed`));
      while (inflight.size > 0) await Promise.all(inflight);
    });

  let unregister: () => void = () => undefined;
  const handle: ConsumerHandle = {
    stream: options.stream,
    consumer: options.consumer,
    async stop(stopOptions: StopOptions = {}) {
      if (!fetching.signal.aborted) {
        const holding = pinned;
        fetching.abort();
        batch?.stop();
        unregister();
        const graceMs = stopOptions.graceMs ?? 0;
        if (graceMs > 0 && inflight.size > 0) await settledOrElapsed([...inflight], graceMs);
        handlers.abort(new ToolplaneError('CANCELLED', `${what}: the consumer is stopping`));
        await done;
        // Hand the pin over now rather than after the timeout: the next client is pinned on the next delivery.
        if (holding && pinnedGroup !== undefined && !m.connection.isClosed()) {
          await m.manager.consumers.unpin(options.stream, options.consumer, pinnedGroup).catch((error: unknown) => ctx.report({ type: 'fetch_failed', error: toToolplaneError(error, `${what}: unpinning`) }));
        }
        pinChanged({ pinned: false });
      }
      await done;
    },
    closed: () => done,
  };
  unregister = m.track(handle);
  if (options.signal?.aborted) await handle.stop();
  else options.signal?.addEventListener('abort', () => void handle.stop(), { once: true });
  return handle;
}
