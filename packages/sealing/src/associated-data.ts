import { canonicalJson } from '@toolplane/contracts';
import { SealingError } from './sealing-error.js';

/**
 * What a ciphertext is bound to, for example `{ tenant, workspace, connectionId }`: authenticated, not encrypted.
 * Opening with any other context fails.
 */
export type SealingContext = Readonly<Record<string, string>>;

/** The purposes ciphertexts are made for; each is part of its associated data, so one cannot pass for another. */
export type SealingPurpose = 'at-rest-data' | 'at-rest-key-wrap' | 'sealed-box';

/** The associated data of one ciphertext: its purpose, format version and bindings, as canonical JSON bytes. */
export function associatedData(purpose: SealingPurpose, bindings: Readonly<Record<string, string | SealingContext>>): Buffer {
  return Buffer.from(canonicalJson({ toolplaneSealing: 1, purpose, ...bindings }), 'utf8');
}

/** Refuses a context that is not a flat map of strings (it would not bind what the caller thinks). */
export function checkContext(context: SealingContext): SealingContext {
  if (typeof context !== 'object' || context === null || Array.isArray(context)) throw new SealingError('malformed', 'the context must be an object of strings');
  for (const [key, value] of Object.entries(context)) {
    if (typeof value !== 'string') throw new SealingError('malformed', `context.${key} must be a string`);
  }
  return context;
}
