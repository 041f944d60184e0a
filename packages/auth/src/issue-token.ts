import { importJWK, SignJWT, type CryptoKey, type JWK, type KeyObject } from 'jose';
import { TOKEN_AUDIENCE, TokenAlgorithm, TokenClaims, ToolplaneError } from '@toolplane/contracts';
import { lifetimeSeconds, type Lifetime } from './durations.js';

/** How a token is signed and how long it lives. */
export interface IssueTokenOptions {
  /** The key id the verifier looks the public key up by (within the token's tenant). */
  readonly kid: string;
  readonly expiresIn: Lifetime;
  /** The issuing instant; default the system clock. */
  readonly now?: Date;
  /** Default EdDSA (an Ed25519 key); ES256 for a P-256 key. */
  readonly alg?: TokenAlgorithm;
  /** A token id, for audit trails that want one. */
  readonly jti?: string;
}

/** A private signing key: a CryptoKey, a Node KeyObject, or a private JWK. */
export type SigningKey = CryptoKey | KeyObject | JWK;

/**
 * Signs a Toolplane token (JWS compact) for `claims`: audience `toolplane`, subject the principal, issued now,
 * expiring after `expiresIn`. INVALID_ARGUMENT when the claims or options are malformed.
 */
export async function issueToken(claims: TokenClaims, privateKey: SigningKey, options: IssueTokenOptions): Promise<string> {
  const parsed = TokenClaims.safeParse(claims);
  if (!parsed.success) throw new ToolplaneError('INVALID_ARGUMENT', `token claims are malformed: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  const alg = TokenAlgorithm.safeParse(options.alg ?? 'EdDSA');
  if (!alg.success) throw new ToolplaneError('INVALID_ARGUMENT', `algorithm ${String(options.alg)} is not accepted (use ${TokenAlgorithm.options.join(', ')})`);
  if (!/^[!-~]{1,128}$/.test(options.kid)) throw new ToolplaneError('INVALID_ARGUMENT', 'kid must be 1-128 printable characters');
  const issuedAt = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const { principal, ...rest } = parsed.data;
  const jwt = new SignJWT(rest)
    .setProtectedHeader({ alg: alg.data, kid: options.kid, typ: 'JWT' })
    .setSubject(principal)
    .setAudience(TOKEN_AUDIENCE)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + lifetimeSeconds(options.expiresIn));
  if (options.jti !== undefined) jwt.setJti(options.jti);
  try {
    return await jwt.sign(isJwk(privateKey) ? await importJWK(privateKey, alg.data) : privateKey);
  } catch (error) {
    throw new ToolplaneError('INVALID_ARGUMENT', `cannot sign with this key and algorithm ${alg.data}`, { cause: error });
  }
}

function isJwk(key: SigningKey): key is JWK {
  return typeof key === 'object' && 'kty' in key && typeof (key as { kty?: unknown }).kty === 'string';
}
