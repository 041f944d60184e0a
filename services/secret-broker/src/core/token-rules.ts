import { ToolplaneError } from '@toolplane/contracts';

// The pure rules of access tokens: when a cached one is still good, when it expires, and how a token
// endpoint's failure maps to the taxonomy. Nothing the endpoint says is repeated beyond a known error code.

/** Whether a token is still usable for a lease: more than `marginMs` of its lifetime is left. */
export function tokenIsFresh(expiresAt: Date, now: Date, marginMs: number): boolean {
  return expiresAt.getTime() - now.getTime() > marginMs;
}

/** When a token obtained at `obtainedAt` expires; undefined when the endpoint did not say (it is then not cached). */
export function tokenExpiry(obtainedAt: Date, expiresInSeconds: number | undefined): Date | undefined {
  if (expiresInSeconds === undefined || !Number.isFinite(expiresInSeconds) || expiresInSeconds <= 0) return undefined;
  return new Date(obtainedAt.getTime() + expiresInSeconds * 1000);
}

// RFC 6749 §5.2 error codes: safe to repeat (the endpoint's free-text description is not).
const knownOAuthErrors = new Set(['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope']);

/** What went wrong talking to a token endpoint, as far as the broker repeats it. */
export type TokenEndpointProblem =
  | { readonly kind: 'unreachable' }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'oauth-error'; readonly status: number; readonly error: string }
  | { readonly kind: 'http-status'; readonly status: number }
  | { readonly kind: 'invalid-response' }
  | { readonly kind: 'unsupported-token-type' };

/** The taxonomy error for a token endpoint problem on connection `name`. */
export function tokenEndpointError(name: string, problem: TokenEndpointProblem): ToolplaneError {
  const where = `the token endpoint of connection ${name}`;
  switch (problem.kind) {
    case 'unreachable':
      return new ToolplaneError('TEMPORARY_UNAVAILABLE', `${where} could not be reached`);
    case 'timeout':
      return new ToolplaneError('TIMEOUT', `${where} did not answer in time`);
    case 'oauth-error': {
      const error = knownOAuthErrors.has(problem.error) ? problem.error : 'an error';
      if (problem.status === 429) return new ToolplaneError('RATE_LIMITED', `${where} is rate limiting (HTTP 429)`);
      if (problem.status >= 500) return new ToolplaneError('TEMPORARY_UNAVAILABLE', `${where} failed (HTTP ${problem.status})`);
      if (error === 'invalid_client' || error === 'unauthorized_client' || error === 'invalid_grant') {
        return new ToolplaneError('AUTHENTICATION_FAILED', `${where} refused the client credentials (${error}, HTTP ${problem.status})`);
      }
      return new ToolplaneError('INVALID_ARGUMENT', `${where} refused the request (${error}, HTTP ${problem.status})`);
    }
    case 'http-status':
      if (problem.status === 429) return new ToolplaneError('RATE_LIMITED', `${where} is rate limiting (HTTP 429)`);
      if (problem.status >= 500) return new ToolplaneError('TEMPORARY_UNAVAILABLE', `${where} failed (HTTP ${problem.status})`);
      return new ToolplaneError('AUTHENTICATION_FAILED', `${where} refused the client credentials (HTTP ${problem.status})`);
    case 'invalid-response':
      return new ToolplaneError('TEMPORARY_UNAVAILABLE', `${where} sent a response that is not a valid token response`);
    case 'unsupported-token-type':
      return new ToolplaneError('INVALID_ARGUMENT', `${where} issued a token that is not a Bearer token`);
  }
}
