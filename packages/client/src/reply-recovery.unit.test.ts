import { describe, expect, it } from 'vitest';
import { recoveryDelayMs, unsettledError } from './reply-recovery.js';

const seen = { toolCallId: 'tc-1', invocationId: '5b0a3c1e-7d2f-4a8e-9c1b-2e4f6a8b0c2d', attempt: 1 };

describe('recoveryDelayMs', () => {
  it('doubles from the initial pause and stays at the cap', () => {
    const backoff = { initialMs: 100, maxMs: 1_000 };
    expect([0, 1, 2, 3, 4, 50].map((attempt) => recoveryDelayMs(attempt, backoff))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });
});

describe('unsettledError', () => {
  it('is UNKNOWN_OUTCOME once the tool was called, naming the call', () => {
    const error = unsettledError('k1', { ...seen, state: 'Executing' }, 2_000);
    expect(error).toMatchObject({ code: 'UNKNOWN_OUTCOME', retryable: false, details: { idempotencyKey: 'k1', toolCallId: 'tc-1', state: 'Executing' } });
  });

  it('is a retryable TIMEOUT when the tool was not called yet or the call was never seen', () => {
    expect(unsettledError('k1', { ...seen, state: 'Validated' }, 2_000)).toMatchObject({ code: 'TIMEOUT', retryable: true, details: { state: 'Validated' } });
    expect(unsettledError('k1', undefined, 2_000)).toMatchObject({ code: 'TIMEOUT', retryable: true, details: { idempotencyKey: 'k1' } });
  });

  it('is a retryable APPROVAL_PENDING, naming the key and the approval, when the call waits for a human', () => {
    const approvalId = '0f6d9a52-3c1b-4e7a-8d2f-6b5e4c3a2d1e';
    expect(unsettledError('k1', { ...seen, state: 'AwaitingApproval', approvalId }, 2_000)).toMatchObject({
      code: 'APPROVAL_PENDING',
      retryable: true,
      details: { idempotencyKey: 'k1', approvalId, state: 'AwaitingApproval' },
    });
    expect(unsettledError('k1', { ...seen, state: 'AwaitingApproval' }, 2_000).details).not.toHaveProperty('approvalId');
  });

  it('refuses an ended call, which is not unsettled', () => {
    expect(() => unsettledError('k1', { ...seen, state: 'Observed' }, 2_000)).toThrow(RangeError);
  });
});
