import { ToolplaneError, hasErrorCode, throwIfAborted } from '@toolplane/contracts';
import { openKv, type KvBucketSpec, type Messaging, type TypedKv } from '@toolplane/messaging';
import { z } from 'zod';
import type { RateCounterUpdate } from '../core/policy-evaluator.js';
import { RATE_LOG_SLOTS, slidingWindowDecision, type RateLimitCheck, type RateLog } from '../core/rate-limit.js';

// Rate-limit counters in a JetStream KV bucket shared by every replica: one entry per counter holding its sliding
// log (core/rate-limit.ts), replaced by compare-and-set on the entry's revision, so of two replicas that read the
// same revision exactly one counts its call; the other reads again and decides again with the same pure function.
// Within a replica, the calls counted against one counter at the same time go through one lane: their decisions
// are applied in order to the latest log this replica knows and written as one update, so concurrent calls of a
// replica never race each other for the entry, and a burst of N calls costs one write, not N. The log a lane last
// wrote or read is kept to answer `load` without a read; it can only be behind (other replicas only add calls),
// so a decision made on it can admit a call the write then refuses (re-decided, never over the limit), never the
// other way round.

/** The rate-limit bucket: one entry per counter (its key is the counter's, token-encoded). */
export const rateCounterBucket: KvBucketSpec = {
  name: 'TOOL_ADAPTER_RATE_COUNTERS',
  description: 'Sliding logs of the calls each rate-limit counter admitted; written by the tool adapter.',
  history: 1,
  storage: 'file',
};

/** A counter's stored log. */
export const StoredRateLog = z.strictObject({
  slots: z.array(z.tuple([z.number().int(), z.number().int().positive()])).max(RATE_LOG_SLOTS + 1),
});
export type StoredRateLog = z.infer<typeof StoredRateLog>;

// Lanes (and the logs they remember) kept for this many counters; an idle one beyond it is forgotten.
const maxLanes = 10_000;
// A batch whose write keeps losing to other replicas is re-decided this often, then refused as contended; between
// tries it waits a random while that grows, so two replicas writing one counter stop losing to each other in turn
// (and the calls that arrive meanwhile join the next batch).
const writeAttempts = 16;
const maxBackoffMs = 20;

/** The bucket key of a counter: counter keys hold `|`, `*` and ids, which KV keys do not allow. */
export function rateCounterEntryKey(counterKey: string): string {
  return Buffer.from(counterKey, 'utf8').toString('base64url');
}

interface Known {
  readonly log: RateLog;
  /** 0 when no entry exists (create), else the revision an update must name. */
  readonly revision: number;
}

interface Waiter {
  readonly update: RateCounterUpdate;
  readonly resolve: (counted: boolean) => void;
  readonly reject: (error: unknown) => void;
}

/** The calls waiting to be counted against one counter, and the latest log this replica knows of it. */
class Lane {
  known: Known | undefined;
  reading: Promise<Known> | undefined;
  readonly queue: Waiter[] = [];
  draining = false;
}

/** Loads and advances rate-limit counters. */
export class RateCounters {
  readonly #kv: TypedKv<StoredRateLog>;
  readonly #lanes = new Map<string, Lane>();

  constructor(kv: TypedKv<StoredRateLog>) {
    this.#kv = kv;
  }

  /** Opens (creating when missing) the counters' bucket. */
  static async open(messaging: Messaging, options: { readonly signal?: AbortSignal } = {}): Promise<RateCounters> {
    return new RateCounters(await openKv(messaging, rateCounterBucket, StoredRateLog, options));
  }

