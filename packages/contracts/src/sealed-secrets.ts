import { z } from 'zod';

// The two ciphertext formats of Toolplane (produced and opened by @toolplane/sealing): a sealed box travels on
// the wire to one recipient; an envelope is a secret at rest. Every binary field is unpadded base64url.

function base64url(description: string, length?: number) {
  const text = z.string().regex(/^[A-Za-z0-9_-]*$/);
  return (length === undefined ? text.max(87_382) : text.length(length)).meta({ description: `${description} (unpadded base64url)` });
}

/** The id of a key in configuration (a key-encryption key, a recipient's public key): [A-Za-z0-9_-]{1,64}. */
export const SealingKeyId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/)
  .meta({ description: 'Key id: [A-Za-z0-9_-]{1,64}.' });
export type SealingKeyId = z.infer<typeof SealingKeyId>;

/**
 * A secret sealed to one recipient's X25519 public key: ephemeral X25519 ECDH, HKDF-SHA256, AES-256-GCM. The
 * recipient key id and the caller's context (a lease id, an invocation id) are authenticated data, so the box
 * opens only for that key and that context.
 */
export const SealedBox = z
  .strictObject({
    v: z.literal(1),
    alg: z.literal('X25519-HKDF-SHA256-A256GCM'),
    recipientKeyId: SealingKeyId,
    ephemeralPublicKey: base64url('the sender’s ephemeral X25519 public key, 32 bytes', 43),
    iv: base64url('AES-GCM nonce, 12 bytes', 16),
    ciphertext: base64url('AES-256-GCM ciphertext'),
    tag: base64url('AES-GCM authentication tag, 16 bytes', 22),
  })
  .meta({ description: 'A secret sealed to one recipient public key; only the holder of the private key can open it.' });
export type SealedBox = z.infer<typeof SealedBox>;

/**
 * A secret encrypted at rest: AES-256-GCM under a fresh data key, the data key wrapped (AES-256-GCM) under the
 * key-encryption key `kekId`. Both layers authenticate the owner's context, so a copy under another owner fails.
 */
export const EncryptedEnvelope = z
  .strictObject({
    v: z.literal(1),
    alg: z.literal('A256GCM-KEK-A256GCM'),
    kekId: SealingKeyId,
    wrappedKey: base64url('nonce, wrapped data key and tag, 60 bytes', 80),
    iv: base64url('AES-GCM nonce, 12 bytes', 16),
    ciphertext: base64url('AES-256-GCM ciphertext'),
    tag: base64url('AES-GCM authentication tag, 16 bytes', 22),
  })
  .meta({ description: 'A secret encrypted at rest under a data key wrapped by a key-encryption key.' });
export type EncryptedEnvelope = z.infer<typeof EncryptedEnvelope>;
