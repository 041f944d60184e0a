// The public entry of @toolplane/sealing: envelope encryption at rest under a keyring of key-encryption keys,
// sealed boxes to one recipient's X25519 public key, and the key helpers configuration needs. node:crypto only.
export type { SealingContext } from './associated-data.js';
export { fromBase64, toBase64Url } from './base64url.js';
export { MAX_PLAINTEXT_BYTES, decryptAtRest, encryptAtRest, isWrappedWithCurrentKek, rewrapAtRest } from './envelope.js';
export { KEY_BYTES, generateKek, generateRecipientKeyPair, importPrivateKey, importPublicKey, publicKeyOf, type EncodedKeyPair } from './keys.js';
export { Keyring, encodeKeyringConfig } from './keyring.js';
export { openSealedBox, sealToRecipient, type OpenRecipient, type SealRecipient } from './sealed-box.js';
export { SealingError, SealingFailure, isSealingFailure } from './sealing-error.js';
