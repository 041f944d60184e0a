import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { EncryptedEnvelope } from '@toolplane/contracts';
import { toBase64Url } from './base64url.js';
import { decryptAtRest, encryptAtRest, isWrappedWithCurrentKek, MAX_PLAINTEXT_BYTES, rewrapAtRest } from './envelope.js';
import { Keyring } from './keyring.js';
import { isSealingFailure, type SealingFailure } from './sealing-error.js';
import { flipBit } from '../test/flip-bit.js';

const key1 = toBase64Url(randomBytes(32));
const key2 = toBase64Url(randomBytes(32));
const keyring1 = new Keyring({ current: 'k1', keys: { k1: key1 } });
const context = { tenant: 'acme', workspace: 'main', connectionId: '5b0d6f38-6f0e-4c43-8e36-2d9a1f0f9a11' };
const secret = Buffer.from('tp-canary-envelope-secret', 'utf8');

function failure(run: () => unknown): SealingFailure | 'none' | 'other' {
  try {
    run();
    return 'none';
  } catch (error) {
    for (const candidate of ['malformed', 'unknown-key', 'wrong-recipient', 'decryption-failed'] as const) if (isSealingFailure(error, candidate)) return candidate;
    return 'other';
  }
}

describe('envelope encryption at rest', () => {
  it('round-trips under the current KEK and names that KEK', () => {
    const envelope = encryptAtRest(keyring1, secret, context);
    expect(envelope.kekId).toBe('k1');
    expect(decryptAtRest(keyring1, envelope, context).equals(secret)).toBe(true);
  });

  it('uses a fresh data key and nonce every time and never contains the plaintext', () => {
    const a = encryptAtRest(keyring1, secret, context);
    const b = encryptAtRest(keyring1, secret, context);
    expect(a.wrappedKey).not.toBe(b.wrappedKey);
    expect(a.iv).not.toBe(b.iv);
    expect(a.ciphertext).not.toBe(b.ciphertext);
    const stored = JSON.stringify(a);
    expect(stored).not.toContain(secret.toString('utf8'));
    expect(stored).not.toContain(secret.toString('base64'));
    expect(stored).not.toContain(secret.toString('base64url'));
  });

  it('round-trips an empty plaintext and refuses an oversized one', () => {
    expect(decryptAtRest(keyring1, encryptAtRest(keyring1, Buffer.alloc(0), context), context)).toHaveLength(0);
    expect(failure(() => encryptAtRest(keyring1, Buffer.alloc(MAX_PLAINTEXT_BYTES + 1), context))).toBe('malformed');
  });

  it.each([
    ['another connection', { ...context, connectionId: 'b2d6c1a0-0000-4000-8000-000000000001' }],
    ['another workspace', { ...context, workspace: 'other' }],
    ['another tenant', { ...context, tenant: 'globex' }],
    ['an extra binding', { ...context, purpose: 'x' }],
    ['a missing binding', { tenant: context.tenant, workspace: context.workspace }],
  ])('refuses to decrypt a ciphertext copied to %s', (_label, otherContext) => {
    const envelope = encryptAtRest(keyring1, secret, context);
    expect(failure(() => decryptAtRest(keyring1, envelope, otherContext))).toBe('decryption-failed');
  });

  it.each(['wrappedKey', 'iv', 'ciphertext', 'tag'] as const)('detects tampering with %s', (field) => {
    const envelope = encryptAtRest(keyring1, secret, context);
    const tampered: EncryptedEnvelope = { ...envelope, [field]: flipBit(envelope[field], 3) };
    expect(failure(() => decryptAtRest(keyring1, tampered, context))).toBe('decryption-failed');
  });

  it('refuses an envelope relabelled with another KEK id, and one whose KEK bytes differ', () => {
    const envelope = encryptAtRest(keyring1, secret, context);
    const both = new Keyring({ current: 'k1', keys: { k1: key1, k2: key2 } });
    expect(failure(() => decryptAtRest(both, { ...envelope, kekId: 'k2' }, context))).toBe('decryption-failed');
    const sameIdOtherKey = new Keyring({ current: 'k1', keys: { k1: key2 } });
    expect(failure(() => decryptAtRest(sameIdOtherKey, envelope, context))).toBe('decryption-failed');
  });

  it('refuses an envelope whose KEK is not configured', () => {
    const envelope = encryptAtRest(keyring1, secret, context);
    expect(failure(() => decryptAtRest(new Keyring({ current: 'k2', keys: { k2: key2 } }), envelope, context))).toBe('unknown-key');
  });

  it.each([
    ['a wrong version', (e: EncryptedEnvelope) => ({ ...e, v: 2 })],
    ['a truncated wrapped key', (e: EncryptedEnvelope) => ({ ...e, wrappedKey: e.wrappedKey.slice(4) })],
    ['a non-base64 ciphertext', (e: EncryptedEnvelope) => ({ ...e, ciphertext: '***' })],
    ['a missing tag', (e: EncryptedEnvelope) => ({ ...e, tag: undefined })],
  ])('refuses a malformed envelope: %s', (_label, mutate) => {
    const envelope = mutate(encryptAtRest(keyring1, secret, context)) as unknown as EncryptedEnvelope;
    expect(failure(() => decryptAtRest(keyring1, envelope, context))).toBe('malformed');
  });

  describe('KEK rotation', () => {
    const rotated = new Keyring({ current: 'k2', keys: { k1: key1, k2: key2 } });
    const retired = new Keyring({ current: 'k2', keys: { k2: key2 } });

    it('keeps old envelopes readable once a new KEK is current, and wraps new ones with it', () => {
      const old = encryptAtRest(keyring1, secret, context);
      expect(decryptAtRest(rotated, old, context).equals(secret)).toBe(true);
      expect(isWrappedWithCurrentKek(rotated, old)).toBe(false);
      const fresh = encryptAtRest(rotated, secret, context);
      expect(fresh.kekId).toBe('k2');
      expect(isWrappedWithCurrentKek(rotated, fresh)).toBe(true);
    });

    it('rewraps an envelope under the current KEK without touching the data, so the old KEK can go', () => {
      const old = encryptAtRest(keyring1, secret, context);
      const rewrapped = rewrapAtRest(rotated, old, context);
      expect(rewrapped.kekId).toBe('k2');
      expect(rewrapped.ciphertext).toBe(old.ciphertext);
      expect(rewrapped.wrappedKey).not.toBe(old.wrappedKey);
      expect(decryptAtRest(retired, rewrapped, context).equals(secret)).toBe(true);
      expect(failure(() => decryptAtRest(retired, old, context))).toBe('unknown-key');
      expect(rewrapAtRest(rotated, rewrapped, context)).toEqual(rewrapped);
    });

    it('refuses to rewrap for another context or a tampered ciphertext', () => {
      const old = encryptAtRest(keyring1, secret, context);
      expect(failure(() => rewrapAtRest(rotated, old, { ...context, connectionId: 'x' }))).toBe('decryption-failed');
      expect(failure(() => rewrapAtRest(rotated, { ...old, ciphertext: flipBit(old.ciphertext) }, context))).toBe('decryption-failed');
    });
  });
});
