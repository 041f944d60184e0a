import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { fromBase64, toBase64Url } from './base64url.js';
import { generateKek, generateRecipientKeyPair, importPrivateKey, importPublicKey, publicKeyOf } from './keys.js';
import { isSealingFailure } from './sealing-error.js';

describe('key helpers', () => {
  it('generates 32-byte KEKs as unpadded base64url, different every time', () => {
    const a = generateKek();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(fromBase64(a, 'kek', 32)).toHaveLength(32);
    expect(generateKek()).not.toBe(a);
  });

  it('generates X25519 recipient key pairs whose halves belong together', () => {
    const pair = generateRecipientKeyPair();
    expect(pair.publicKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(pair.privateKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(publicKeyOf(pair.privateKey)).toBe(pair.publicKey);
    expect(importPublicKey(pair.publicKey).asymmetricKeyType).toBe('x25519');
    expect(importPrivateKey(pair.privateKey).type).toBe('private');
  });

  it('accepts standard base64 with padding as well as base64url', () => {
    const raw = randomBytes(32);
    expect(fromBase64(raw.toString('base64'), 'k', 32).equals(raw)).toBe(true);
    expect(fromBase64(toBase64Url(raw), 'k', 32).equals(raw)).toBe(true);
  });

  it.each([
    ['not base64', '!!!!'],
    ['too short', toBase64Url(randomBytes(31))],
    ['too long', toBase64Url(randomBytes(33))],
    ['whitespace inside', `${toBase64Url(randomBytes(16))} ${toBase64Url(randomBytes(16))}`],
    ['non-canonical trailing bits', 'AB'],
  ])('refuses a key that is %s, without echoing it', (_label, text) => {
    let caught: unknown;
    try {
      importPublicKey(text, 'the key of tool-adapter');
    } catch (error) {
      caught = error;
    }
    expect(isSealingFailure(caught, 'malformed')).toBe(true);
    expect((caught as Error).message).toContain('the key of tool-adapter');
    if (text.length > 3) expect((caught as Error).message).not.toContain(text);
  });
});
