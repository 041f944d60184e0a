import type { KeyObject } from 'node:crypto';
import { importPrivateKey } from '@toolplane/sealing';
import { z } from 'zod';

// TOOL_ADAPTER_SECRET_KEY: the X25519 private key the secret broker seals leases to (base64url of its 32 bytes, as
// `generateRecipientKeyPair()` of @toolplane/sealing and the development key script write it). Parsed once at
// start-up; a bad value stops the start with one line that never echoes the key.

/** TOOL_ADAPTER_SECRET_KEY as a zod setting: the private key object. */
export const SealingKeySetting = z.string().transform((text, ctx): KeyObject => {
  try {
    return importPrivateKey(text.trim(), 'the key');
  } catch {
    ctx.addIssue({ code: 'custom', message: 'is not an X25519 private key (base64url of 32 bytes, the private half of the key in SECRET_BROKER_RECIPIENTS)' });
    return z.NEVER;
  }
});
