import { describe, expect, it } from 'vitest';
import { TokenRateLimits } from './token-rate-limits.js';

describe('per-token rate limits', () => {
  it('counts each token on its own, and admits again after the retry delay', () => {
    let now = 0;
    const limits = new TokenRateLimits({ limit: 2, windowMs: 1_000, maxKeys: 10, now: () => now });
    expect([limits.admit('a'), limits.admit('a')]).toEqual([{ admitted: true }, { admitted: true }]);
    const refused = limits.admit('a');
    expect(refused).toMatchObject({ admitted: false });
    expect(limits.admit('b')).toEqual({ admitted: true });
    now += refused.admitted ? 0 : refused.retryAfterMs;
    expect(limits.admit('a')).toEqual({ admitted: true });
  });

  it('keeps at most maxKeys keys, idle ones forgotten first', () => {
    let now = 0;
    const limits = new TokenRateLimits({ limit: 1, windowMs: 1_000, maxKeys: 3, now: () => now });
    limits.admit('old-1');
    limits.admit('old-2');
    now = 5_000;
    limits.admit('busy');
    limits.admit('new');
    expect(limits.size).toBe(2);
    // 'busy' is still counted: refused within its window.
    expect(limits.admit('busy')).toMatchObject({ admitted: false });
    for (let i = 0; i < 10; i += 1) limits.admit(`flood-${i}`);
    expect(limits.size).toBeLessThanOrEqual(3);
  });
});
