// Rate-limit counters shared by two replicas through a real JetStream KV bucket: many calls at once from both never
// admit more than the limit in any window of its length (at a window's edge included), a full window refuses, and a
// counter frees up as its calls leave the window.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMessaging, openKv, type Messaging } from '@toolplane/messaging';
import { RateCounters, StoredRateLog, rateCounterBucket, rateCounterEntryKey } from '../src/adapters/rate-counters.js';
import { slidingWindowDecision, type RateLimitCheck } from '../src/core/rate-limit.js';
import { startNatsServer, type NatsServer } from './adapter-harness.js';

let nats: NatsServer;
const connections: Messaging[] = [];
let replicas: RateCounters[];

beforeAll(async () => {
  nats = await startNatsServer();
  replicas = [];
  for (const name of ['rate-replica-a', 'rate-replica-b']) {
    const messaging = await connectMessaging({ url: nats.url, name });
    connections.push(messaging);
    replicas.push(await RateCounters.open(messaging));
  }
}, 60_000);

afterAll(async () => {
  for (const messaging of connections) await messaging.drain();
  await nats?.stop();
});

function check(limit: number, windowMs: number): RateLimitCheck {
  return { key: `t|acme|test.*|TOOL|${limit}/${windowMs}|tool|${randomUUID()}`, limit, windowMs, source: 'tenant-policy', description: 'test' };
}

/**
 * One call as the invocation handler counts it: load, decide with the pure core, claim; a lost claim decides again
 * on what the next load returns. True when the call was admitted.
 */
async function governedCall(counters: RateCounters, limit: RateLimitCheck, nowMs: number): Promise<boolean> {
  for (let attempt = 0; attempt < 8; attempt += 1) {
    const logs = await counters.load([limit], nowMs);
    const verdict = slidingWindowDecision(limit, logs.get(limit.key), nowMs);
    if (!verdict.allowed) return false;
    if (await counters.claim([{ key: limit.key, log: verdict.log, limit: limit.limit, windowMs: limit.windowMs, atMs: nowMs }])) return true;
  }
  throw new Error('too contended');
}

/**
 * Watches a counter's entry and turns every write into the times it recorded admitted calls at (the slots whose
 * count grew): what the replicas together counted, whatever the order their calls reached the bucket in.
 */
async function recordedAdmissions(messaging: Messaging, counterKey: string): Promise<{ times: number[]; stop: () => void }> {
  const kv = await openKv(messaging, rateCounterBucket, StoredRateLog);
  const watch = await kv.watch({ key: rateCounterEntryKey(counterKey) });
  const times: number[] = [];
  let previous = new Map<number, number>();
  void (async () => {
    for await (const change of watch) {
      if (change.kind !== 'put') continue;
      const current = new Map(change.value.slots.map(([start, calls]) => [start, calls] as const));
      for (const [start, calls] of current) for (let n = previous.get(start) ?? 0; n < calls; n += 1) times.push(start);
      previous = current;
    }
  })();
  return { times, stop: () => watch.stop() };
}

/** The most admitted calls in any window of `windowMs`. */
function busiestWindow(admitted: readonly number[], windowMs: number): number {
  const sorted = [...admitted].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last += 1) {
    while ((sorted[first] ?? 0) <= (sorted[last] ?? 0) - windowMs) first += 1;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

describe('rate-limit counters across two replicas', () => {
  it('admits exactly the limit of a burst from both replicas at once, then refuses', { timeout: 30_000 }, async () => {
    const limit = check(25, 60_000);
    const now = Date.now();
    const outcomes = await Promise.all(Array.from({ length: 200 }, (_, i) => governedCall(replicas[i % 2] as RateCounters, limit, now)));
    expect(outcomes.filter(Boolean)).toHaveLength(25);
    expect(await governedCall(replicas[0] as RateCounters, limit, now + 10)).toBe(false);
    expect(await governedCall(replicas[1] as RateCounters, limit, now + 59_999)).toBe(false);
    // Once the calls leave the window, calls are admitted again, on either replica.
    expect(await governedCall(replicas[1] as RateCounters, limit, now + 60_000)).toBe(true);
  });

  it('never admits more than the limit in any window of its length while both replicas call without pause', { timeout: 60_000 }, async () => {
    // 20 calls per 500 ms, counted exactly (1 ms slots); and a limit above RATE_LOG_SLOTS, counted in slots.
    for (const limit of [check(20, 500), check(150, 500)]) {
      const recorded = await recordedAdmissions(connections[0] as Messaging, limit.key);
      let admitted = 0;
      let refused = 0;
      const until = Date.now() + 2_200;
      await Promise.all(
        Array.from({ length: 16 }, async (_, worker) => {
          const counters = replicas[worker % 2] as RateCounters;
          while (Date.now() < until) {
            const now = Date.now();
            if (await governedCall(counters, limit, now)) admitted += 1;
            else refused += 1;
            // A refusal needs no I/O; yield as a real caller (a reply, the next request) would, or nothing else runs.
            await new Promise((resolve) => setImmediate(resolve));
          }
        }),
      );
      // Every admission the callers saw is one the bucket recorded.
      await expect.poll(() => recorded.times.length, { timeout: 10_000 }).toBe(admitted);
      recorded.stop();
      const busiest = busiestWindow(recorded.times, limit.windowMs);
      console.info(`limit ${limit.limit}/${limit.windowMs} ms, 16 callers on 2 replicas for 2.2 s: ${admitted} admitted, ${refused} refused, busiest window ${busiest}`);
      expect(busiest).toBeLessThanOrEqual(limit.limit);
      // The limit binds without starving: over 2.2 s a 500 ms window fills about four times.
      expect(admitted).toBeGreaterThanOrEqual(limit.limit * 3);
      expect(admitted).toBeLessThanOrEqual(limit.limit * 5);
    }
  });

  it('refuses the second half of a burst that straddles an aligned window edge', { timeout: 30_000 }, async () => {
    // A fixed window of 1000 ms would admit 10 just before the edge and 10 just after it.
    const limit = check(10, 1_000);
    const edge = Math.ceil(Date.now() / 1_000) * 1_000 + 1_000;
    const before = await Promise.all(Array.from({ length: 10 }, (_, i) => governedCall(replicas[i % 2] as RateCounters, limit, edge - 2)));
    const after = await Promise.all(Array.from({ length: 10 }, (_, i) => governedCall(replicas[i % 2] as RateCounters, limit, edge + 2)));
    expect(before.filter(Boolean)).toHaveLength(10);
    expect(after.filter(Boolean)).toHaveLength(0);
  });
});
