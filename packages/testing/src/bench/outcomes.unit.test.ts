import { describe, expect, it } from 'vitest';
import { countLost, firstSuccess, type OutcomeLookup } from './outcomes.js';

describe('countLost', () => {
  it('counts the keys without an outcome, and failed lookups apart, asking once when the deadline has passed', async () => {
    const asked: string[] = [];
    const answers: Record<string, OutcomeLookup> = { a: 'outcome', b: 'none', c: 'error', d: 'outcome' };
    const result = await countLost(Object.keys(answers), (key) => {
      asked.push(key);
      return Promise.resolve(answers[key] ?? 'none');
    });
    expect(result).toEqual({ lost: 2, lookupErrors: 1 });
    expect(asked.sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('asks again until the outcome comes before the deadline', async () => {
    let lookups = 0;
    const result = await countLost(['late'], () => Promise.resolve((lookups += 1) < 3 ? 'none' : 'outcome'), Date.now() + 5_000);
    expect(result).toEqual({ lost: 0, lookupErrors: 0 });
    expect(lookups).toBe(3);
  });

  it('counts a lookup that throws as a failed lookup', async () => {
    expect(await countLost(['x'], () => Promise.reject(new Error('no responders')))).toEqual({ lost: 1, lookupErrors: 1 });
  });
});

describe('firstSuccess', () => {
  it('resolves once an attempt succeeds', async () => {
    let attempts = 0;
    await firstSuccess(() => Promise.resolve((attempts += 1) === 2), () => undefined);
    expect(attempts).toBe(2);
  });

  it('fails after its timeout naming the last failure', async () => {
    await expect(firstSuccess(() => Promise.resolve(false), () => 'AUTHORIZATION_DENIED: not in the profile', 300)).rejects.toThrow(/AUTHORIZATION_DENIED: not in the profile/);
  });
});
