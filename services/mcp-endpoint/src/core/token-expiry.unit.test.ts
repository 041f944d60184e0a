import { describe, expect, it } from 'vitest';
import { tokenExpiresAtMs } from './token-expiry.js';

const jwt = (payload: unknown) => `e30.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.sig`;

describe('a token’s expiry', () => {
  it('is its exp in milliseconds, or undefined when it states none or is no JWT', () => {
    expect(tokenExpiresAtMs(jwt({ exp: 1_800_000_000 }))).toBe(1_800_000_000_000);
    expect(tokenExpiresAtMs(jwt({ sub: 'x' }))).toBeUndefined();
    expect(tokenExpiresAtMs(jwt({ exp: '1800000000' }))).toBeUndefined();
    expect(tokenExpiresAtMs('opaque')).toBeUndefined();
    expect(tokenExpiresAtMs('a.!!!.c')).toBeUndefined();
  });
});
