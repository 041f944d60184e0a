import { describe, expect, it } from 'vitest';
import { tokenEndpointError, tokenExpiry, tokenIsFresh } from './token-rules.js';

const now = new Date('2026-11-29T17:00:00.000Z');
const inSeconds = (seconds: number) => new Date(now.getTime() + seconds * 1000);

describe('access token freshness', () => {
  it('keeps a token while more than the margin of its lifetime is left, and refreshes it before it expires', () => {
    expect(tokenIsFresh(inSeconds(3600), now, 60_000)).toBe(true);
    expect(tokenIsFresh(inSeconds(61), now, 60_000)).toBe(true);
    expect(tokenIsFresh(inSeconds(60), now, 60_000)).toBe(false);
    expect(tokenIsFresh(inSeconds(30), now, 60_000)).toBe(false);
    expect(tokenIsFresh(inSeconds(-1), now, 0)).toBe(false);
  });

  it('computes the expiry from expires_in, and none when the endpoint gives none', () => {
    expect(tokenExpiry(now, 3600)).toEqual(inSeconds(3600));
    expect(tokenExpiry(now, undefined)).toBeUndefined();
    expect(tokenExpiry(now, 0)).toBeUndefined();
  });
});

describe('token endpoint failures', () => {
  it.each([
    [{ kind: 'unreachable' as const }, 'TEMPORARY_UNAVAILABLE'],
    [{ kind: 'timeout' as const }, 'TIMEOUT'],
    [{ kind: 'oauth-error' as const, status: 401, error: 'invalid_client' }, 'AUTHENTICATION_FAILED'],
    [{ kind: 'oauth-error' as const, status: 400, error: 'invalid_scope' }, 'INVALID_ARGUMENT'],
    [{ kind: 'oauth-error' as const, status: 503, error: 'temporarily_unavailable' }, 'TEMPORARY_UNAVAILABLE'],
    [{ kind: 'oauth-error' as const, status: 429, error: 'slow_down' }, 'RATE_LIMITED'],
    [{ kind: 'http-status' as const, status: 500 }, 'TEMPORARY_UNAVAILABLE'],
    [{ kind: 'http-status' as const, status: 401 }, 'AUTHENTICATION_FAILED'],
    [{ kind: 'invalid-response' as const }, 'TEMPORARY_UNAVAILABLE'],
    [{ kind: 'unsupported-token-type' as const }, 'INVALID_ARGUMENT'],
  ])('maps %j to %s', (problem, code) => {
    expect(tokenEndpointError('crm', problem).code).toBe(code);
  });

  it('repeats only RFC 6749 error codes, never free text from the endpoint', () => {
    const error = tokenEndpointError('crm', { kind: 'oauth-error', status: 400, error: 'client tp-canary-secret is wrong' });
    expect(error.message).not.toContain('tp-canary');
    expect(tokenEndpointError('crm', { kind: 'oauth-error', status: 401, error: 'invalid_client' }).message).toContain('invalid_client');
  });
});
