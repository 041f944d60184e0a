import { ToolFailure, ToolplaneError } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { toToolFailure, toolResultError } from './tool-failure.js';

describe('toolResultError', () => {
  it('is undefined for a successful result', () => {
    expect(toolResultError({ isError: false, content: [{ type: 'text', text: 'ok' }] })).toBeUndefined();
  });

  it('maps an isError result to a non-retryable failure that keeps the tool text out of the message', () => {
    const error = toolResultError({ isError: true, content: [{ type: 'text', text: 'token abc123 rejected' }] });
    expect(error?.code).toBe('INTERNAL');
    expect(error?.retryable).toBe(false);
    expect(error?.message).not.toContain('abc123');
    expect(error?.details).toMatchObject({ providerErrorType: 'ToolResultIsError', providerMessage: 'token abc123 rejected' });
    expect(toolResultError({ isError: true, content: [] }, { code: 'INVALID_ARGUMENT' })?.code).toBe('INVALID_ARGUMENT');
  });
});

describe('toToolFailure', () => {
  it('produces a valid contract ToolFailure with the provider error type', () => {
    const failure = toToolFailure(new ToolplaneError('RATE_LIMITED', 'slow down', { details: { providerErrorType: 'HttpStatus(429)', httpStatus: 429 } }));
    expect(ToolFailure.parse(failure)).toEqual({ code: 'RATE_LIMITED', message: 'slow down', retryable: true, providerErrorType: 'HttpStatus(429)' });
  });

  it('turns anything else into INTERNAL without leaking its text', () => {
    expect(toToolFailure(new Error('password=hunter2'))).toEqual({ code: 'INTERNAL', message: 'internal error', retryable: false });
  });
});
