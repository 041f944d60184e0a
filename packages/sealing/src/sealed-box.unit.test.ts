import { describe, expect, it } from 'vitest';
import type { SealedBox } from '@toolplane/contracts';
import { toBase64Url } from './base64url.js';
import { generateRecipientKeyPair, importPrivateKey, importPublicKey } from './keys.js';
import { openSealedBox, sealToRecipient } from './sealed-box.js';
import { isSealingFailure, type SealingFailure } from './sealing-error.js';
import { flipBit } from '../test/flip-bit.js';

const adapter = generateRecipientKeyPair();
const intruder = generateRecipientKeyPair();
const context = { leaseId: '1f6b9a52-5f3c-4f52-9d3e-0c8f6a7b2e10', invocationId: '7d0c5a9e-1f0b-4c3e-9a57-1c2d3e4f5a6b' };
const secret = Buffer.from('{"kind":"bearer","token":"tp-canary-sealed"}', 'utf8');
const seal = () => sealToRecipient({ keyId: 'tool-adapter', publicKey: adapter.publicKey }, secret, context);

function failure(run: () => unknown): SealingFailure | 'none' | 'other' {
  try {
    run();
    return 'none';
  } catch (error) {
    for (const candidate of ['malformed', 'unknown-key', 'wrong-recipient', 'decryption-failed'] as const) if (isSealingFailure(error, candidate)) return candidate;
    return 'other';
  }
}

describe('sealed boxes', () => {
  it('open with the recipient private key and the same context', () => {
    const box = seal();
    expect(box.recipientKeyId).toBe('tool-adapter');
    expect(openSealedBox({ keyId: 'tool-adapter', privateKey: adapter.privateKey }, box, context).equals(secret)).toBe(true);
  });

  it('accept KeyObjects as well as encoded keys', () => {
    const box = sealToRecipient({ keyId: 'a', publicKey: importPublicKey(adapter.publicKey) }, secret, context);
    expect(openSealedBox({ keyId: 'a', privateKey: importPrivateKey(adapter.privateKey) }, box, context).equals(secret)).toBe(true);
  });

  it('use a fresh ephemeral key every time and never contain the plaintext', () => {
    const a = seal();
    const b = seal();
    expect(a.ephemeralPublicKey).not.toBe(b.ephemeralPublicKey);
    expect(a.ciphertext).not.toBe(b.ciphertext);
    const wire = JSON.stringify(a);
    for (const form of [secret.toString('utf8'), secret.toString('base64'), toBase64Url(secret), 'tp-canary-sealed']) expect(wire).not.toContain(form);
  });

  it('do not open with another private key', () => {
    expect(failure(() => openSealedBox({ keyId: 'tool-adapter', privateKey: intruder.privateKey }, seal(), context))).toBe('decryption-failed');
  });

  it('do not open for another recipient key id', () => {
    expect(failure(() => openSealedBox({ keyId: 'audit', privateKey: adapter.privateKey }, seal(), context))).toBe('wrong-recipient');
  });

  it('do not open when the recipient key id on the box was changed, even by a holder of the same key', () => {
    const relabelled = { ...seal(), recipientKeyId: 'other-id' };
    expect(failure(() => openSealedBox({ keyId: 'other-id', privateKey: adapter.privateKey }, relabelled, context))).toBe('decryption-failed');
  });

  it.each([
    ['another lease', { ...context, leaseId: '00000000-0000-4000-8000-000000000000' }],
    ['another invocation', { ...context, invocationId: '00000000-0000-4000-8000-000000000000' }],
    ['an extra binding', { ...context, toolId: 'x.y' }],
    ['a missing binding', { leaseId: context.leaseId }],
  ])('do not open for %s', (_label, otherContext) => {
    expect(failure(() => openSealedBox({ keyId: 'tool-adapter', privateKey: adapter.privateKey }, seal(), otherContext))).toBe('decryption-failed');
  });

  it.each(['iv', 'ciphertext', 'tag'] as const)('detect tampering with %s', (field) => {
    const box = seal();
    expect(failure(() => openSealedBox({ keyId: 'tool-adapter', privateKey: adapter.privateKey }, { ...box, [field]: flipBit(box[field], 2) }, context))).toBe('decryption-failed');
  });

  it('detect a substituted ephemeral key', () => {
    const box = { ...seal(), ephemeralPublicKey: generateRecipientKeyPair().publicKey };
    expect(failure(() => openSealedBox({ keyId: 'tool-adapter', privateKey: adapter.privateKey }, box, context))).toBe('decryption-failed');
  });

  it.each([
    ['a wrong algorithm', (b: SealedBox) => ({ ...b, alg: 'none' })],
    ['a short ephemeral key', (b: SealedBox) => ({ ...b, ephemeralPublicKey: b.ephemeralPublicKey.slice(2) })],
    ['a missing ciphertext', (b: SealedBox) => ({ ...b, ciphertext: undefined })],
    ['an unknown field', (b: SealedBox) => ({ ...b, note: 'x' })],
  ])('refuse a malformed box: %s', (_label, mutate) => {
    const box = mutate(seal()) as unknown as SealedBox;
    expect(failure(() => openSealedBox({ keyId: 'tool-adapter', privateKey: adapter.privateKey }, box, context))).toBe('malformed');
  });

  it('refuse to seal to a low-order public key or a malformed one', () => {
    expect(failure(() => sealToRecipient({ keyId: 'x', publicKey: toBase64Url(Buffer.alloc(32)) }, secret, context))).toBe('malformed');
    expect(failure(() => sealToRecipient({ keyId: 'x', publicKey: 'nope' }, secret, context))).toBe('malformed');
  });

  it('refuse a context that is not a map of strings', () => {
    expect(failure(() => sealToRecipient({ keyId: 'x', publicKey: adapter.publicKey }, secret, { n: 1 } as unknown as Record<string, string>))).toBe('malformed');
  });
});
