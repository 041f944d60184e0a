import { LifecycleEvent, ToolplaneError, eventFilter, streams, type EventFamily, type EventType, type Scope } from '@toolplane/contracts';
import type { Messaging } from '@toolplane/messaging';

/** Which lifecycle events of the client's workspace to follow, and from where. */
export interface EventFilter {
  /** Only these event types (each becomes a subject filter on the server). */
  readonly types?: readonly EventType[];
  /** Only this family (invocation, approval, …); ignored when `types` is given. */
  readonly family?: EventFamily;
  /** Only events of this logical call (matched on the event's metadata). */
  readonly toolCallId?: string;
  /** Only events of this physical attempt. */
  readonly invocationId?: string;
  /** Only events carrying this correlation id. */
  readonly correlationId?: string;
  /** Where to start: `'new'` (default, events published from now on), `'all'`, a time, or a stream sequence. */
  readonly since?: 'new' | 'all' | Date | { readonly sequence: number };
  /** Ends the iteration (cleanly, without an error) when it aborts. */
  readonly signal?: AbortSignal;
}

/** Lifecycle events in stream order; `close()` (or `break` in `for await`) releases the server-side consumer. */
export interface EventStream extends AsyncIterableIterator<LifecycleEvent, undefined, undefined> {
  /**
   * Resolves once the server-side consumer exists (the first `next()` makes it too). With `since: 'new'`, an event
   * published after `ready()` resolved is never missed: await it before starting what you want to watch.
   */
  ready(): Promise<void>;
  close(): Promise<void>;
}

type OrderedOptions = Exclude<Parameters<Messaging['jetstream']['consumers']['get']>[1], string | undefined>;
type Consumer = Awaited<ReturnType<Messaging['jetstream']['consumers']['get']>>;
type Messages = Awaited<ReturnType<Consumer['consume']>>;

/** The subject filters of an event filter in a scope: per type, per family, or the whole workspace. */
export function eventSubjects(scope: Scope, filter: Pick<EventFilter, 'types' | 'family'>): string[] {
  if (filter.types !== undefined && filter.types.length > 0) return [...new Set(filter.types)].map((type) => eventFilter({ ...scope, type }));
  return [eventFilter({ ...scope, ...(filter.family === undefined ? {} : { family: filter.family }) })];
}

/** Whether an event passes the filter's metadata conditions (scope and types are the server's business). */
export function eventMatches(event: LifecycleEvent, filter: Pick<EventFilter, 'toolCallId' | 'invocationId' | 'correlationId'>): boolean {
  const metadata = event.metadata as { toolCallId?: string; invocationId?: string; correlationId?: string };
  if (filter.toolCallId !== undefined && metadata.toolCallId !== filter.toolCallId) return false;
  if (filter.invocationId !== undefined && metadata.invocationId !== filter.invocationId) return false;
  if (filter.correlationId !== undefined && metadata.correlationId !== filter.correlationId) return false;
  return true;
}

function orderedOptions(scope: Scope, filter: EventFilter): Partial<OrderedOptions> {
  const filter_subjects = eventSubjects(scope, filter);
  const since = filter.since ?? 'new';
  if (since === 'new') return { filter_subjects, deliver_policy: 'new' };
  if (since === 'all') return { filter_subjects, deliver_policy: 'all' };
  if (since instanceof Date) return { filter_subjects, deliver_policy: 'by_start_time', opt_start_time: since.toISOString() };
  if (!Number.isInteger(since.sequence) || since.sequence < 1) throw new ToolplaneError('INVALID_ARGUMENT', 'since.sequence must be a positive whole number');
  return { filter_subjects, deliver_policy: 'by_start_sequence', opt_start_seq: since.sequence };
}

/**
 * Follows the lifecycle events of a scope through an ordered consumer (ephemeral, no acks, gap-free: it restarts
 * itself after a missed message or a reconnect). Messages that are not valid events are skipped. The consumer is
 * made by `ready()` or the first `next()`; `since: 'new'` counts from then.
 */
export function lifecycleEvents(messaging: Messaging, scope: Scope, filter: EventFilter = {}): EventStream {
  const options = orderedOptions(scope, filter);
  const { signal } = filter;
  let started: Promise<{ consumer: Consumer; messages: Messages; iterator: AsyncIterator<{ json<T>(): T }> } | undefined> | undefined;
  let closed = false;

  const start = () => {
    started ??= (async () => {
      if (closed || signal?.aborted) return undefined;
      let consumer: Consumer;
      let messages: Messages;
      try {
        consumer = await messaging.jetstream.consumers.get(streams.events.name, options);
        messages = await consumer.consume();
      } catch (error) {
        throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `cannot follow the ${streams.events.name} stream`, { cause: error });
      }
      if (closed || signal?.aborted) {
        await release(consumer, messages);
        return undefined;
      }
      return { consumer, messages, iterator: messages[Symbol.asyncIterator]() };
    })();
    return started;
  };

  let stopping: Promise<void> | undefined;
  const stop = async (): Promise<IteratorResult<LifecycleEvent, undefined>> => {
    closed = true;
    stopping ??= (async () => {
      signal?.removeEventListener('abort', onAbort);
      const running = started === undefined ? undefined : await started.catch(() => undefined);
      if (running !== undefined) await release(running.consumer, running.messages);
    })();
    await stopping;
    return { done: true, value: undefined };
  };
  const onAbort = () => void stop();
  signal?.addEventListener('abort', onAbort, { once: true });

  const stream: EventStream = {
    async next() {
      const running = await start();
      if (running === undefined) return stop();
      for (;;) {
        if (closed) return { done: true, value: undefined };
        const step = await running.iterator.next();
        if (step.done === true || closed) return stop();
        let candidate: unknown;
        try {
          candidate = step.value.json();
        } catch {
          continue;
        }
        const parsed = LifecycleEvent.safeParse(candidate);
        if (parsed.success && eventMatches(parsed.data, filter)) return { done: false, value: parsed.data };
      }
    },
    return: stop,
    ready: async () => {
      await start();
    },
    close: async () => {
      await stop();
    },
    [Symbol.asyncIterator]() {
      return stream;
    },
  };
  return stream;
}

async function release(consumer: Consumer, messages: Messages): Promise<void> {
  messages.stop();
  // An ordered consumer is ephemeral and would expire by itself; deleting it frees the server at once.
  await consumer.delete().catch(() => undefined);
}
