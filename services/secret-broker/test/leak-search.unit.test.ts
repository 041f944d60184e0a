import { describe, expect, it } from 'vitest';
import { findLeaks, leakNeedles } from './leak-search.js';

const secret = 'tp-canary-0123456789abcdef/+=&%';

describe('the leak search', () => {
  it('finds a secret verbatim, URL-encoded, JSON-escaped and in hex', () => {
    for (const text of [`x ${secret} y`, `a=${encodeURIComponent(secret)}`, `s=${new URLSearchParams({ s: secret }).toString().slice(2)}`, JSON.stringify({ k: `"${secret}"` }), Buffer.from(secret).toString('hex')]) {
      expect(findLeaks([secret], new Map([['text', text]]))).not.toEqual([]);
    }
  });

  it('finds a secret base64-encoded inside a larger value at every alignment, in both alphabets', () => {
    for (const prefix of ['', 'a', 'ab', 'abc', '{"token":"']) {
      const value = Buffer.from(`${prefix}${secret}","kind":"bearer"}`);
      for (const encoding of ['base64', 'base64url'] as const) {
        expect(findLeaks([secret], new Map([['text', `stored: ${value.toString(encoding)}`]]))).not.toEqual([]);
      }
    }
  });

  it('finds nothing in text without the secret, and every needle is long enough to be specific', () => {
    expect(findLeaks([secret], new Map([['text', 'tp-canary-0123456789 and other things']]))).toEqual([]);
    for (const needle of leakNeedles(secret)) expect(needle.length).toBeGreaterThanOrEqual(12);
  });
});
