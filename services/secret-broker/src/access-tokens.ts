import type { Connection, CredentialInput } from '@toolplane/contracts';
import { toStoreError, type StoreCollection } from '@toolplane/store';
import type { AccessTokenDocument } from './collections.js';
import { tokenExpiry, tokenIsFresh } from './core/token-rules.js';
import type { CredentialVault } from './credential-vault.js';
import type { FetchAccessToken } from './token-endpoint.js';

// Access tokens of oauth2-client-credentials connections: one cached per connection in `access_tokens`,
// encrypted and bound to the credential generation it was obtained with, shared by every replica; refreshed
// once less than the margin of its lifetime is left. Concurrent refreshes in one process share one request.

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
  readonly collection: StoreCollection<AccessTokenDocument>;
  readonly vault: CredentialVault;
  readonly fetchToken: FetchAccessToken;
  readonly refreshMarginMs: number;
  /** The lifetime assumed for leasing a token whose endpoint gave no expires_in (it is then not cached). */
  readonly uncachedLifetimeMs: number;
  readonly now: () => Date;
}

/** The access-token cache over its collection. */
export function createAccessTokens(options: AccessTokensOptions): AccessTokens {
  const { collection, vault, fetchToken, refreshMarginMs, now } = options;
  const inflight = new Map<string, Promise<AccessToken>>();

  const cached = async (connection: Connection, signal: AbortSignal): Promise<AccessToken | undefined> => {
    let document: AccessTokenDocument | null;
    try {
      document = await collection.raw.findOne({ _id: connection.connectionId, tenant: connection.tenant, workspace: connection.workspace }, { signal });
    } catch (error) {
      throw toStoreError(error, 'reading the access-token cache', signal);
    }
    if (document === null || document.secretGeneration !== connection.secretGeneration) return undefined;
    const expiresAt = new Date(document.expiresAt);
    if (!tokenIsFresh(expiresAt, now(), refreshMarginMs)) return undefined;
    const token = vault.openToken(connection, document.token);
    return token === undefined ? undefined : { accessToken: token.accessToken, expiresAt, ...(token.scopes === undefined ? {} : { scopes: token.scopes }) };
  };

  const refresh = async (connection: Connection, credential: OAuth2Credential, signal: AbortSignal): Promise<AccessToken> => {
    const obtainedAt = now();
    const issued = await fetchToken(connection.name, credential, signal);
    const expiresAt = tokenExpiry(obtainedAt, issued.expiresInSeconds);
    const scopes = issued.scopes === undefined ? {} : { scopes: issued.scopes };
    if (expiresAt === undefined) return { accessToken: issued.accessToken, expiresAt: new Date(obtainedAt.getTime() + options.uncachedLifetimeMs), ...scopes };
    const document: AccessTokenDocument = {
      _id: connection.connectionId,
      connectionId: connection.connectionId,
      tenant: connection.tenant,
      workspace: connection.workspace,
      secretGeneration: connection.secretGeneration,
      token: vault.sealToken(connection, { accessToken: issued.accessToken, ...(issued.scopes === undefined ? {} : { scopes: [...issued.scopes] }) }),
      obtainedAt: obtainedAt.toISOString(),
      expiresAt: expiresAt.toISOString(),
    };
    try {
      // Not a compare-and-set document: replicas that refresh at once each store a valid token; the last write wins.
      await collection.raw.replaceOne({ _id: connection.connectionId }, document, { upsert: true });
    } catch (error) {
      throw toStoreError(error, 'writing the access-token cache', signal);
    }
    return { accessToken: issued.accessToken, expiresAt, ...scopes };
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
      try {
        await collection.raw.deleteOne({ _id: connection.connectionId, tenant: connection.tenant, workspace: connection.workspace });
      } catch (error) {
        throw toStoreError(error, 'dropping a cached access token', signal);
      }
    },
  };
}
