import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { InvocationReceipt, receiptSigningInput } from './invocation-receipt.js';

// Receipts are verified here, beside their schema, so that the adapter (which signs them), agent runtimes and
// auditors (who check them offline, with nothing but the adapter's public key) share one implementation.

/** Whether a receipt is authentic, and why not. */
export type ReceiptVerification = { readonly valid: true; readonly receipt: InvocationReceipt } | { readonly valid: false; readonly problem: string };

/** Finds the public key for a signature's key id. */
export type ReceiptKeyResolver = (keyId: string) => KeyObject | undefined;

/**
 * Verifies a receipt offline: its shape, then its Ed25519 signature against the public key its `keyId` names. Any
 * change to any signed field makes it invalid. Never throws.
 */
export function verifyReceipt(candidate: unknown, keys: ReceiptKeyResolver | ReadonlyMap<string, KeyObject>): ReceiptVerification {
  const parsed = InvocationReceipt.safeParse(candidate);
  if (!parsed.success) return { valid: false, problem: `not a receipt: ${parsed.error.issues[0]?.message ?? 'invalid'}` };
  const receipt = parsed.data;
  const resolve = typeof keys === 'function' ? keys : (keyId: string) => keys.get(keyId);
  const found = resolve(receipt.signature.keyId);
  if (found === undefined) return { valid: false, problem: `no public key for key id ${receipt.signature.keyId}` };
  // A private key verifies too; use its public half, and refuse anything that is not Ed25519.
  const publicKey = found.type === 'private' ? createPublicKey(found) : found;
  if (publicKey.asymmetricKeyType !== 'ed25519') return { valid: false, problem: 'the key is not an Ed25519 key' };
  try {
    const ok = verify(null, Buffer.from(receiptSigningInput(receipt), 'utf8'), publicKey, Buffer.from(receipt.signature.value, 'base64'));
    return ok ? { valid: true, receipt } : { valid: false, problem: 'the signature does not match the receipt' };
  } catch {
    return { valid: false, problem: 'the signature cannot be checked' };
  }
}
