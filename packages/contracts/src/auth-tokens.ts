import { z } from 'zod';
import { AgentRevision, ExternalId, PrincipalId, TenantId, WorkspaceId } from './primitives.js';

// Signed tokens (JWS compact, `@toolplane/auth` issues and verifies them) and the per-tenant trusted keys that
// verify them. A token's claims never widen what a subject says: tenant and workspace from the subject must
// match the token, or it is refused.

/** The `aud` of every Toolplane token. */
export const TOKEN_AUDIENCE = 'toolplane';

/** The request header an operator token travels in, as `Bearer <token>`; never logged. */
export const AUTHORIZATION_HEADER = 'Authorization';

/**
 * The role an operator token must carry for platform operations that touch every workspace of a tenant, such as
 * rebuilding the audit projections; reading them needs only an operator token of the scope.
 */
export const PLATFORM_ADMIN_ROLE = 'platform-admin';

/** Who a token speaks for: an agent runtime acting for a principal, or a human operator. */
export const TokenKind = z.enum(['agent', 'human']);
export type TokenKind = z.infer<typeof TokenKind>;

/** A role a principal holds (for example `approver`): printable ASCII without spaces. */
export const RoleName = z.string().regex(/^[!-~]{1,128}$/);
export type RoleName = z.infer<typeof RoleName>;

/** The claims of an agent context token: which agent revision acts, for which principal, in which scope. */
export const AgentContextClaims = z.strictObject({
  kind: z.literal('agent'),
  tenant: TenantId,
  workspace: WorkspaceId,
  /** The principal the agent acts for. */
  principal: PrincipalId,
  agentId: ExternalId,
  agentRevision: AgentRevision,
  roles: z.array(RoleName).max(32).optional(),
});
export type AgentContextClaims = z.infer<typeof AgentContextClaims>;

/** The claims of an operator token: a human of one tenant, the workspaces they operate, their roles. */
export const OperatorClaims = z.strictObject({
  kind: z.literal('human'),
  tenant: TenantId,
  workspaces: z.array(WorkspaceId).min(1).max(64),
  principal: PrincipalId,
  roles: z.array(RoleName).max(32),
});
export type OperatorClaims = z.infer<typeof OperatorClaims>;

/** The Toolplane claims of a token, by kind (registered JWT claims such as exp and aud are kept apart). */
export const TokenClaims = z.discriminatedUnion('kind', [AgentContextClaims, OperatorClaims]);
export type TokenClaims = z.infer<typeof TokenClaims>;

/** Signature algorithms Toolplane accepts: asymmetric only (Ed25519 by default), never `none` or an HMAC. */
export const TokenAlgorithm = z.enum(['EdDSA', 'Ed25519', 'ES256']);
export type TokenAlgorithm = z.infer<typeof TokenAlgorithm>;

const base64Url = (length: number) => z.string().regex(new RegExp(`^[A-Za-z0-9_-]{${length}}$`));
const publicKeyCommon = {
  kid: z.string().regex(/^[!-~]{1,128}$/),
  use: z.literal('sig').optional(),
  key_ops: z.array(z.literal('verify')).max(1).optional(),
};

/** A trusted public verification key as a JWK, named by its `kid`; private or symmetric key material is refused. */
export const TrustedPublicJwk = z.discriminatedUnion('kty', [
  z.strictObject({ kty: z.literal('OKP'), crv: z.literal('Ed25519'), x: base64Url(43), alg: z.enum(['EdDSA', 'Ed25519']).optional(), ...publicKeyCommon }),
  z.strictObject({ kty: z.literal('EC'), crv: z.literal('P-256'), x: base64Url(43), y: base64Url(43), alg: z.literal('ES256').optional(), ...publicKeyCommon }),
]);
export type TrustedPublicJwk = z.infer<typeof TrustedPublicJwk>;

/** A tenant's static key list: the public keys its tokens may be signed with (several during a rotation); kids unique. */
const TrustedJwkList = z
  .array(TrustedPublicJwk)
  .min(1)
  .max(16)
  .superRefine((jwks, ctx) => {
    const kids = jwks.map((jwk) => jwk.kid);
    const duplicate = kids.find((kid, i) => kids.indexOf(kid) !== i);
    if (duplicate !== undefined) ctx.addIssue({ code: 'custom', message: `kid ${JSON.stringify(duplicate)} appears twice` });
  });

// Plain http only to this machine, where no one else can sit between the verifier and the issuer (local tests).
const loopbackHosts = new Set(['127.0.0.1', 'localhost']);

/**
 * An https URL (http only on 127.0.0.1 or localhost), without credentials in it: the verifier trusts whatever keys
 * it serves, so the channel must be authenticated, and a setting is no place for a password.
 */
