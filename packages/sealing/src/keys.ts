import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { fromBase64, toBase64Url } from './base64url.js';
import { SealingError } from './sealing-error.js';

// X25519 keys travel through configuration as the unpadded base64url of their 32 raw bytes. Node imports raw
// keys only through DER, so the fixed ASN.1 prefixes of RFC 8410 are put in front of them.
const pkcs8Prefix = Buffer.from('302e020100300506032b656e04220420', 'hex');
const spkiPrefix = Buffer.from('302a300506032b656e032100', 'hex');

/** The length of a key-encryption key, an X25519 key and a data key, in bytes. */
export const KEY_BYTES = 32;

/** An X25519 key pair as configuration holds it: unpadded base64url of the raw 32-byte keys. */
export interface EncodedKeyPair {
  readonly publicKey: string;
  readonly privateKey: string;
}

/** A fresh random 256-bit key-encryption key, base64url-encoded for configuration. */
export function generateKek(): string {
  return toBase64Url(randomBytes(KEY_BYTES));
}

/** A fresh X25519 key pair for a sealed-box recipient, base64url-encoded for configuration. */
export function generateRecipientKeyPair(): EncodedKeyPair {
  const { privateKey } = generateKeyPairSync('x25519');
  return { privateKey: exportPrivateKey(privateKey), publicKey: exportPublicKey(createPublicKey(privateKey)) };
}

/** Imports a recipient's public key from its base64url encoding; `what` names it in errors. */
export function importPublicKey(encoded: string, what = 'the public key'): KeyObject {
  const raw = fromBase64(encoded, what, KEY_BYTES);
  try {
    return createPublicKey({ key: Buffer.concat([spkiPrefix, raw]), format: 'der', type: 'spki' });
  } catch {
    throw new SealingError('malformed', `${what} is not an X25519 public key`);
  }
}

/** Imports a recipient's private key from its base64url encoding; `what` names it in errors. */
export function importPrivateKey(encoded: string, what = 'the private key'): KeyObject {
  const raw = fromBase64(encoded, what, KEY_BYTES);
  try {
    return createPrivateKey({ key: Buffer.concat([pkcs8Prefix, raw]), format: 'der', type: 'pkcs8' });
  } catch {
    throw new SealingError('malformed', `${what} is not an X25519 private key`);
  } finally {
    raw.fill(0);
  }
}

/** The base64url encoding of the public key that belongs to an encoded private key. */
export function publicKeyOf(encodedPrivateKey: string): string {
  return exportPublicKey(createPublicKey(importPrivateKey(encodedPrivateKey)));
}

/** The raw 32 bytes of an X25519 public key. */
export function rawPublicKey(key: KeyObject): Buffer {
  if (key.asymmetricKeyType !== 'x25519') throw new SealingError('malformed', 'the key is not an X25519 key');
  return key.export({ format: 'der', type: 'spki' }).subarray(spkiPrefix.length);
}

function exportPublicKey(key: KeyObject): string {
  return toBase64Url(rawPublicKey(key));
}

function exportPrivateKey(key: KeyObject): string {
  const der = key.export({ format: 'der', type: 'pkcs8' });
  const encoded = toBase64Url(der.subarray(pkcs8Prefix.length));
  der.fill(0);
  return encoded;
}
