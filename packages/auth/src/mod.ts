// The public entry of @toolplane/auth: signed Toolplane tokens (agent context and operator), issued with a
// private key and verified against per-tenant trusted public keys or a tenant's OIDC issuer's published key set.
export { bearerHeaders, bearerTokenOf } from './bearer.js';
export { decodeTokenClaims, tokenExpiresAtMs } from './decode-token.js';
export { lifetimeSeconds, type Lifetime } from './durations.js';
export { issueToken, type IssueTokenOptions, type SigningKey } from './issue-token.js';
export { issuerKeySetDefaults, type IssuerKeySetOptions } from './issuer-key-set.js';
export { generateSigningKeyPair, type SigningKeyPair } from './signing-keys.js';
export { createTokenVerifier, type ClaimsOf, type ExpectedToken, type TokenVerifier, type TokenVerifierOptions } from './token-verifier.js';
export { verifyOperator, type OperatorRequirement } from './verify-operator.js';