const TrustedUrl = (what: string, options: { readonly queryAllowed: boolean }) =>
  z
    .string()
    .max(2048)
    .superRefine((text, ctx) => {
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        ctx.addIssue({ code: 'custom', message: `${what} must be an absolute URL` });
        return;
      }
      if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopbackHosts.has(url.hostname))) {
        ctx.addIssue({ code: 'custom', message: `${what} must use https (http only on 127.0.0.1 or localhost)` });
      } else if (url.username !== '' || url.password !== '') {
        ctx.addIssue({ code: 'custom', message: `${what} must not carry credentials` });
      } else if (text.includes('#')) {
        ctx.addIssue({ code: 'custom', message: `${what} must have no fragment` });
      } else if (!options.queryAllowed && text.includes('?')) {
        ctx.addIssue({ code: 'custom', message: `${what} must have no query` });
      }
    });

/**
 * An OIDC issuer whose published key set (JWKS) a tenant's tokens are verified against: `issuer` is compared with
 * each token's `iss` exactly as written here (no trailing-slash normalisation, as OIDC requires), `jwksUri` is
 * fetched, cached and fetched again when a token names a kid it does not hold (a rotation at the issuer).
 */
export const TrustedIssuer = z.strictObject({
  issuer: TrustedUrl('issuer', { queryAllowed: false }),
  jwksUri: TrustedUrl('jwksUri', { queryAllowed: true }),
});
export type TrustedIssuer = z.infer<typeof TrustedIssuer>;

/**
 * Per tenant, what its tokens are verified with, in one of two forms:
 * - static keys: `{"acme": [{"kty": "OKP", "crv": "Ed25519", "x": "…", "kid": "acme-1"}, …]}` (public JWKs, each
 *   named by a kid unique within the tenant; several during a rotation);
 * - an OIDC issuer: `{"acme": {"issuer": "https://login.acme.example", "jwksUri":
 *   "https://login.acme.example/.well-known/jwks.json"}}`: the issuer's published keys, fetched over https, and every
 *   token must carry `iss` equal to `issuer`.
 * Either way the token must have audience `toolplane`, an asymmetric algorithm (TokenAlgorithm), sub, iat and exp,
 * and exactly the Toolplane claims of its kind (AgentContextClaims or OperatorClaims).
 */
export const TrustedKeys = z.record(TenantId, z.union([TrustedJwkList, TrustedIssuer]));
export type TrustedKeys = z.infer<typeof TrustedKeys>;

/** Where in a key set private or symmetric key material sits (`acme[0]`), if anywhere. */
function privateKeyMaterial(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [tenant, jwks] of Object.entries(value)) {
    if (!Array.isArray(jwks)) continue;
    const at = jwks.findIndex((jwk: unknown) => typeof jwk === 'object' && jwk !== null && ('d' in jwk || 'k' in jwk || (jwk as { kty?: unknown }).kty === 'oct'));
    if (at >= 0) return `${tenant}[${at}]`;
  }
  return undefined;
}

function issuePath(path: readonly PropertyKey[]): string {
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`)).join('');
}

/**
 * The issue to report, with its full path: a tenant's entry that fits neither form is explained by the form it was
 * evidently meant as (an array: the key list; an object: the issuer), not by zod's "invalid input" of the union.
 */
function reportedIssue(issue: z.core.$ZodIssue, document: unknown): { readonly path: readonly PropertyKey[]; readonly message: string } {
  if (issue.code === 'invalid_union' && issue.path.length === 1) {
    const entry: unknown = typeof document === 'object' && document !== null ? (document as Record<PropertyKey, unknown>)[issue.path[0] as PropertyKey] : undefined;
    const branch = Array.isArray(entry) ? issue.errors[0] : typeof entry === 'object' && entry !== null ? issue.errors[1] : undefined;
    const inner = branch?.[0];
    if (inner !== undefined) return { path: [...issue.path, ...inner.path], message: inner.message };
    return { path: issue.path, message: 'expected an array of public JWKs or {"issuer": "https://…", "jwksUri": "https://…"}' };
  }
  return { path: issue.path, message: issue.message };
}

/**
 * A setting holding TrustedKeys as JSON text (for example TOOLPLANE_TRUSTED_KEYS), parsed and validated; every
 * failure is one issue without a path, so a service's start-up error is one line naming the setting.
 */
export const TrustedKeysSetting = z
  .string({ error: (issue) => (issue.input === undefined ? 'is missing (a JSON object: {"<tenant>": [<public JWK with kid>, …] or {"issuer": "https://…", "jwksUri": "https://…"}})' : 'must be a string') })
  .transform((text, ctx) => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'is not valid JSON (expected {"<tenant>": [<public JWK with kid>, …] or {"issuer": "https://…", "jwksUri": "https://…"}})' });
      return z.NEVER;
    }
    // Named outright (and before the schema speaks of unknown keys): a secret must never be configured here.
    const leaked = privateKeyMaterial(value);
    if (leaked !== undefined) {
      ctx.addIssue({ code: 'custom', message: `holds private or symmetric key material at ${leaked}: configure public asymmetric keys only` });
      return z.NEVER;
    }
    const parsed = TrustedKeys.safeParse(value);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      const reported = first === undefined ? undefined : reportedIssue(first, value);
      ctx.addIssue({ code: 'custom', message: `is not a valid key set: ${reported ? `${issuePath(reported.path) || 'the document'}: ${reported.message}` : 'invalid'}` });
      return z.NEVER;
    }
    return parsed.data;
  });
