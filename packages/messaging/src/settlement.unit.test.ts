import { describe, expect, it } from 'vitest';
import { ToolplaneError } from '@toolplane/contracts';
import { exhaustedOnArrival, isRetryableError, retryDelayMs, settle, workingIntervalMs, type RetryPolicy } from './settlement.js';

const policy: RetryPolicy = { maxDeliver: 3, backoffMs: [100, 1_000] };
const failed = (error: unknown) => ({ ok: false as const, error });

describe('retryDelayMs', () => {
  it('steps through the backoff by delivery count and repeats the last step', () => {
    expect([1, 2, 3, 9].map((n) => retryDelayMs(n, [100, 1_000]))).toEqual([100, 1_000, 1_000, 1_000]);
  });

  it('is zero without a backoff', () => {
    expect(retryDelayMs(4, [])).toBe(0);
  });
});

describe('isRetryableError', () => {
  it('decides by the taxonomy code', () => {
    expect(isRetryableError(new ToolplaneError('TEMPORARY_UNAVAILABLE', 'down'))).toBe(true);
    expect(isRetryableError(new ToolplaneError('CONFLICT', 'no'))).toBe(false);
  });

  it('recognises a plain object with a code, whatever created it', () => {
    expect(isRetryableError({ code: 'RATE_LIMITED', message: 'slow down' })).toBe(true);
  });

  it('honours the error’s own retryable flag', () => {
    expect(isRetryableError(new ToolplaneError('TIMEOUT', 'gave up', { retryable: false }))).toBe(false);
  });

  it('does not retry unknown failures, even when their text sounds transient', () => {
    expect(isRetryableError(new Error('TEMPORARY_UNAVAILABLE: try again'))).toBe(false);
    expect(isRetryableError({ code: 'ECONNRESET', message: 'socket hang up' })).toBe(false);
  });
});

describe('settle', () => {
  it('acks a handler that resolved, even while stopping', () => {
    expect(settle({ ok: true }, 1, false, policy)).toEqual({ kind: 'ack' });
    expect(settle({ ok: true }, 1, true, policy)).toEqual({ kind: 'ack' });
  });

  it('naks a retryable failure with the backoff of its delivery', () => {
    expect(settle(failed(new ToolplaneError('TIMEOUT', 'slow')), 2, false, policy)).toMatchObject({ kind: 'retry', delayMs: 1_000, reason: { code: 'TIMEOUT' } });
  });

  it('dead-letters a retryable failure on the last allowed delivery', () => {
    expect(settle(failed(new ToolplaneError('TIMEOUT', 'slow')), 3, false, policy)).toMatchObject({ kind: 'dead-letter', reason: { code: 'TIMEOUT' } });
  });

  it('dead-letters a non-retryable failure at once, with its code', () => {
    expect(settle(failed(new ToolplaneError('CONFLICT', 'taken')), 1, false, policy)).toEqual({
      kind: 'dead-letter',
      reason: { code: 'CONFLICT', message: 'taken', retryable: false },
    });
  });

  it('dead-letters an unknown failure as INTERNAL without leaking its text', () => {
    expect(settle(failed(new TypeError('x is undefined')), 1, false, policy)).toEqual({
      kind: 'dead-letter',
      reason: { code: 'INTERNAL', message: 'internal error', retryable: false },
    });
  });

  it('requeues any failure while stopping, so an abort is never mistaken for poison', () => {
    expect(settle(failed(new ToolplaneError('CANCELLED', 'stopping')), 3, true, policy)).toMatchObject({ kind: 'requeue' });
  });
});

describe('exhaustedOnArrival', () => {
  it('lets deliveries up to maxDeliver through and stops the one after', () => {
    expect(exhaustedOnArrival(3, policy)).toBeUndefined();
    expect(exhaustedOnArrival(4, policy)).toMatchObject({ code: 'INTERNAL', retryable: false });
  });
});

describe('workingIntervalMs', () => {
  it('stays within half the shortest ack wait in force', () => {
    expect(workingIntervalMs(30_000)).toBe(15_000);
    expect(workingIntervalMs(30_000, [4_000, 60_000])).toBe(2_000);
    expect(workingIntervalMs(50)).toBe(100);
  });
});
