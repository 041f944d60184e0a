import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { SealingError } from './sealing-error.js';

/** The AES-GCM nonce and tag lengths used everywhere here, in bytes. */
export const IV_BYTES = 12;
export const TAG_BYTES = 16;

/** One AES-256-GCM encryption: a fresh random nonce, the ciphertext and the tag. */
export interface GcmOutput {
  readonly iv: Buffer;
  readonly ciphertext: Buffer;
  readonly tag: Buffer;
}

/** Encrypts with AES-256-GCM under `key`, authenticating `aad`; the nonce is random (keys are never reused 2^32 times). */
export function gcmEncrypt(key: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): GcmOutput {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv, ciphertext, tag: cipher.getAuthTag() };
}

/** Decrypts and authenticates; any mismatch (tampering, wrong key, wrong aad) is a `decryption-failed` SealingError. */
export function gcmDecrypt(key: Uint8Array, input: GcmOutput, aad: Uint8Array, what: string): Buffer {
  if (input.iv.length !== IV_BYTES || input.tag.length !== TAG_BYTES) throw new SealingError('malformed', `${what}: bad nonce or tag length`);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, input.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad);
    decipher.setAuthTag(input.tag);
    return Buffer.concat([decipher.update(input.ciphertext), decipher.final()]);
  } catch {
    throw new SealingError('decryption-failed', `${what} could not be decrypted: it was altered, or the key or context is wrong`);
  }
}
