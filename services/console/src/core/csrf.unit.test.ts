import { describe, expect, it } from 'vitest';
import { consoleOrigins, csrfToken, csrfValid, sameOrigin } from './csrf.js';

const key = new Uint8Array(32).fill(7);
const otherKey = new Uint8Array(32).fill(8);

describe('CSRF tokens', () => {
  it('accepts the token of the session it was derived for', () => {
    expect(csrfValid(key, 'session', 'session-a', csrfToken(key, 'session', 'session-a'))).toBe(true);
  });

  it('refuses a missing, empty, altered, other-session, other-key or other-purpose token', () => {
    const token = csrfToken(key, 'session', 'session-a');
    expect(csrfValid(key, 'session', 'session-a', undefined)).toBe(false);
    expect(csrfValid(key, 'session', 'session-a', '')).toBe(false);
    expect(csrfValid(key, 'session', 'session-a', `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`)).toBe(false);
    expect(csrfValid(key, 'session', 'session-b', token)).toBe(false);
    expect(csrfValid(otherKey, 'session', 'session-a', token)).toBe(false);
    expect(csrfValid(key, 'sign-in', 'session-a', token)).toBe(false);
    expect(csrfValid(key, 'session', '', csrfToken(key, 'session', ''))).toBe(false);
  });
});

describe('the origin check', () => {
  const origins = consoleOrigins(undefined, '127.0.0.1:7108');

  it('lets same-origin requests and browsers that say nothing through', () => {
    expect(sameOrigin({ fetchSite: 'same-origin', origin: 'http://127.0.0.1:7108' }, origins)).toBe(true);
    expect(sameOrigin({ fetchSite: undefined, origin: undefined }, origins)).toBe(true);
  });

  it('takes the opaque origin its own no-referrer forms send only when Sec-Fetch-Site vouches for it', () => {
    expect(sameOrigin({ fetchSite: 'same-origin', origin: 'null' }, origins)).toBe(true);
    expect(sameOrigin({ fetchSite: 'cross-site', origin: 'null' }, origins)).toBe(false);
  });

  it('refuses cross-site requests and foreign or opaque origins', () => {
    expect(sameOrigin({ fetchSite: 'cross-site', origin: undefined }, origins)).toBe(false);
    expect(sameOrigin({ fetchSite: 'same-site', origin: 'http://127.0.0.1:7108' }, origins)).toBe(false);
    expect(sameOrigin({ fetchSite: undefined, origin: 'http://evil.example' }, origins)).toBe(false);
    expect(sameOrigin({ fetchSite: undefined, origin: 'null' }, origins)).toBe(false);
  });

  it('trusts only the public URL’s origin when one is configured', () => {
    const configured = consoleOrigins('https://console.example.com', 'evil.example');
    expect(sameOrigin({ fetchSite: undefined, origin: 'https://console.example.com' }, configured)).toBe(true);
    expect(sameOrigin({ fetchSite: undefined, origin: 'https://evil.example' }, configured)).toBe(false);
  });
});
