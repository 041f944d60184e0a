import { exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { TrustedPublicJwk } from '@toolplane/contracts';

/** A freshly generated Ed25519 signing key: the private key signs, the public JWK goes into the trusted keys. */
export interface SigningKeyPair {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: TrustedPublicJwk;
}

/**
 * Generates an Ed25519 key pair named `kid` (for tests, local set-ups and tools; production keys come from a
 * key manager). The private key is not extractable unless asked for.
 */
export async function generateSigningKeyPair(kid: string, options: { readonly extractable?: boolean } = {}): Promise<SigningKeyPair> {
  const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: options.extractable ?? false });
  const publicJwk = TrustedPublicJwk.parse({ ...(await exportJWK(publicKey)), kid, alg: 'EdDSA', use: 'sig' });
  return { kid, privateKey, publicJwk };
}
