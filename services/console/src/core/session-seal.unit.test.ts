import { describe, expect, it } from 'vitest';
import { sealSession, unsealSession } from './session-seal.js';

const key = new Uint8Array(32).fill(1);
const iv = new Uint8Array(12).fill(2);
const session = { sessionId: 'AAAAAAAAAAAAAAAAAAAAAAAA', token: 'header.payload.signature' };

function flipped(value: string, at: number): string {
  const bytes = Buffer.from(value.slice(3), 'base64url');
  bytes[at] = (bytes[at] ?? 0) ^ 1;
  return `v1.${bytes.toString('base64url')}`;
}

describe('the session cookie seal', () => {
  it('opens what it sealed, and the token is not readable in the cookie', () => {
    const sealed = sealSession(key, session, iv);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('payload');
    expect(Buffer.from(sealed.slice(3), 'base64url').toString('latin1')).not.toContain('payload');
    expect(unsealSession(key, sealed)).toEqual(session);
  });

  it('refuses any changed byte: IV, ciphertext or tag', () => {
    const sealed = sealSession(key, session, iv);
    const length = Buffer.from(sealed.slice(3), 'base64url').length;
    for (let at = 0; at < length; at += 1) expect(unsealSession(key, flipped(sealed, at))).toBeUndefined();
  });

  it('refuses another key, a cut or padded value, another version and garbage', () => {
    const sealed = sealSession(key, session, iv);
    expect(unsealSession(new Uint8Array(32).fill(9), sealed)).toBeUndefined();
    expect(unsealSession(key, sealed.slice(0, -4))).toBeUndefined();
    expect(unsealSession(key, `${sealed}AAAA`)).toBeUndefined();
    expect(unsealSession(key, sealed.replace(/^v1\./, 'v2.'))).toBeUndefined();
    expect(unsealSession(key, 'v1.!!!')).toBeUndefined();
    expect(unsealSession(key, undefined)).toBeUndefined();
    expect(unsealSession(key, '')).toBeUndefined();
  });

  it('never seals with a wrong-sized IV', () => {
    expect(() => sealSession(key, session, new Uint8Array(8))).toThrow(RangeError);
  });
});
