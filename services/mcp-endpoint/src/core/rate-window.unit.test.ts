import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideRate, isIdle, type RateWindowConfig, type RateWindowState } from './rate-window.js';

/** Runs requests at the given times (ascending); the times of the admitted ones and the refusals' retry delays. */
function run(times: readonly number[], config: RateWindowConfig): { admitted: number[]; refused: { at: number; retryAfterMs: number }[] } {
  let state: RateWindowState | undefined;
  const admitted: number[] = [];
  const refused: { at: number; retryAfterMs: number }[] = [];
  for (const at of times) {
    const decision = decideRate(state, at, config);
    state = decision.state;
    if (decision.admitted) admitted.push(at);
    else refused.push({ at, retryAfterMs: decision.retryAfterMs });
  }
  return { admitted, refused };
}

const configs = fc.record({ limit: fc.integer({ min: 1, max: 20 }), windowMs: fc.integer({ min: 10, max: 10_000 }), slices: fc.integer({ min: 1, max: 10 }) });
const arrivals = (max: number) => fc.array(fc.integer({ min: 0, max }), { maxLength: 300 }).map((times) => [...times].sort((a, b) => a - b));

describe('the sliding rate window', () => {
  it('never admits more than the limit in any window of the configured length', () => {
    fc.assert(
      fc.property(configs, arrivals(50_000), (config, times) => {
        const { admitted } = run(times, config);
        // The busiest window ends at an admission: count the admissions in (at - windowMs, at] for each.
        for (let end = 0; end < admitted.length; end += 1) {
          const at = admitted[end] ?? 0;
          const inWindow = admitted.filter((time) => time > at - config.windowMs && time <= at).length;
          expect(inWindow).toBeLessThanOrEqual(config.limit);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('admits a request once the retry delay of a refusal has passed', () => {
    fc.assert(
      fc.property(configs, arrivals(20_000), (config, times) => {
        let state: RateWindowState | undefined;
        for (const at of times) {
          const decision = decideRate(state, at, config);
          state = decision.state;
          if (!decision.admitted) {
            expect(decision.retryAfterMs).toBeGreaterThan(0);
            expect(decision.retryAfterMs).toBeLessThanOrEqual(config.windowMs + config.windowMs / config.slices);
            expect(decideRate(state, at + decision.retryAfterMs, config).admitted).toBe(true);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('admits at the retry delay when the slice length is not a whole number of milliseconds (9978 ms in 9 slices)', () => {
    const config = { limit: 1, windowMs: 9_978, slices: 9 };
    const first = decideRate(undefined, 5_544, config);
    const refused = decideRate(first.state, 5_544, config);
    expect(refused.admitted).toBe(false);
    if (refused.admitted) return;
    expect(decideRate(refused.state, 5_544 + refused.retryAfterMs - 1, config).admitted).toBe(false);
    expect(decideRate(refused.state, 5_544 + refused.retryAfterMs, config).admitted).toBe(true);
  });

  it('admits the limit at once, refuses the next, and forgets a key after a quiet window', () => {
    const config = { limit: 3, windowMs: 1_000, slices: 10 };
    const { admitted, refused } = run([0, 1, 2, 3], config);
    expect(admitted).toEqual([0, 1, 2]);
    expect(refused).toEqual([{ at: 3, retryAfterMs: 1_097 }]);
    const state = decideRate(undefined, 0, config).state;
    expect(isIdle(state, 1_000, config)).toBe(false);
    expect(isIdle(state, 1_100, config)).toBe(true);
  });
});
