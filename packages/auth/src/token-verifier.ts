import { decodeProtectedHeader, importJWK, jwtVerify, type CryptoKey, type JWTPayload, type ProtectedHeaderParameters } from 'jose';
import {
  AgentContextClaims,
  OperatorClaims,
  TOKEN_AUDIENCE,
  TokenAlgorithm,
  ToolplaneError,
  type TokenKind,
  type TrustedKeys,
  type TrustedPublicJwk,
} from '@toolplane/contracts';
import { issuerKeyResolver, type IssuerKeyResolver, type IssuerKeySetOptions } from './issuer-key-set.js';
import { refused } from './refused.js';

/** What the caller expects the token to be: the scope of the request (from its subject) and the kind of holder. */
export interface ExpectedToken<K extends TokenKind = TokenKind> {
  readonly tenant: string;
  readonly workspace: string;
  readonly kind: K;
}

/** The verified claims of a token of kind K. */
export type ClaimsOf<K extends TokenKind> = K extends 'agent' ? AgentContextClaims : OperatorClaims;

/** Verifies Toolplane tokens against the trusted keys of the tenant they are expected for. */
export interface TokenVerifier {
  /**
   * The token's claims, once its signature, expiry, audience, tenant, workspace and kind all check out;
   * otherwise AUTHENTICATION_FAILED with a reason that never quotes the token.
   */
  verify<K extends TokenKind>(token: string, expected: ExpectedToken<K>): Promise<ClaimsOf<K>>;
}

/** How a verifier tells the time and how much clock skew it forgives. */
export interface TokenVerifierOptions {
  readonly clock?: () => Date;
  /**
   * Seconds of skew forgiven on exp, nbf and iat: a token is still accepted this long after it expired. Required, so
   * every service passes its configured TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S rather than a default of its own.
   */
  readonly clockToleranceSeconds: number;
  /** How the key sets of tenants trusted through an OIDC issuer are fetched and cached (defaults suit production). */
  readonly issuerKeySets?: IssuerKeySetOptions;
}

const maxTokenLength = 8192;
// Tokens whose verified signature is remembered: one per runtime session is typical; beyond it, the oldest go.
const verifiedTokensKept = 10_000;
const registeredClaims = new Set(['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti']);

/** Which algorithms a trusted key may verify. */
function algorithmsFor(jwk: TrustedPublicJwk): readonly TokenAlgorithm[] {
  if (jwk.alg !== undefined) return [jwk.alg];
  return jwk.kty === 'OKP' ? ['EdDSA', 'Ed25519'] : ['ES256'];
}

/** The reason a jose failure stands for, in words that name no token content. */
function joseReason(error: unknown): string {
  const { code, claim } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; claim?: unknown };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return 'it has expired';
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'the signature does not verify';
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'its algorithm is not accepted';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (claim === 'aud') return `it is not meant for ${TOKEN_AUDIENCE}`;
      if (claim === 'nbf') return 'it is not valid yet';
      if (claim === 'iat') return 'it was issued in the future';
      if (claim === 'iss') return 'it was not issued by the issuer its tenant trusts';
      return `its ${typeof claim === 'string' ? claim : 'claims'} claim is missing or invalid`;
    default:
      return 'it is malformed';
  }
}

/**
 * A verifier over per-tenant trusted keys (see TrustedKeys; parse configuration with TrustedKeysSetting): a tenant's
 * static public JWKs, or the published key set of its OIDC issuer, whose tokens must also carry `iss` = the issuer.
 * Refuses: unsigned (`alg: none`) and symmetric or unlisted algorithms, a missing or unknown kid, a bad signature,
 * expiry, another audience, another issuer, another tenant (its keys are not consulted, and its claim must match),
 * another workspace and the wrong kind of holder.
 */
