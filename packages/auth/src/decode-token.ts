import { decodeJwt, type JWTPayload } from 'jose';
import { TokenClaims } from '@toolplane/contracts';

/**
 * The Toolplane claims a token states, read WITHOUT verifying its signature, expiry or audience: only for defaults a
 * client fills in before sending the token (its tenant and workspace), never for a decision; the service that
 * receives the token verifies it. Undefined when the token is not a JWS whose claims are a Toolplane token's.
 */
export function decodeTokenClaims(token: string): TokenClaims | undefined {
  let payload: JWTPayload;
  try {
    payload = decodeJwt(token);
  } catch {
    return undefined;
  }
  const { kind, tenant, workspace, workspaces, agentId, agentRevision, roles } = payload;
  const stated = Object.fromEntries(Object.entries({ kind, tenant, workspace, workspaces, agentId, agentRevision, roles, principal: payload.sub }).filter(([, value]) => value !== undefined));
  const claims = TokenClaims.safeParse(stated);
  return claims.success ? claims.data : undefined;
}

/**
 * When a JWT expires (its `exp`, in epoch milliseconds), read WITHOUT checking anything: only for a token verified
 * already, to bound what it opened (a session cookie, a live stream) by its lifetime. Undefined when it states none.
 */
export function tokenExpiresAtMs(token: string): number | undefined {
  try {
    const { exp } = decodeJwt(token);
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1_000 : undefined;
  } catch {
    return undefined;
  }
}
