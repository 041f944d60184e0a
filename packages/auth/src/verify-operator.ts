import { ToolplaneError, type OperatorClaims } from '@toolplane/contracts';
import { bearerTokenOf } from './bearer.js';
import type { TokenVerifier } from './token-verifier.js';

/** What an operator request must show besides a valid token of its scope. */
export interface OperatorRequirement {
  /** A role the operator must hold (AUTHORIZATION_DENIED, naming the role, otherwise). */
  readonly role?: string;
}

/**
 * The operator behind a request: the verified claims of the bearer token in its headers, checked against the
 * scope of the request's subject (tenant, one of the token's workspaces, kind `human`). No token, or one that does
 * not verify: AUTHENTICATION_FAILED; a valid token without the required role: AUTHORIZATION_DENIED.
 */
export async function verifyOperator(
  verifier: TokenVerifier,
  scope: { readonly tenant: string; readonly workspace: string },
  headers: Readonly<Record<string, readonly string[]>>,
  requirement: OperatorRequirement = {},
): Promise<OperatorClaims> {
  const token = bearerTokenOf(headers);
  if (token === undefined) throw new ToolplaneError('AUTHENTICATION_FAILED', 'no operator token: send one as "Authorization: Bearer <token>"');
  const claims = await verifier.verify(token, { tenant: scope.tenant, workspace: scope.workspace, kind: 'human' });
  if (requirement.role !== undefined && !claims.roles.includes(requirement.role)) {
    throw new ToolplaneError('AUTHORIZATION_DENIED', `operator ${claims.principal} lacks the role ${requirement.role} this operation needs`);
  }
  return claims;
}
