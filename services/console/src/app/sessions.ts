// Signing in and recognising the operator of a request. The console keeps no session state: the cookie holds the
// operator token sealed, and every request verifies that token again (signature, expiry, tenant, workspace, kind
// human) with the trusted keys, so an expired token or a withdrawn key ends the session at once.
import { decodeTokenClaims, tokenExpiresAtMs, type TokenVerifier } from '@toolplane/auth';
import { ToolplaneError, type OperatorClaims, type Scope } from '@toolplane/contracts';
import { csrfToken } from '../core/csrf.js';
import { sealSession, unsealSession } from '../core/session-seal.js';
import { typedErrorOf, type TypedError } from '../core/typed-error.js';

/** The longest a session cookie lives, whatever the token's own expiry. */
export const MAX_SESSION_SECONDS = 12 * 60 * 60;

/** Browsers keep cookies up to about 4 KiB; a sealed token past this would be dropped silently. */
const MAX_COOKIE_VALUE_CHARS = 3_800;

/** What sessions are made and checked with. */
export interface SessionDeps {
  readonly key: Uint8Array;
  readonly verifier: TokenVerifier;
  readonly randomBytes: (size: number) => Uint8Array;
  readonly now: () => number;
}

/** The operator behind a request, verified for the request's workspace. */
export interface Operator {
  readonly token: string;
  readonly claims: OperatorClaims;
  readonly sessionId: string;
  /** The tenant of the token and the workspace of the request. */
  readonly scope: Scope;
  /** The CSRF token of this session's forms. */
  readonly csrf: string;
  /** When the token expires (epoch ms), if it says. */
  readonly expiresAtMs: number | undefined;
}

/** A new session: the cookie value to set, how long it lives, and where to go first. */
export type SignIn = { readonly ok: true; readonly cookie: string; readonly maxAgeSeconds: number; readonly workspace: string } | { readonly ok: false; readonly error: TypedError };

/** The operator token's claims once verified for `workspace` (or its first workspace); AUTHENTICATION_FAILED otherwise. */
async function verifiedClaims(verifier: TokenVerifier, token: string, workspace: string | undefined): Promise<OperatorClaims> {
  const stated = decodeTokenClaims(token);
  if (stated === undefined) throw new ToolplaneError('AUTHENTICATION_FAILED', 'token refused: it is malformed');
  if (stated.kind !== 'human') throw new ToolplaneError('AUTHENTICATION_FAILED', 'token refused: expected an operator token');
  // The verifier checks the workspace too; one the token does not claim is refused by it with its own words.
  return verifier.verify(token, { tenant: stated.tenant, workspace: workspace ?? stated.workspaces[0] ?? '', kind: 'human' });
}

/** Verifies a pasted token and seals it into a new session. */
export async function signIn(deps: SessionDeps, pasted: string): Promise<SignIn> {
  const token = pasted.trim();
  if (token === '') return { ok: false, error: { code: 'AUTHENTICATION_FAILED', message: 'no operator token: paste one or pick the file holding it' } };
  let claims: OperatorClaims;
  try {
    claims = await verifiedClaims(deps.verifier, token, undefined);
  } catch (error) {
    return { ok: false, error: typedErrorOf(error) };
  }
  const sessionId = Buffer.from(deps.randomBytes(18)).toString('base64url');
  const cookie = sealSession(deps.key, { sessionId, token }, deps.randomBytes(12));
  if (cookie.length > MAX_COOKIE_VALUE_CHARS) return { ok: false, error: { code: 'INVALID_ARGUMENT', message: 'this token is too large to keep in a browser session cookie' } };
  const expiresAtMs = tokenExpiresAtMs(token);
  const untilExpiry = expiresAtMs === undefined ? MAX_SESSION_SECONDS : Math.floor((expiresAtMs - deps.now()) / 1_000);
  const workspace = claims.workspaces[0];
  if (workspace === undefined) return { ok: false, error: { code: 'AUTHENTICATION_FAILED', message: 'token refused: it covers no workspace' } };
  return { ok: true, cookie, maxAgeSeconds: Math.max(1, Math.min(untilExpiry, MAX_SESSION_SECONDS)), workspace };
}

/** Why a request has no operator. */
export type Authentication =
  | { readonly ok: true; readonly operator: Operator }
  /** No cookie, or one that does not open: sign in. */
  | { readonly ok: false; readonly reason: 'no-session' }
  /** The sealed token no longer verifies (expired, key withdrawn): sign in again. */
  | { readonly ok: false; readonly reason: 'refused'; readonly error: TypedError }
  /** A valid session whose token does not cover the workspace asked for. */
  | { readonly ok: false; readonly reason: 'not-covered'; readonly error: TypedError; readonly claims: OperatorClaims; readonly sessionId: string };

/** The session a cookie holds, without verifying the token (sign-out needs only the session's CSRF token). */
export function sessionIdOf(deps: Pick<SessionDeps, 'key'>, cookie: string | undefined): string | undefined {
  return unsealSession(deps.key, cookie)?.sessionId;
}

/** The operator of a request for `workspace` (undefined: the token's first workspace). */
export async function authenticate(deps: SessionDeps, cookie: string | undefined, workspace: string | undefined): Promise<Authentication> {
  const session = unsealSession(deps.key, cookie);
  if (session === undefined) return { ok: false, reason: 'no-session' };
  const stated = decodeTokenClaims(session.token);
  const covered = workspace === undefined || (stated?.kind === 'human' && stated.workspaces.includes(workspace));
  let claims: OperatorClaims;
  try {
    claims = await verifiedClaims(deps.verifier, session.token, covered ? workspace : undefined);
  } catch (error) {
    return { ok: false, reason: 'refused', error: typedErrorOf(error) };
  }
  const csrf = csrfToken(deps.key, 'session', session.sessionId);
  const target = workspace ?? claims.workspaces[0] ?? '';
  if (!claims.workspaces.includes(target)) {
    return { ok: false, reason: 'not-covered', claims, sessionId: session.sessionId, error: { code: 'AUTHORIZATION_DENIED', message: `your operator token does not cover workspace ${target}` } };
  }
  return {
    ok: true,
    operator: { token: session.token, claims, sessionId: session.sessionId, scope: { tenant: claims.tenant, workspace: target }, csrf, expiresAtMs: tokenExpiresAtMs(session.token) },
  };
}
