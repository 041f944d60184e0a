import { createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, type KeyObject } from 'node:crypto';
import { SealedBox } from '@toolplane/contracts';
import { associatedData, checkContext, type SealingContext } from './associated-data.js';
import { gcmDecrypt, gcmEncrypt, IV_BYTES, TAG_BYTES } from './aes-gcm.js';
import { fromBase64, toBase64Url } from './base64url.js';
import { MAX_PLAINTEXT_BYTES } from './envelope.js';
import { importPrivateKey, importPublicKey, KEY_BYTES, rawPublicKey } from './keys.js';
import { SealingError } from './sealing-error.js';

// Sealed boxes: anonymous public-key encryption to one recipient, built from node:crypto alone. A fresh
// ephemeral X25519 key pair per box; the shared secret goes through HKDF-SHA256 salted with both public keys
// (so the key is bound to this sender key and this recipient); AES-256-GCM authenticates the recipient key id
// and the caller's context. Only the holder of the recipient's private key can open it, and only for that context.

const hkdfInfo = Buffer.from('toolplane sealed box v1', 'utf8');

/** Where a box goes: the recipient's key id and X25519 public key (a KeyObject or its base64url encoding). */
export interface SealRecipient {
  readonly keyId: string;
  readonly publicKey: KeyObject | string;
}

/** Who opens a box: the recipient's key id and X25519 private key (a KeyObject or its base64url encoding). */
export interface OpenRecipient {
  readonly keyId: string;
  readonly privateKey: KeyObject | string;
}

/** Seals `plaintext` to one recipient, bound to `context` (e.g. `{ leaseId, invocationId }`). */
export function sealToRecipient(recipient: SealRecipient, plaintext: Uint8Array, context: SealingContext): SealedBox {
  checkContext(context);
  if (plaintext.byteLength > MAX_PLAINTEXT_BYTES) throw new SealingError('malformed', `a sealed secret is at most ${MAX_PLAINTEXT_BYTES} bytes`);
  const recipientKey = typeof recipient.publicKey === 'string' ? importPublicKey(recipient.publicKey, `the public key of ${recipient.keyId}`) : recipient.publicKey;
  const recipientRaw = rawPublicKey(recipientKey);
  const ephemeral = generateKeyPairSync('x25519');
  const ephemeralRaw = rawPublicKey(ephemeral.publicKey);
  const key = boxKey(ephemeral.privateKey, recipientKey, ephemeralRaw, recipientRaw);
  try {
    const box = gcmEncrypt(key, plaintext, associatedData('sealed-box', { recipientKeyId: recipient.keyId, context }));
    return {
      v: 1,
      alg: 'X25519-HKDF-SHA256-A256GCM',
      recipientKeyId: recipient.keyId,
      ephemeralPublicKey: toBase64Url(ephemeralRaw),
      iv: toBase64Url(box.iv),
      ciphertext: toBase64Url(box.ciphertext),
      tag: toBase64Url(box.tag),
    };
  } finally {
    key.fill(0);
  }
}

/**
 * Opens a box with the recipient's private key, checking it was sealed to this key id for `context`. Fails
 * with a SealingError: `malformed`, `wrong-recipient` (another key id), `decryption-failed` (altered, wrong
 * key, wrong context). The caller should zero the returned buffer when done.
 */
export function openSealedBox(recipient: OpenRecipient, box: SealedBox, context: SealingContext): Buffer {
  checkContext(context);
  const parsed = SealedBox.safeParse(box);
  if (!parsed.success) throw new SealingError('malformed', 'not a v1 sealed box');
  if (parsed.data.recipientKeyId !== recipient.keyId) {
    throw new SealingError('wrong-recipient', `the box is sealed to key ${parsed.data.recipientKeyId}, not ${recipient.keyId}`);
  }
  const privateKey = typeof recipient.privateKey === 'string' ? importPrivateKey(recipient.privateKey, `the private key of ${recipient.keyId}`) : recipient.privateKey;
  const ephemeralRaw = fromBase64(parsed.data.ephemeralPublicKey, 'the ephemeral public key', KEY_BYTES);
  const key = boxKey(privateKey, importPublicKey(parsed.data.ephemeralPublicKey, 'the ephemeral public key'), ephemeralRaw, rawPublicKey(publicHalf(privateKey)));
  try {
    return gcmDecrypt(
      key,
      { iv: fromBase64(parsed.data.iv, 'iv', IV_BYTES), ciphertext: fromBase64(parsed.data.ciphertext, 'ciphertext'), tag: fromBase64(parsed.data.tag, 'tag', TAG_BYTES) },
      associatedData('sealed-box', { recipientKeyId: recipient.keyId, context }),
      'the sealed box',
    );
  } finally {
    key.fill(0);
  }
}

function publicHalf(privateKey: KeyObject): KeyObject {
  if (privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'x25519') throw new SealingError('malformed', 'the private key is not an X25519 private key');
  return createPublicKey(privateKey);
}

function boxKey(privateKey: KeyObject, publicKey: KeyObject, ephemeralRaw: Buffer, recipientRaw: Buffer): Buffer {
  let shared: Buffer;
  try {
    shared = diffieHellman({ privateKey, publicKey });
  } catch {
    // Node refuses low-order points (an all-zero shared secret), among others.
    throw new SealingError('malformed', 'the key agreement failed: a key is not a valid X25519 key');
  }
  try {
    return Buffer.from(hkdfSync('sha256', shared, Buffer.concat([ephemeralRaw, recipientRaw]), hkdfInfo, KEY_BYTES));
  } finally {
    shared.fill(0);
  }
}
