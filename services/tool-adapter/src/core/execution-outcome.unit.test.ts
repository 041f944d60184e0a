import { describe, expect, it } from 'vitest';
import { at, later } from '../../test/core-fixtures.js';
import { executionEnding, retryDecision, type RetryInput } from './execution-outcome.js';

const upstream = { code: 'TEMPORARY_UNAVAILABLE', message: 'upstream 503', retryable: true } as const;

describe('executionEnding', () => {
  it('observes a returned result', () => {
    expect(executionEnding({ result: 'returned', output: {} }, 'WRITE')).toEqual({ state: 'Observed' });
  });

  it('fails a call whose error came before any effect', () => {
    expect(executionEnding({ result: 'failed', failure: upstream, effect: 'none' }, 'WRITE')).toEqual({ state: 'Failed', failure: upstream });
  });

  it('makes a write whose effect is unknown Uncertain with UNKNOWN_OUTCOME; a READ merely fails', () => {
    expect(executionEnding({ result: 'failed', failure: upstream, effect: 'possible' }, 'WRITE')).toMatchObject({ state: 'Uncertain', failure: { code: 'UNKNOWN_OUTCOME', retryable: false } });
    expect(executionEnding({ result: 'failed', failure: upstream, effect: 'possible' }, 'READ')).toEqual({ state: 'Failed', failure: upstream });
  });

  it('treats a timeout after the request was sent as UNKNOWN_OUTCOME for writes, TIMEOUT for reads', () => {
    expect(executionEnding({ result: 'timed_out', requestSent: true }, 'DESTRUCTIVE')).toMatchObject({ state: 'Uncertain', failure: { code: 'UNKNOWN_OUTCOME' } });
    expect(executionEnding({ result: 'timed_out', requestSent: true }, 'READ')).toMatchObject({ state: 'Failed', failure: { code: 'TIMEOUT', retryable: true } });
    expect(executionEnding({ result: 'timed_out', requestSent: false }, 'WRITE')).toMatchObject({ state: 'Cancelled', failure: { code: 'TIMEOUT' } });
  });

  it('cancels a call interrupted before its request left; after, a write is Uncertain', () => {
    expect(executionEnding({ result: 'cancelled', requestSent: false }, 'WRITE')).toMatchObject({ state: 'Cancelled', failure: { code: 'CANCELLED' } });
    expect(executionEnding({ result: 'cancelled', requestSent: true }, 'WRITE')).toMatchObject({ state: 'Uncertain', failure: { code: 'UNKNOWN_OUTCOME' } });
    expect(executionEnding({ result: 'cancelled', requestSent: true }, 'READ')).toMatchObject({ state: 'Cancelled' });
  });
});

describe('retryDecision', () => {
  const base: RetryInput = {
    effectiveClass: 'READ',
    idempotency: 'NATURAL',
    retryPolicy: { maxAttempts: 3, initialBackoffMs: 100, maxBackoffMs: 250 },
    failure: upstream,
    requestSent: true,
    tries: 1,
    now: at,
    deadline: later(10_000),
    jitter: 1,
  };

  it('retries a READ on TIMEOUT and TEMPORARY_UNAVAILABLE with capped exponential backoff', () => {
    expect(retryDecision(base)).toEqual({ retry: true, delayMs: 100 });
    expect(retryDecision({ ...base, tries: 2 })).toEqual({ retry: true, delayMs: 200 });
    expect(retryDecision({ ...base, tries: 2, jitter: 0 })).toEqual({ retry: true, delayMs: 100 });
    expect(retryDecision({ ...base, failure: { code: 'TIMEOUT', message: 't', retryable: true } })).toMatchObject({ retry: true });
    expect(retryDecision({ ...base, retryPolicy: { ...base.retryPolicy, maxAttempts: 5 }, tries: 4 })).toEqual({ retry: true, delayMs: 250 });
  });

  it('stops at the retry policy’s attempts and at the deadline', () => {
    expect(retryDecision({ ...base, tries: 3 })).toMatchObject({ retry: false });
    expect(retryDecision({ ...base, deadline: later(50) })).toMatchObject({ retry: false, reason: expect.stringContaining('deadline') as string });
  });

  it('does not retry other failures', () => {
    for (const code of ['INVALID_ARGUMENT', 'AUTHORIZATION_DENIED', 'RATE_LIMITED', 'UNKNOWN_OUTCOME'] as const) {
      expect(retryDecision({ ...base, failure: { code, message: 'x', retryable: code === 'RATE_LIMITED' } }).retry).toBe(false);
    }
  });

  it('never retries a non-idempotent write blindly, but does when its request never left or the provider dedupes', () => {
    const write = { ...base, effectiveClass: 'WRITE' as const, idempotency: 'NONE' as const };
    expect(retryDecision(write)).toMatchObject({ retry: false, reason: expect.stringContaining('never retried blindly') as string });
    expect(retryDecision({ ...write, requestSent: false })).toMatchObject({ retry: true });
    expect(retryDecision({ ...write, idempotency: 'SUPPORTED_WITH_KEY' })).toMatchObject({ retry: true });
  });
});
