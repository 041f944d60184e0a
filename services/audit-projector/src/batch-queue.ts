// Collects items handed over one at a time (one per delivered message) into batches written at once, so that
// the store sees one write per document per batch instead of one per event. Each `add` resolves when its
// item's batch was written, which is when the consumer may acknowledge its message.
import { ToolplaneError } from '@toolplane/contracts';

/** How a queue forms and writes batches. */
export interface BatchQueueOptions<T> {
  /** Most items per batch. */
  readonly maxItems: number;
  /** How long the first item of a batch waits for others before the batch is written anyway. */
  readonly lingerMs: number;
  /** Writes a batch; rejecting fails it as a whole, and then each group is written again on its own. */
  readonly write: (items: readonly T[]) => Promise<void>;
  /** Items that must succeed or fail together (the events of one call); a failed batch is retried group by group. */
  readonly groupOf: (item: T) => string;
  /** Whether a failed batch is worth retrying group by group (not when the store is simply unavailable). */
  readonly isolate: (error: unknown) => boolean;
}

interface Waiting<T> {
  readonly item: T;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  readonly signal: AbortSignal | undefined;
}

/** A queue of items written in batches, one batch at a time. */
export class BatchQueue<T> {
  private readonly waiting: Waiting<T>[] = [];
  private timer: NodeJS.Timeout | undefined;
  private soon = false;
  private writing: Promise<void> | undefined;
  private closed: ToolplaneError | undefined;
  private readonly watched = new WeakSet<AbortSignal>();

  constructor(private readonly options: BatchQueueOptions<T>) {}

  /** Items waiting for a batch (not counting the one being written). */
  get size(): number {
    return this.waiting.length;
  }

  /**
   * Queues an item; resolves once a batch holding it was written. If `signal` aborts while the item still
   * waits (its consumer is stopping), it leaves the queue and rejects with CANCELLED, so its message is redelivered.
   */
  add(item: T, signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(this.closed);
    if (signal?.aborted) return Promise.reject(new ToolplaneError('CANCELLED', 'the consumer is stopping'));
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject, signal });
      // One listener per signal, not per item: a consumer hands every message the same one.
      if (signal !== undefined && !this.watched.has(signal)) {
        this.watched.add(signal);
        signal.addEventListener('abort', () => this.dropWaiting(signal), { once: true });
      }
      this.schedule();
    });
  }

  private dropWaiting(signal: AbortSignal): void {
    const cancelled = new ToolplaneError('CANCELLED', 'the consumer is stopping');
    for (let i = this.waiting.length - 1; i >= 0; i -= 1) {
      const entry = this.waiting[i] as Waiting<T>;
      if (entry.signal !== signal) continue;
      this.waiting.splice(i, 1);
      entry.reject(cancelled);
    }
  }

  /** Refuses new items and rejects every waiting one with `reason`; the batch being written finishes. Resolves after it. */
  async close(reason: ToolplaneError): Promise<void> {
    this.closed ??= reason;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.soon = false;
    for (const entry of this.waiting.splice(0)) entry.reject(reason);
    await this.writing;
  }

  private schedule(): void {
    if (this.writing || this.closed) return;
    if (this.waiting.length >= this.options.maxItems && !this.soon) {
      // Full: write on the next turn of the event loop, once the messages of the current fetch are all queued.
      if (this.timer) clearTimeout(this.timer);
      this.soon = true;
      this.timer = setTimeout(() => this.flush(), 0);
      return;
    }
    this.timer ??= setTimeout(() => this.flush(), this.options.lingerMs);
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.soon = false;
    if (this.writing || this.waiting.length === 0) return;
    const batch = this.takeBatch();
    this.writing = this.writeBatch(batch).finally(() => {
      this.writing = undefined;
      if (this.waiting.length > 0) this.schedule();
    });
  }

  /**
   * The next batch: the oldest items up to the limit, plus every other waiting item of the groups they belong
   * to, so that a group already here is written in one batch rather than split across two (a call's events
   * cost one write per batch they appear in).
   */
  private takeBatch(): Waiting<T>[] {
    const batch = this.waiting.splice(0, this.options.maxItems);
    if (this.waiting.length === 0) return batch;
    const groups = new Set(batch.map((entry) => this.options.groupOf(entry.item)));
    const rest: Waiting<T>[] = [];
    for (const entry of this.waiting) (groups.has(this.options.groupOf(entry.item)) ? batch : rest).push(entry);
    this.waiting.splice(0, this.waiting.length, ...rest);
    return batch;
  }

  private async writeBatch(batch: readonly Waiting<T>[]): Promise<void> {
    try {
      await this.options.write(batch.map((entry) => entry.item));
      for (const entry of batch) entry.resolve();
      return;
    } catch (error) {
      if (batch.length === 1 || !this.options.isolate(error)) {
        for (const entry of batch) entry.reject(error);
        return;
      }
    }
    // Isolate what failed: one bad group must not hold every other message of the batch back.
    const groups = new Map<string, Waiting<T>[]>();
    for (const entry of batch) {
      const key = this.options.groupOf(entry.item);
      groups.set(key, [...(groups.get(key) ?? []), entry]);
    }
    for (const group of groups.values()) {
      try {
        await this.options.write(group.map((entry) => entry.item));
        for (const entry of group) entry.resolve();
      } catch (error) {
        for (const entry of group) entry.reject(error);
      }
    }
  }
}
