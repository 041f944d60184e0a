import { randomBytes } from 'node:crypto';
import { EncryptedEnvelope } from '@toolplane/contracts';
import { associatedData, checkContext, type SealingContext } from './associated-data.js';
import { gcmDecrypt, gcmEncrypt, IV_BYTES, TAG_BYTES } from './aes-gcm.js';
import { fromBase64, toBase64Url } from './base64url.js';
import { KEY_BYTES } from './keys.js';
import { kekOf, type Keyring } from './keyring.js';
import { SealingError } from './sealing-error.js';

// Envelope encryption at rest. The data is encrypted under a fresh random data key; the data key is wrapped
// under a key-encryption key (KEK) from configuration. Both layers authenticate the owner's context, the wrap
// also the KEK id, so a ciphertext copied onto another record, or relabelled with another KEK id, fails.

/** The largest plaintext an envelope or sealed box holds: secrets are small. */
export const MAX_PLAINTEXT_BYTES = 65_536;

const what = 'the encrypted secret';

/** Encrypts `plaintext` at rest under the keyring's current KEK, bound to `context` (e.g. tenant, workspace, connection id). */
export function encryptAtRest(keyring: Keyring, plaintext: Uint8Array, context: SealingContext): EncryptedEnvelope {
  checkContext(context);
  if (plaintext.byteLength > MAX_PLAINTEXT_BYTES) throw new SealingError('malformed', `a secret is at most ${MAX_PLAINTEXT_BYTES} bytes`);
  const dataKey = randomBytes(KEY_BYTES);
  try {
    const data = gcmEncrypt(dataKey, plaintext, associatedData('at-rest-data', { context }));
    return {
      v: 1,
      alg: 'A256GCM-KEK-A256GCM',
      kekId: keyring.currentId,
      wrappedKey: wrap(keyring, keyring.currentId, dataKey, context),
      iv: toBase64Url(data.iv),
      ciphertext: toBase64Url(data.ciphertext),
      tag: toBase64Url(data.tag),
    };
  } finally {
    dataKey.fill(0);
  }
}

/**
 * Decrypts an envelope with the KEK it names, checking it was made for `context`. Fails with a SealingError:
 * `malformed` (not an envelope), `unknown-key` (its KEK is not configured), `decryption-failed` (altered, or
 * another context). The caller should zero the returned buffer when done.
 */
export function decryptAtRest(keyring: Keyring, envelope: EncryptedEnvelope, context: SealingContext): Buffer {
  checkContext(context);
  const parsed = parseEnvelope(envelope);
  const dataKey = unwrap(keyring, parsed.kekId, parsed.wrappedKey, context);
  try {
    return gcmDecrypt(
      dataKey,
      { iv: fromBase64(parsed.iv, 'iv', IV_BYTES), ciphertext: fromBase64(parsed.ciphertext, 'ciphertext'), tag: fromBase64(parsed.tag, 'tag', TAG_BYTES) },
      associatedData('at-rest-data', { context }),
      what,
    );
  } finally {
    dataKey.fill(0);
  }
}

/** Whether an envelope is wrapped under the keyring's current KEK (if not, rewrapAtRest moves it there). */
export function isWrappedWithCurrentKek(keyring: Keyring, envelope: EncryptedEnvelope): boolean {
  return envelope.kekId === keyring.currentId;
}

/**
 * Re-wraps an envelope's data key under the current KEK without touching the data: after it, the old KEK
 * can be retired. The context is checked on the way (a wrong one is `decryption-failed`).
 */
export function rewrapAtRest(keyring: Keyring, envelope: EncryptedEnvelope, context: SealingContext): EncryptedEnvelope {
  checkContext(context);
  const parsed = parseEnvelope(envelope);
  if (parsed.kekId === keyring.currentId) return parsed;
  const dataKey = unwrap(keyring, parsed.kekId, parsed.wrappedKey, context);
  try {
    // The data layer is authenticated too, so a rewrap never blesses a ciphertext that would not open.
    gcmDecrypt(
      dataKey,
      { iv: fromBase64(parsed.iv, 'iv', IV_BYTES), ciphertext: fromBase64(parsed.ciphertext, 'ciphertext'), tag: fromBase64(parsed.tag, 'tag', TAG_BYTES) },
      associatedData('at-rest-data', { context }),
      what,
    ).fill(0);
    return { ...parsed, kekId: keyring.currentId, wrappedKey: wrap(keyring, keyring.currentId, dataKey, context) };
  } finally {
    dataKey.fill(0);
  }
}

function parseEnvelope(envelope: EncryptedEnvelope): EncryptedEnvelope {
  const parsed = EncryptedEnvelope.safeParse(envelope);
  if (!parsed.success) throw new SealingError('malformed', `${what} is not a v1 envelope`);
  return parsed.data;
}

function wrap(keyring: Keyring, kekId: string, dataKey: Buffer, context: SealingContext): string {
  const wrapped = gcmEncrypt(kekOf(keyring, kekId), dataKey, associatedData('at-rest-key-wrap', { kekId, context }));
  return toBase64Url(Buffer.concat([wrapped.iv, wrapped.ciphertext, wrapped.tag]));
}

function unwrap(keyring: Keyring, kekId: string, wrappedKey: string, context: SealingContext): Buffer {
  const kek = kekOf(keyring, kekId);
  const bytes = fromBase64(wrappedKey, 'the wrapped data key', IV_BYTES + KEY_BYTES + TAG_BYTES);
  return gcmDecrypt(
    kek,
    { iv: bytes.subarray(0, IV_BYTES), ciphertext: bytes.subarray(IV_BYTES, IV_BYTES + KEY_BYTES), tag: bytes.subarray(IV_BYTES + KEY_BYTES) },
    associatedData('at-rest-key-wrap', { kekId, context }),
    what,
  );
}
