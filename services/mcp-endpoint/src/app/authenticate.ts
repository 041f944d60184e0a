import { decodeTokenClaims, type TokenVerifier } from '@toolplane/auth';
import { hasErrorCode, type AgentContextClaims, type Scope } from '@toolplane/contracts';

/** Who calls, once their token checked out for the route's workspace. */
export interface Caller {
  readonly scope: Scope;
  readonly token: string;
  readonly claims: AgentContextClaims;
  /** `flows` when the caller came through the endpoint of the workspace's flow-backed tools alone. */
  readonly surface?: 'all' | 'flows';
}

/** The outcome of authenticating a request (RFC 6750 error codes, which the WWW-Authenticate header carries). */
export type Authentication =
  | { readonly ok: true; readonly caller: Caller }
  | { readonly ok: false; readonly status: 401 | 403; readonly error: 'invalid_request' | 'invalid_token' | 'insufficient_scope' | undefined; readonly description: string };

/** The token of an `Authorization: Bearer …` header; undefined when absent, null when the header is not a bearer token. */
export function bearerOf(authorization: string | undefined): string | null | undefined {
  if (authorization === undefined) return undefined;
  const match = /^Bearer ([A-Za-z0-9_.~+/=-]+)$/i.exec(authorization.trim());
  return match?.[1] ?? null;
}

/**
 * Verifies the bearer token as an agent context token of the route's workspace. No token: 401 without an error code
 * (RFC 6750 §3.1). A token that does not verify: 401 invalid_token. A token that verifies for another workspace
 * than the route's: 403 insufficient_scope (it is genuine, it just does not cover this endpoint).
 */
export async function authenticate(verifier: TokenVerifier, authorization: string | undefined, scope: Scope): Promise<Authentication> {
  const token = bearerOf(authorization);
  if (token === undefined) return { ok: false, status: 401, error: undefined, description: 'a bearer token (an agent context token) is required' };
  if (token === null) return { ok: false, status: 401, error: 'invalid_request', description: 'the Authorization header is not a bearer token' };
  try {
    const claims = await verifier.verify(token, { tenant: scope.tenant, workspace: scope.workspace, kind: 'agent' });
    return { ok: true, caller: { scope, token, claims } };
  } catch (error) {
    if (!hasErrorCode(error)) throw error;
    const stated = decodeTokenClaims(token);
    if (stated?.kind === 'agent' && (stated.tenant !== scope.tenant || stated.workspace !== scope.workspace)) {
      const genuine = await verifier.verify(token, { tenant: stated.tenant, workspace: stated.workspace, kind: 'agent' }).then(
        () => true,
        () => false,
      );
      if (genuine) return { ok: false, status: 403, error: 'insufficient_scope', description: `the token is for ${stated.tenant}/${stated.workspace}, not this workspace` };
    }
    return { ok: false, status: 401, error: 'invalid_token', description: error.message };
  }
}