export function createTokenVerifier(keyConfig: TrustedKeys, options: TokenVerifierOptions): TokenVerifier {
  const clock = options.clock ?? (() => new Date());
  const tolerance = options.clockToleranceSeconds;
  if (!Number.isInteger(tolerance) || tolerance < 0) {
    throw new ToolplaneError('INVALID_ARGUMENT', `clockToleranceSeconds must be a whole number of seconds, 0 or more, not ${String(tolerance)}`);
  }
  // Imported once per (tenant, kid, alg); a failed import is not cached, so the error repeats rather than sticks.
  const imported = new Map<string, Promise<CryptoKey | Uint8Array>>();
  const importedKey = (tenant: string, jwk: TrustedPublicJwk, alg: TokenAlgorithm) => {
    const cacheKey = JSON.stringify([tenant, jwk.kid, alg]);
    let key = imported.get(cacheKey);
    if (key === undefined) {
      key = importJWK({ ...jwk }, alg);
      imported.set(cacheKey, key);
      key.catch(() => imported.delete(cacheKey));
    }
    return key;
  };
  // One remote key set per issuer-trusting tenant, made up front so that each keeps its own cache and cooldown.
  const issuers = new Map<string, { readonly issuer: string; readonly resolve: IssuerKeyResolver }>();
  for (const [tenant, entry] of Object.entries(keyConfig)) {
    if (!Array.isArray(entry)) issuers.set(tenant, { issuer: entry.issuer, resolve: issuerKeyResolver(tenant, entry, options.issuerKeySets) });
  }

  /** The key that verifies a token of `tenant` with this header, and the issuer it must name, or a refusal. */
  const keyFor = async (tenant: string, header: ProtectedHeaderParameters & { kid: string }, alg: TokenAlgorithm): Promise<{ key: CryptoKey | Uint8Array; issuer?: string }> => {
    const remote = issuers.get(tenant);
    if (remote !== undefined) return { key: await remote.resolve(header), issuer: remote.issuer };
    const tenantKeys = Object.hasOwn(keyConfig, tenant) ? keyConfig[tenant] : undefined;
    if (!Array.isArray(tenantKeys)) throw refused(`no keys are trusted for tenant ${tenant}`);
    const jwk = tenantKeys.find((candidate) => candidate.kid === header.kid);
    if (jwk === undefined) throw refused(`its signing key is not trusted for tenant ${tenant}`);
    if (!algorithmsFor(jwk).includes(alg)) throw refused(`algorithm ${alg} does not fit its signing key`);
    try {
      return { key: await importedKey(tenant, jwk, alg) };
    } catch (error) {
      throw refused(joseReason(error), { cause: error });
    }
  };

  // Tokens whose signature verified, by tenant and token, with the key that verified them (the oldest forgotten
  // first beyond the bound). The key is kept so that a remembered token is only trusted while that same key is:
  // once an issuer's key set is fetched again, its keys are new objects, and the signature is checked afresh.
  const verified = new Map<string, { readonly payload: JWTPayload; readonly key: CryptoKey | Uint8Array }>();
  const remember = (cacheKey: string, entry: { readonly payload: JWTPayload; readonly key: CryptoKey | Uint8Array }) => {
    if (verified.size >= verifiedTokensKept) verified.delete(verified.keys().next().value ?? cacheKey);
    verified.set(cacheKey, entry);
  };

  return {
    async verify<K extends TokenKind>(token: string, expected: ExpectedToken<K>): Promise<ClaimsOf<K>> {
      if (typeof token !== 'string' || token.length === 0 || token.length > maxTokenLength) throw refused('it is empty or too long');
      let header: ProtectedHeaderParameters;
      try {
        header = decodeProtectedHeader(token);
      } catch (error) {
        throw refused('it is malformed', { cause: error });
      }
      if (header.alg === undefined || header.alg === 'none') throw refused('unsigned tokens are never accepted');
      const alg = TokenAlgorithm.safeParse(header.alg);
      if (!alg.success) throw refused(`algorithm ${JSON.stringify(String(header.alg).slice(0, 32))} is not accepted`);
      if (typeof header.kid !== 'string' || header.kid === '') throw refused('it names no signing key (kid)');
      if (header.crit !== undefined) throw refused('it has critical header parameters');
      const { key, issuer } = await keyFor(expected.tenant, { ...header, kid: header.kid }, alg.data);

      // A runtime sends the same context token with every call it makes while the token lives: its signature is
      // checked once (a WebCrypto job per call was a twentieth of the governed path's CPU), its times on every use.
      const cacheKey = `${expected.tenant}\n${token}`;
      const remembered = verified.get(cacheKey);
      let payload: JWTPayload;
      if (remembered === undefined || remembered.key !== key) {
        try {
          ({ payload } = await jwtVerify(token, key, {
            algorithms: [alg.data],
            audience: TOKEN_AUDIENCE,
            ...(issuer === undefined ? {} : { issuer }),
            currentDate: clock(),
            clockTolerance: tolerance,
            requiredClaims: ['sub', 'iat', 'exp'],
          }));
        } catch (error) {
          throw refused(joseReason(error), { cause: error });
        }
        remember(cacheKey, { payload, key });
      } else {
        payload = remembered.payload;
        const now = clock().getTime() / 1000;
        if (typeof payload.exp === 'number' && now > payload.exp + tolerance) {
          verified.delete(cacheKey);
          throw refused('it has expired');
        }
        if (typeof payload.nbf === 'number' && payload.nbf > now + tolerance) throw refused('it is not valid yet');
      }
      if (typeof payload.iat === 'number' && payload.iat > clock().getTime() / 1000 + tolerance) throw refused('it was issued in the future');

      const schema = expected.kind === 'agent' ? AgentContextClaims : OperatorClaims;
      // An OIDC issuer adds claims of its own (azp, scope, email, sid, …): its tokens are read for Toolplane's claims
      // alone. A token signed with a tenant's own keys is Toolplane's, and anything unexpected in it is malformed.
      const fromIssuer = issuer !== undefined;
      const custom = Object.fromEntries(Object.entries(payload).filter(([name]) => !registeredClaims.has(name) && (!fromIssuer || Object.hasOwn(schema.shape, name))));
      if (custom['kind'] !== expected.kind) throw refused(`expected ${expected.kind === 'agent' ? 'an agent context' : 'an operator'} token`);
      const claims = schema.safeParse({ ...custom, principal: payload.sub });
      if (!claims.success) throw refused('its claims are malformed');
      if (claims.data.tenant !== expected.tenant) throw refused('it is for another tenant');
      const workspaces = claims.data.kind === 'agent' ? [claims.data.workspace] : claims.data.workspaces;
      if (!workspaces.includes(expected.workspace)) throw refused(`it does not cover workspace ${expected.workspace}`);
      return claims.data as ClaimsOf<K>;
    },
  };
}
