import type { CachedAccessToken, Connection, CredentialInput } from '@toolplane/contracts';
import type { TypedKv } from '@toolplane/messaging';
import { tokenExpiry, tokenIsFresh } from './core/token-rules.js';
import type { CredentialVault } from './credential-vault.js';
import type { FetchAccessToken } from './token-endpoint.js';

// Access tokens of oauth2-client-credentials connections: one cached per connection in the broker's private KV
// bucket, encrypted and bound to the credential generation it was obtained with, shared by every replica (and kept
// decrypted in this process, so a lease of a hot connection asks nothing of NATS for its token); refreshed once
// less than the margin of its lifetime is left. Concurrent refreshes in one process share one request.

type OAuth2Credential = Extract<CredentialInput, { kind: 'oauth2-client-credentials' }>;

/** An access token ready to lease. */
export interface AccessToken {
  readonly accessToken: string;
  readonly expiresAt: Date;
  readonly scopes?: readonly string[];
}

/** Gives the current access token of a connection, from the cache or the token endpoint. */
export interface AccessTokens {
  current(connection: Connection, credential: OAuth2Credential, signal: AbortSignal): Promise<AccessToken & { readonly fetched: boolean }>;
  /** Drops the cached token of a connection (rotation, revocation). */
  forget(connection: Pick<Connection, 'tenant' | 'workspace' | 'connectionId'>, signal?: AbortSignal): Promise<void>;
}

/** What the token cache is built from. */
export interface AccessTokensOptions {
  /** The private bucket, keyed `{tenant}.{workspace}.{connectionId}`. */
  readonly bucket: TypedKv<CachedAccessToken>;
  readonly vault: CredentialVault;
  readonly fetchToken: FetchAccessToken;
  readonly refreshMarginMs: number;
  /** The lifetime assumed for leasing a token whose endpoint gave no expires_in (it is then not cached). */
  readonly uncachedLifetimeMs: number;
  readonly now: () => Date;
}

const keyOf = (connection: Pick<Connection, 'tenant' | 'workspace' | 'connectionId'>) => `${connection.tenant}.${connection.workspace}.${connection.connectionId}`;

/** The access-token cache over its bucket. */
export function createAccessTokens(options: AccessTokensOptions): AccessTokens {
  const { bucket, vault, fetchToken, refreshMarginMs, now } = options;
  const inflight = new Map<string, Promise<AccessToken>>();
  // This process's copy: one entry per connection (the latest token it saw), so it is bounded by the connections.
  const local = new Map<string, { readonly secretGeneration: number; readonly token: AccessToken }>();

  const cached = async (connection: Connection, signal: AbortSignal): Promise<AccessToken | undefined> => {
    const key = keyOf(connection);
    const mine = local.get(key);
    if (mine !== undefined && mine.secretGeneration === connection.secretGeneration && tokenIsFresh(mine.token.expiresAt, now(), refreshMarginMs)) return mine.token;
    const stored = await bucket.get(key, { signal });
    const document = stored?.value;
    if (document === undefined || document.secretGeneration !== connection.secretGeneration || document.connectionId !== connection.connectionId) return undefined;
    const expiresAt = new Date(document.expiresAt);
    if (!tokenIsFresh(expiresAt, now(), refreshMarginMs)) return undefined;
    const token = vault.openToken(connection, document.token);
    if (token === undefined) return undefined;
    const found: AccessToken = { accessToken: token.accessToken, expiresAt, ...(token.scopes === undefined ? {} : { scopes: token.scopes }) };
    local.set(key, { secretGeneration: connection.secretGeneration, token: found });
    return found;
  };

  const refresh = async (connection: Connection, credential: OAuth2Credential, signal: AbortSignal): Promise<AccessToken> => {
    const obtainedAt = now();
    const issued = await fetchToken(connection.name, credential, signal);
    const expiresAt = tokenExpiry(obtainedAt, issued.expiresInSeconds);
    const scopes = issued.scopes === undefined ? {} : { scopes: issued.scopes };
    if (expiresAt === undefined) return { accessToken: issued.accessToken, expiresAt: new Date(obtainedAt.getTime() + options.uncachedLifetimeMs), ...scopes };
    const document: CachedAccessToken = {
      connectionId: connection.connectionId,
      tenant: connection.tenant,
      workspace: connection.workspace,
      secretGeneration: connection.secretGeneration,
      token: vault.sealToken(connection, { accessToken: issued.accessToken, ...(issued.scopes === undefined ? {} : { scopes: [...issued.scopes] }) }),
      obtainedAt: obtainedAt.toISOString(),
      expiresAt: expiresAt.toISOString(),
    };
    // A plain put: replicas that refresh at once each store a valid token; the last write wins.
    await bucket.put(keyOf(connection), document, { signal });
    const token: AccessToken = { accessToken: issued.accessToken, expiresAt, ...scopes };
    local.set(keyOf(connection), { secretGeneration: connection.secretGeneration, token });
    return token;
  };

  return {
    async current(connection, credential, signal) {
      const hit = await cached(connection, signal);
      if (hit !== undefined) return { ...hit, fetched: false };
      const key = `${connection.connectionId}#${connection.secretGeneration}`;
      let pending = inflight.get(key);
      if (pending === undefined) {
        pending = refresh(connection, credential, signal).finally(() => inflight.delete(key));
        inflight.set(key, pending);
      }
      return { ...(await pending), fetched: true };
    },
    async forget(connection, signal) {
      local.delete(keyOf(connection));
      await bucket.delete(keyOf(connection), signal === undefined ? {} : { signal });
    },
  };
}