  /** The current log of each check, by key: the one this replica knows, else read from the bucket. */
  async load(checks: readonly RateLimitCheck[], _nowMs: number, signal?: AbortSignal): Promise<Map<string, RateLog>> {
    const logs = new Map<string, RateLog>();
    for (const check of checks) logs.set(check.key, (await this.#known(this.#lane(check.key), check.key, signal)).log);
    return logs;
  }

  /**
   * Counts the call against each counter it was admitted by, deciding again on the latest log; false when a
   * counter is full after all (evaluate again: the next `load` has the log that refused it). A call counted by an
   * earlier counter of the same call stays counted: the error is on the side of fewer calls, never more.
   */
  async claim(updates: readonly RateCounterUpdate[], signal?: AbortSignal): Promise<boolean> {
    for (const update of updates) {
      throwIfAborted(signal, 'counting the call against its rate limits');
      const lane = this.#lane(update.key);
      const counted = await new Promise<boolean>((resolve, reject) => {
        lane.queue.push({ update, resolve, reject });
        if (!lane.draining) void this.#drain(lane, update.key);
      });
      if (!counted) return false;
    }
    return true;
  }

  #lane(key: string): Lane {
    let lane = this.#lanes.get(key);
    if (lane !== undefined) {
      // Most recently used last, so the oldest idle lanes are the ones forgotten.
      this.#lanes.delete(key);
      this.#lanes.set(key, lane);
      return lane;
    }
    lane = new Lane();
    this.#lanes.set(key, lane);
    if (this.#lanes.size > maxLanes) {
      for (const [oldKey, old] of this.#lanes) {
        if (this.#lanes.size <= maxLanes) break;
        if (!old.draining && old.reading === undefined) this.#lanes.delete(oldKey);
      }
    }
    return lane;
  }

  async #known(lane: Lane, key: string, signal?: AbortSignal): Promise<Known> {
    if (lane.known !== undefined) return lane.known;
    lane.reading ??= this.#read(key, signal)
      .then((known) => {
        lane.known ??= known;
        return lane.known;
      })
      .finally(() => (lane.reading = undefined));
    return lane.reading;
  }

  async #read(key: string, signal?: AbortSignal): Promise<Known> {
    const found = await this.#kv.get(rateCounterEntryKey(key), signal ? { signal } : {});
    return found === undefined ? { log: { slots: [] }, revision: 0 } : { log: found.value, revision: found.revision };
  }

  /** Decides and writes the lane's waiting calls in batches until none waits. */
  async #drain(lane: Lane, key: string): Promise<void> {
    lane.draining = true;
    try {
      while (lane.queue.length > 0) {
        const batch = lane.queue.splice(0);
        try {
          const counted = await this.#countBatch(lane, key, batch);
          batch.forEach((waiter, i) => waiter.resolve(counted[i] === true));
        } catch (error) {
          lane.known = undefined;
          for (const waiter of batch) waiter.reject(error);
        }
      }
    } finally {
      lane.draining = false;
    }
  }

  async #countBatch(lane: Lane, key: string, batch: readonly Waiter[]): Promise<boolean[]> {
    let known = await this.#known(lane, key);
    for (let attempt = 1; attempt <= writeAttempts; attempt += 1) {
      let log = known.log;
      const counted = batch.map(({ update }) => {
        const verdict = slidingWindowDecision(update, log, update.atMs);
        log = verdict.log;
        return verdict.allowed;
      });
      if (!counted.includes(true)) return counted;
      try {
        const value = { slots: log.slots.map(([start, calls]) => [start, calls] as [number, number]) };
        const revision = known.revision === 0 ? await this.#kv.create(rateCounterEntryKey(key), value) : await this.#kv.update(rateCounterEntryKey(key), value, known.revision);
        lane.known = { log, revision };
        return counted;
      } catch (error) {
        if (!hasErrorCode(error) || error.code !== 'CONFLICT') throw error;
        // Another replica counted first: read what it left (afresh: a read in flight may predate its write) and decide again.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(2 ** attempt, maxBackoffMs)));
        known = await this.#read(key);
        lane.known = known;
      }
    }
    throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the rate-limit counter is too contended across replicas; retrying');
  }
}
