import * as oauth from 'oauth4webapi';
import { abortError } from '@toolplane/contracts';
import { tokenEndpointError, type TokenEndpointProblem } from './core/token-rules.js';

// The client side of the OAuth 2.0 client credentials grant (RFC 6749 §4.4), with oauth4webapi. The client
// authenticates with client_secret_basic. Errors are mapped to the taxonomy here and nothing from the library's
// errors (whose `cause` can hold the response body) is passed on.

/** What the broker needs to ask a token endpoint for an access token. */
export interface ClientCredentials {
  readonly tokenEndpoint: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly scopes: readonly string[];
}

/** A token endpoint's answer, as far as the broker uses it. */
export interface IssuedToken {
  readonly accessToken: string;
  readonly expiresInSeconds: number | undefined;
  readonly scopes: readonly string[] | undefined;
}

/** Fetches an access token; the connection's name appears in errors. */
export type FetchAccessToken = (name: string, credentials: ClientCredentials, signal: AbortSignal) => Promise<IssuedToken>;

/** A token fetcher with a per-request deadline; `allowHttp` permits http:// endpoints (development only). */
export function tokenEndpointClient(options: { readonly timeoutMs: number; readonly allowHttp: boolean }): FetchAccessToken {
  return async (name, credentials, signal) => {
    const as: oauth.AuthorizationServer = { issuer: new URL(credentials.tokenEndpoint).origin, token_endpoint: credentials.tokenEndpoint };
    const client: oauth.Client = { client_id: credentials.clientId };
    const parameters: Record<string, string> = credentials.scopes.length > 0 ? { scope: credentials.scopes.join(' ') } : {};
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]);
    let result: oauth.TokenEndpointResponse;
    try {
      const response = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic(credentials.clientSecret), parameters, {
        signal: deadline,
        // http:// endpoints are a deliberate, configured development option (https is required otherwise).
        [oauth.allowInsecureRequests]: options.allowHttp,
      });
      result = await oauth.processClientCredentialsResponse(as, client, response);
    } catch (error) {
      if (signal.aborted) throw abortError(`fetching an access token for connection ${name}`, signal.reason);
      throw tokenEndpointError(name, problemOf(error, deadline.aborted));
    }
    if (result.token_type !== 'bearer') throw tokenEndpointError(name, { kind: 'unsupported-token-type' });
    return {
      accessToken: result.access_token,
      expiresInSeconds: typeof result.expires_in === 'number' ? result.expires_in : undefined,
      scopes: typeof result.scope === 'string' ? result.scope.split(' ').filter((scope) => scope !== '') : undefined,
    };
  };
}

function problemOf(error: unknown, timedOut: boolean): TokenEndpointProblem {
  if (timedOut) return { kind: 'timeout' };
  if (error instanceof oauth.ResponseBodyError) return { kind: 'oauth-error', status: error.status, error: error.error };
  if (error instanceof oauth.WWWAuthenticateChallengeError) return { kind: 'http-status', status: error.status };
  if (error instanceof oauth.UnsupportedOperationError) return { kind: 'unsupported-token-type' };
  if (error instanceof oauth.OperationProcessingError) {
    const cause: unknown = error.cause;
    return cause instanceof Response && !cause.ok ? { kind: 'http-status', status: cause.status } : { kind: 'invalid-response' };
  }
  return { kind: 'unreachable' };
}
