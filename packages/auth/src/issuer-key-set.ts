import { createRemoteJWKSet, type CryptoKey, type JWSHeaderParameters } from 'jose';
import type { TrustedKeys } from '@toolplane/contracts';
import { refused } from './refused.js';

/** A tenant's OIDC issuer, as TrustedKeys gives it (the entry that is not a key list). */
export type IssuerEntry = Exclude<TrustedKeys[string], readonly unknown[]>;

/** How an issuer's published key set is fetched and kept. */
export interface IssuerKeySetOptions {
  /** A fetch of the key set that takes longer fails the verification. Default 5000 ms. */
  readonly timeoutMs?: number;
  /**
   * After a fetch, how long a token naming a kid the set does not hold is refused without fetching again: an issuer
   * that rotated is seen within this time, and a stream of made-up kids costs the issuer one fetch per window.
   * Default 30 000 ms.
   */
  readonly cooldownMs?: number;
  /** How long a fetched key set is used before it is fetched again, so a key the issuer withdrew stops verifying. Default 600 000 ms. */
  readonly cacheMaxAgeMs?: number;
}

export const issuerKeySetDefaults = { timeoutMs: 5_000, cooldownMs: 30_000, cacheMaxAgeMs: 600_000 } as const satisfies Required<IssuerKeySetOptions>;

/** Resolves a token's verification key from its header (alg and kid), or refuses it. */
export type IssuerKeyResolver = (header: JWSHeaderParameters) => Promise<CryptoKey>;

/**
 * The key resolver of one tenant's issuer: jose's remote JWKS (cached, fetched again on an unknown kid once the
 * cooldown has passed), with every failure turned into a refusal that says which tenant's issuer failed how. A
 * key set that cannot be fetched is a retryable refusal: the token may be fine once the issuer answers again.
 */
export function issuerKeyResolver(tenant: string, entry: IssuerEntry, options: IssuerKeySetOptions = {}): IssuerKeyResolver {
  const timeoutMs = options.timeoutMs ?? issuerKeySetDefaults.timeoutMs;
  const keySet = createRemoteJWKSet(new URL(entry.jwksUri), {
    timeoutDuration: timeoutMs,
    cooldownDuration: options.cooldownMs ?? issuerKeySetDefaults.cooldownMs,
    cacheMaxAge: options.cacheMaxAgeMs ?? issuerKeySetDefaults.cacheMaxAgeMs,
  });
  const where = `the key set of tenant ${tenant}'s issuer (${entry.jwksUri})`;
  return async (header) => {
    try {
      return await keySet(header);
    } catch (error) {
      const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
      switch (code) {
        case 'ERR_JWKS_NO_MATCHING_KEY':
          throw refused(`its signing key (kid and algorithm) is not in ${where}`, { cause: error });
        case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
          throw refused(`several keys in ${where} match its kid`, { cause: error });
        case 'ERR_JWKS_TIMEOUT':
          throw refused(`${where} did not answer within ${timeoutMs} ms`, { cause: error, retryable: true });
        case 'ERR_JWKS_INVALID':
          throw refused(`${where} is not a valid JSON Web Key Set`, { cause: error });
        case 'ERR_JOSE_NOT_SUPPORTED':
          throw refused('its algorithm is not accepted', { cause: error });
        default:
          // Refused connections, DNS failures, non-200 answers, bodies that are not JSON.
          throw refused(`${where} could not be fetched`, { cause: error, retryable: true });
      }
    }
  };
}
