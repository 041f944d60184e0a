// The session cookie: the operator token and a session id, sealed with AES-256-GCM under CONSOLE_SESSION_KEY. The
// browser holds it (HttpOnly, so no script reads it) but can neither read the token in it nor change a bit of it:
// any change fails the GCM tag. The console keeps no session state, so any replica with the key serves any session;
// the token inside is verified again on every request, so expiry and key rotation apply at once.
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { z } from 'zod';

/** The session cookie's name. */
export const SESSION_COOKIE = 'tp_session';

/** What a session cookie holds. */
export const SealedSession = z.strictObject({
  /** Random per sign-in; the CSRF tokens of the session's forms are derived from it. */
  sessionId: z.string().regex(/^[A-Za-z0-9_-]{16,64}$/),
  /** The operator token, as signed in with. */
  token: z.string().min(1).max(8192),
});
export type SealedSession = z.infer<typeof SealedSession>;

const version = 'v1';
const ivBytes = 12;
const tagBytes = 16;
// Binds the ciphertext to its use: a value sealed for something else under the same key does not open here.
const associatedData = Buffer.from('toolplane-console/session/v1');

/** The cookie value for a session; `iv` must be 12 fresh random bytes for every seal. */
export function sealSession(key: Uint8Array, session: SealedSession, iv: Uint8Array): string {
  if (iv.length !== ivBytes) throw new RangeError(`the IV must be ${ivBytes} bytes`);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: tagBytes });
  cipher.setAAD(associatedData);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(SealedSession.parse(session)), 'utf8'), cipher.final()]);
  return `${version}.${Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url')}`;
}

/** The session a cookie value holds, or undefined when it is malformed, tampered with or sealed under another key. */
export function unsealSession(key: Uint8Array, value: string | undefined): SealedSession | undefined {
  if (value === undefined || !value.startsWith(`${version}.`)) return undefined;
  const body = value.slice(version.length + 1);
  if (!/^[A-Za-z0-9_-]+$/.test(body)) return undefined;
  const bytes = Buffer.from(body, 'base64url');
  if (bytes.length <= ivBytes + tagBytes) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, ivBytes), { authTagLength: tagBytes });
    decipher.setAAD(associatedData);
    decipher.setAuthTag(bytes.subarray(bytes.length - tagBytes));
    const plain = Buffer.concat([decipher.update(bytes.subarray(ivBytes, bytes.length - tagBytes)), decipher.final()]).toString('utf8');
    const parsed = SealedSession.safeParse(JSON.parse(plain));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
