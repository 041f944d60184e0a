import { createPrivateKey, type KeyObject } from 'node:crypto';
import { z } from 'zod';

// ADAPTER_SIGNING_KEY: the Ed25519 private key receipts are signed with, as a private JWK (JSON, its `kid` names
// the key) or as base64 of a PKCS#8 DER key. Parsed once at start-up; a bad value stops the start with one line.

/** The parsed receipt-signing key: the key and, when the JWK named one, its key id. */
export interface ParsedSigningKey {
  readonly privateKey: KeyObject;
  readonly keyId: string | undefined;
}

function importKey(text: string): ParsedSigningKey | string {
  const trimmed = text.trim();
  let privateKey: KeyObject;
  let keyId: string | undefined;
  try {
    if (trimmed.startsWith('{')) {
      const jwk = JSON.parse(trimmed) as Record<string, unknown>;
      if (typeof jwk['d'] !== 'string') return 'is a JWK without private key material (d)';
      keyId = typeof jwk['kid'] === 'string' ? jwk['kid'] : undefined;
      privateKey = createPrivateKey({ key: jwk, format: 'jwk' });
    } else {
      if (!/^[A-Za-z0-9+/=_-]+$/.test(trimmed)) return 'is neither a private JWK (JSON) nor base64 of a PKCS#8 key';
      privateKey = createPrivateKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'pkcs8' });
    }
  } catch {
    return 'cannot be read as an Ed25519 private key (a private JWK, or base64 of a PKCS#8 DER key)';
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') return `is a ${privateKey.asymmetricKeyType ?? 'non-asymmetric'} key; receipts are signed with Ed25519`;
  return { privateKey, keyId };
}

/** ADAPTER_SIGNING_KEY as a zod setting (never echoes the value). */
export const SigningKeySetting = z.string().transform((text, ctx) => {
  const parsed = importKey(text);
  if (typeof parsed === 'string') {
    ctx.addIssue({ code: 'custom', message: parsed });
    return z.NEVER;
  }
  return parsed;
});
