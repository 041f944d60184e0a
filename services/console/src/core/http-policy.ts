// What every console response says about itself, and how a typed error maps to an HTTP status.
import type { ErrorCode } from '@toolplane/contracts';

/** Scripts, styles and everything else only from the console itself; no inline code, no framing, no foreign forms. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The headers of every response (pages, fragments, the event stream, assets, redirects). */
export const securityHeaders: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const statusByCode: Readonly<Record<ErrorCode, number>> = {
  AUTHENTICATION_FAILED: 401,
  AUTHORIZATION_DENIED: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  RATE_LIMITED: 429,
  TIMEOUT: 504,
  TEMPORARY_UNAVAILABLE: 503,
  INVALID_ARGUMENT: 400,
  UNKNOWN_OUTCOME: 409,
  APPROVAL_REJECTED: 409,
  APPROVAL_EXPIRED: 409,
  APPROVAL_PENDING: 409,
  CANCELLED: 409,
  INTERNAL: 500,
};

/** The HTTP status a page showing this error answers with. */
export function httpStatusOf(code: ErrorCode): number {
  return statusByCode[code];
}
