// Anti-forgery tokens. Signed in, every form carries HMAC(session key, session id): a page of another origin can
// neither read it (same-origin policy) nor derive it (it does not know the key), and the cookie it cannot read
// either is what names the session. Before sign-in there is no session, so the sign-in form is a double submit: a
// random nonce in its own cookie and HMAC(key, nonce) in the form. Both are compared in constant time.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The form field every POST carries its token in. */
export const CSRF_FIELD = '_csrf';

/** The two purposes a token is derived for; one never passes as the other. */
export type CsrfPurpose = 'session' | 'sign-in';

/** The token of a session (purpose `session`) or of a sign-in nonce (purpose `sign-in`). */
export function csrfToken(key: Uint8Array, purpose: CsrfPurpose, bound: string): string {
  return createHmac('sha256', key).update(`toolplane-console/csrf/v1/${purpose}\n${bound}`).digest('base64url');
}

/** Whether `given` is the token of `bound` for `purpose`; false for a missing or malformed one. */
export function csrfValid(key: Uint8Array, purpose: CsrfPurpose, bound: string, given: string | undefined): boolean {
  if (given === undefined || bound === '') return false;
  const expected = Buffer.from(csrfToken(key, purpose, bound));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** What the browser said about where a request comes from (either may be absent in older browsers). */
export interface RequestOrigin {
  /** `Sec-Fetch-Site`. */
  readonly fetchSite: string | undefined;
  /** `Origin`. */
  readonly origin: string | undefined;
}

/**
 * Whether the browser's own statement of the request's origin allows a state change: `Sec-Fetch-Site` must be
 * `same-origin` when sent, and `Origin` one of the console's origins when sent. The console's `Referrer-Policy:
 * no-referrer` makes browsers send `Origin: null` with its own forms, so an opaque origin passes only when
 * `Sec-Fetch-Site` vouches for it. Browsers that send neither rely on the token alone.
 */
export function sameOrigin(request: RequestOrigin, consoleOrigins: ReadonlySet<string>): boolean {
  if (request.fetchSite !== undefined && request.fetchSite !== 'same-origin') return false;
  if (request.origin === undefined) return true;
  if (request.origin === 'null') return request.fetchSite === 'same-origin';
  if (!URL.canParse(request.origin)) return false;
  return consoleOrigins.has(new URL(request.origin).origin);
}

/**
 * The origins the console is reached at: the configured public URL's, else the Host the request names with either
 * scheme (without a public URL the console cannot know whether a proxy terminates TLS in front of it).
 */
export function consoleOrigins(publicUrl: string | undefined, host: string | undefined): ReadonlySet<string> {
  if (publicUrl !== undefined) return new Set([new URL(publicUrl).origin]);
  if (host === undefined || !URL.canParse(`http://${host}`)) return new Set();
  return new Set([new URL(`http://${host}`).origin, new URL(`https://${host}`).origin]);
}
