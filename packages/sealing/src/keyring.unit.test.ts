import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { toBase64Url } from './base64url.js';
import { encodeKeyringConfig, Keyring } from './keyring.js';
import { isSealingFailure } from './sealing-error.js';

const k1 = toBase64Url(randomBytes(32));
const k2 = randomBytes(32).toString('base64');

function refusal(text: string): Error {
  try {
    Keyring.fromJson(text);
  } catch (error) {
    expect(isSealingFailure(error, 'malformed')).toBe(true);
    return error as Error;
  }
  throw new Error('the keyring was accepted');
}

describe('Keyring', () => {
  it('parses the configuration form with several keys, one current', () => {
    const keyring = Keyring.fromJson(JSON.stringify({ current: 'k2', keys: { k1, k2 } }));
    expect(keyring.currentId).toBe('k2');
    expect(keyring.ids()).toEqual(['k1', 'k2']);
    expect(keyring.has('k1')).toBe(true);
    expect(keyring.has('k3')).toBe(false);
  });

  it('round-trips through encodeKeyringConfig', () => {
    const raw = randomBytes(32);
    expect(Keyring.fromJson(encodeKeyringConfig('a', { a: raw })).ids()).toEqual(['a']);
  });

  it('never shows key material when serialized or inspected', () => {
    const keyring = Keyring.fromJson(JSON.stringify({ current: 'k1', keys: { k1, k2 } }));
    expect(JSON.stringify(keyring)).toBe('{"current":"k1","ids":["k1","k2"]}');
    const shown = inspect(keyring, { showHidden: true, depth: 5 });
    expect(shown).not.toContain(k1);
    expect(shown).not.toContain(k2);
    expect(shown).not.toContain(Buffer.from(k1, 'base64url').toString('hex').slice(0, 16));
  });

  it.each([
    ['not JSON', `{"current":"k1","keys":{"k1":"${k1}"`],
    ['not an object', '[]'],
    ['without current', JSON.stringify({ keys: { k1 } })],
    ['with a current key that is not in keys', JSON.stringify({ current: 'k9', keys: { k1 } })],
    ['without keys', JSON.stringify({ current: 'k1', keys: {} })],
    ['with a short key', JSON.stringify({ current: 'k1', keys: { k1: toBase64Url(randomBytes(16)) } })],
    ['with a key that is not base64', JSON.stringify({ current: 'k1', keys: { k1: `${k1.slice(0, 40)}#!*` } })],
    ['with a bad key id', JSON.stringify({ current: 'k 1', keys: { 'k 1': k1 } })],
    ['with a key that is not a string', JSON.stringify({ current: 'k1', keys: { k1: 7 } })],
    ['with unexpected fields', JSON.stringify({ current: 'k1', keys: { k1 }, extra: true })],
  ])('refuses a configuration %s, without repeating key material', (_label, text) => {
    const error = refusal(text);
    expect(error.message).not.toContain(k1);
    expect(error.message).not.toContain(k1.slice(0, 20));
  });
});
