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
  /**
   * Whether a group's items so far may be written now (a call that settled); a group that is not waits for more
   * of its items, up to `holdMs`, so that it is written once rather than once per batch it would straddle.
   */
  readonly ready?: (items: readonly T[]) => boolean;
  /** The longest a group that is not ready waits (from its first item). */
  readonly holdMs?: number;
  /** The most items held in groups that are not ready: beyond it the oldest are written anyway. */
  readonly maxHeld?: number;
}

interface Waiting<T> {
  /** Arrival order: a batch keeps it (the audit chain appends in it). */
  readonly order: number;
  readonly item: T;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  readonly signal: AbortSignal | undefined;
}

interface Group<T> {
  readonly key: string;
  readonly firstAt: number;
  entries: Waiting<T>[];
  ready: boolean;
}

/** A queue of items written in batches, one batch at a time. */
export class BatchQueue<T> {
  // Groups in the order of their first item (a Map keeps insertion order).
  private readonly groups = new Map<string, Group<T>>();
  private count = 0;
  private readyCount = 0;
  private arrivals = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = 0;
  private soon = false;
  private writing: Promise<void> | undefined;
  private closed: ToolplaneError | undefined;
  private readonly watched = new WeakSet<AbortSignal>();

  constructor(private readonly options: BatchQueueOptions<T>) {}

  /** Items waiting for a batch (not counting the one being written). */
  get size(): number {
    return this.count;
  }

  /**
   * Queues an item; resolves once a batch holding it was written. If `signal` aborts while the item still
   * waits (its consumer is stopping), it leaves the queue and rejects with CANCELLED, so its message is redelivered.
   */
  add(item: T, signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(this.closed);
    if (signal?.aborted) return Promise.reject(new ToolplaneError('CANCELLED', 'the consumer is stopping'));
    return new Promise<void>((resolve, reject) => {
      const key = this.options.groupOf(item);
      let group = this.groups.get(key);
      if (group === undefined) {
        group = { key, firstAt: performance.now(), entries: [], ready: false };
        this.groups.set(key, group);
      }
      this.arrivals += 1;
      group.entries.push({ order: this.arrivals, item, resolve, reject, signal });
      this.count += 1;
      this.refresh(group, group.entries.length - 1);
      // One listener per signal, not per item: a consumer hands every message the same one.
      if (signal !== undefined && !this.watched.has(signal)) {
        this.watched.add(signal);
        signal.addEventListener('abort', () => this.dropWaiting(signal), { once: true });
      }
      this.schedule();
    });
  }

  /** Re-decides whether a group is ready after its entries changed (it had `previousSize` before). */
  private refresh(group: Group<T>, previousSize: number): void {
    if (group.ready) this.readyCount -= previousSize;
    group.ready = this.options.ready === undefined || this.options.ready(group.entries.map((entry) => entry.item));
    if (group.ready) this.readyCount += group.entries.length;
  }

  private remove(group: Group<T>): void {
    this.groups.delete(group.key);
    this.count -= group.entries.length;
    if (group.ready) this.readyCount -= group.entries.length;
  }

  private dropWaiting(signal: AbortSignal): void {
    const cancelled = new ToolplaneError('CANCELLED', 'the consumer is stopping');
    for (const group of [...this.groups.values()]) {
      const dropped = group.entries.filter((entry) => entry.signal === signal);
      if (dropped.length === 0) continue;
      if (dropped.length === group.entries.length) {
        this.remove(group);
      } else {
        const previousSize = group.entries.length;
        group.entries = group.entries.filter((entry) => entry.signal !== signal);
        this.count -= dropped.length;
        this.refresh(group, previousSize);
      }
      for (const entry of dropped) entry.reject(cancelled);
    }
  }

  /** Refuses new items and rejects every waiting one with `reason`; the batch being written finishes. Resolves after it. */
  async close(reason: ToolplaneError): Promise<void> {
    this.closed ??= reason;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.soon = false;
    const groups = [...this.groups.values()];
    this.groups.clear();
    this.count = 0;
    this.readyCount = 0;
    for (const group of groups) for (const entry of group.entries) entry.reject(reason);
    await this.writing;
  }

  private schedule(): void {
    if (this.writing || this.closed) return;
    if ((this.readyCount >= this.options.maxItems || this.count - this.readyCount > this.maxHeld()) && !this.soon) {
      // Full: write on the next turn of the event loop, once the messages of the current fetch are all queued.
      if (this.timer) clearTimeout(this.timer);
      this.soon = true;
      this.timer = setTimeout(() => this.flush(), 0);
      return;
    }
    // A ready item waits at most the linger, even when a timer for a held group's hold is set further out.
    if (this.timer !== undefined && (this.readyCount === 0 || this.timerAt <= performance.now() + this.options.lingerMs)) return;
    this.setTimer(this.options.lingerMs);
  }

  private setTimer(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = performance.now() + ms;
    this.timer = setTimeout(() => this.flush(), ms);
  }

  private maxHeld(): number {
    return this.options.maxHeld ?? Number.POSITIVE_INFINITY;
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.soon = false;
    if (this.writing || this.count === 0) return;
    const batch = this.takeBatch();
    if (batch.length === 0) {
      // Only groups still held: come back when the oldest one's hold runs out.
      const oldest = this.groups.values().next();
      this.setTimer(oldest.done ? this.options.lingerMs : Math.max(1, oldest.value.firstAt + (this.options.holdMs ?? 0) - performance.now()));
      return;
    }
    this.writing = this.writeBatch(batch).finally(() => {
      this.writing = undefined;
      if (this.count > 0) this.schedule();
    });
  }

  /**
   * The next batch: whole groups in the order of their first item, up to the limit (a group already here is
   * written in one batch rather than split across two: a call's events cost one write per batch they appear
   * in), skipping groups that are not ready and still within their hold, unless too many are held.
   */
  private takeBatch(): Waiting<T>[] {
    const batch: Waiting<T>[] = [];
    const holdMs = this.options.holdMs ?? 0;
    const now = performance.now();
    let held = this.count - this.readyCount;
    for (const group of [...this.groups.values()]) {
      if (batch.length >= this.options.maxItems) break;
      const due = group.ready || now - group.firstAt >= holdMs || held > this.maxHeld();
      if (!due) continue;
      if (!group.ready) held -= group.entries.length;
      this.remove(group);
      batch.push(...group.entries);
    }
    return batch.sort((x, y) => x.order - y.order);
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
