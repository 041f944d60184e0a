import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RATE_LOG_SLOTS, applicableRateLimits, rateSlotMs, slidingWindowDecision, type RateLog } from './rate-limit.js';

const scope = { tenant: 'acme', workspace: 'main' };

/** Runs calls at `times` (in order) through one counter; the times of the admitted ones. */
function admittedOf(limit: { limit: number; windowMs: number }, times: readonly number[]): number[] {
  let log: RateLog | undefined;
  const admitted: number[] = [];
  for (const now of times) {
    const verdict = slidingWindowDecision(limit, log, now);
    log = verdict.log;
    if (verdict.allowed) admitted.push(now);
  }
  return admitted;
}

/** The most admitted calls in any window of `windowMs` (one ending at each admitted call is the worst). */
function busiestWindow(admitted: readonly number[], windowMs: number): number {
  return Math.max(0, ...admitted.map((end) => admitted.filter((t) => t > end - windowMs && t <= end).length));
}

describe('slidingWindowDecision', () => {
  const limit = { limit: 2, windowMs: 1000 };

  it('admits up to the limit in the window that ends now, then refuses until the oldest call leaves it', () => {
    const first = slidingWindowDecision(limit, undefined, 10_250);
    expect(first).toEqual({ allowed: true, log: { slots: [[10_250, 1]] } });
    const second = slidingWindowDecision(limit, first.log, 10_600);
    expect(second).toEqual({ allowed: true, log: { slots: [[10_250, 1], [10_600, 1]] } });
    expect(slidingWindowDecision(limit, second.log, 10_900)).toEqual({ allowed: false, retryAfterMs: 350, log: second.log });
    expect(slidingWindowDecision(limit, second.log, 11_249)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(slidingWindowDecision(limit, second.log, 11_250)).toEqual({ allowed: true, log: { slots: [[10_600, 1], [11_250, 1]] } });
  });

  it('refuses the burst a fixed window lets through at its edge', () => {
    // Two calls just before an aligned edge and two just after: a fixed window of 1000 ms admits all four.
    expect(admittedOf(limit, [10_998, 10_999, 11_000, 11_001])).toEqual([10_998, 10_999]);
  });

  it('keeps a large limit to whole slots of the window, and its log small', () => {
    const big = { limit: 1_000, windowMs: 64_000 };
    expect(rateSlotMs(big)).toBe(1_000);
    let log: RateLog | undefined;
    for (let now = 0; now < 200_000; now += 50) log = slidingWindowDecision(big, log, now).log;
    expect(log?.slots.length).toBeLessThanOrEqual(RATE_LOG_SLOTS + 1);
  });

  it('counts a log written by a clock that runs ahead until it leaves the window by this clock', () => {
    const ahead = slidingWindowDecision(limit, undefined, 20_000).log;
    const behind = slidingWindowDecision(limit, ahead, 19_500);
    // Counted into the newest slot, so the log stays ordered.
    expect(behind).toEqual({ allowed: true, log: { slots: [[20_000, 2]] } });
    expect(slidingWindowDecision(limit, behind.log, 19_600)).toMatchObject({ allowed: false, retryAfterMs: 1_400 });
  });

  it('never admits more than the limit in any window of its length, and admits once the window is clear (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 150 }),
        fc.integer({ min: 1, max: 5_000 }),
        fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 400 }),
        fc.integer({ min: 0, max: 10_000_000 }),
        (max, windowMs, gaps, start) => {
          const rule = { limit: max, windowMs };
          let now = start;
          const times = gaps.map((gap) => (now += gap));
          const admitted = admittedOf(rule, times);
          expect(busiestWindow(admitted, windowMs)).toBeLessThanOrEqual(max);
          // A call after a whole window plus a slot with no admitted call is admitted.
          const last = times.at(-1) ?? start;
          const quiet = last + windowMs + rateSlotMs(rule);
          let log: RateLog | undefined;
          for (const t of times) log = slidingWindowDecision(rule, log, t).log;
          expect(slidingWindowDecision(rule, log, quiet).allowed).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never admits more than the limit in any window, in the times the log records, when calls arrive out of order (property)', () => {
    // Calls take their time before they reach the counter, so one that read the clock earlier may be counted later.
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 150 }), fc.integer({ min: 1, max: 3_000 }), fc.array(fc.integer({ min: 0, max: 4_000 }), { minLength: 1, maxLength: 400 }), (max, windowMs, times) => {
        const rule = { limit: max, windowMs };
        let log: RateLog | undefined;
        const recorded: number[] = [];
        for (const now of times) {
          const verdict = slidingWindowDecision(rule, log, now);
          if (verdict.allowed) {
            // The slot whose count grew is the time the call was counted at.
            const before = new Map(log?.slots.map(([start, calls]) => [start, calls]));
            const grown = verdict.log.slots.find(([start, calls]) => calls > (before.get(start) ?? 0));
            recorded.push(grown?.[0] ?? Number.NaN);
          }
          log = verdict.log;
        }
        expect(busiestWindow(recorded, windowMs)).toBeLessThanOrEqual(max);
      }),
      { numRuns: 300 },
    );
  });

  it('a refused call is admitted once its retryAfterMs has passed (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 5_000 }), fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 300 }), (max, windowMs, gaps) => {
        const rule = { limit: max, windowMs };
        let log: RateLog | undefined;
        let now = 1_000_000;
        for (const gap of gaps) {
          now += gap;
          const verdict = slidingWindowDecision(rule, log, now);
          if (!verdict.allowed) {
            expect(slidingWindowDecision(rule, verdict.log, now + verdict.retryAfterMs).allowed).toBe(true);
            if (verdict.retryAfterMs > 1) expect(slidingWindowDecision(rule, verdict.log, now + verdict.retryAfterMs - 1).allowed).toBe(false);
          }
          log = verdict.log;
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('applicableRateLimits', () => {
  it('keys descriptor limits per workspace and tenant rules per tenant, by tool, agent, or both', () => {
    const checks = applicableRateLimits({
      scope,
      toolId: 'github.create_issue',
      actor: 'agent:a1',
      descriptorLimits: [
        { per: 'TOOL', limit: 10, windowMs: 1000 },
        { per: 'AGENT', limit: 5, windowMs: 1000 },
      ],
      tenantRules: [
        { tools: 'github.*', per: 'TOOL', limit: 100, windowMs: 60_000 },
        { tools: '**', per: 'AGENT', limit: 1000, windowMs: 60_000 },
        { tools: 'github.**', per: 'AGENT_TOOL', limit: 50, windowMs: 60_000 },
        { tools: 'slack.*', per: 'TOOL', limit: 1, windowMs: 1000 },
      ],
    });
    expect(checks.map((c) => c.key)).toEqual([
      'd|acme|main|github.create_issue|tool|10/1000',
      'd|acme|main|github.create_issue|agent|agent:a1|5/1000',
      't|acme|github.*|TOOL|100/60000|tool|github.create_issue',
      't|acme|**|AGENT|1000/60000|agent|agent:a1',
      't|acme|github.**|AGENT_TOOL|50/60000|agent|agent:a1|github.create_issue',
    ]);
    expect(checks.map((c) => c.source)).toEqual(['descriptor', 'descriptor', 'tenant-policy', 'tenant-policy', 'tenant-policy']);
  });
});
