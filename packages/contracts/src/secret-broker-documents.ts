import { z } from 'zod';
import { ConnectionRef, ExternalId, InvocationId, IsoDateTime, PrincipalId, TenantId, ToolId, Uuid, WorkspaceId, boundedText } from './primitives.js';
import { EncryptedEnvelope, SealingKeyId } from './sealed-secrets.js';

// Stored documents of the secret broker. Secret material exists in them only as EncryptedEnvelope; nothing else
// (no hash, no length, no prefix of a secret) is ever stored.

/** The kinds of credential a connection holds. */
export const ConnectionKind = z.enum(['api-key', 'bearer', 'basic', 'oauth2-client-credentials']);
export type ConnectionKind = z.infer<typeof ConnectionKind>;

/** Active connections can be leased; Revoked ones never again (their secret is deleted). */
export const ConnectionState = z.enum(['Active', 'Revoked']);
export type ConnectionState = z.infer<typeof ConnectionState>;

/** A connection's name, unique in its workspace and usable as its ref; never shaped like a UUID (ids are). */
export const ConnectionName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/)
  .meta({ description: 'Connection name: a letter or digit, then [A-Za-z0-9_.-], at most 64 characters; not a UUID.' });
export type ConnectionName = z.infer<typeof ConnectionName>;

/** An OAuth 2.0 scope token (RFC 6749 §3.3: printable ASCII without space, `"` or `\`). */
export const OAuthScope = z.string().regex(/^[!#-[\]-~]{1,128}$/);

/** The non-secret settings of an oauth2-client-credentials connection, shown to operators. */
export const OAuth2ClientSettings = z.strictObject({
  tokenEndpoint: z.url({ protocol: /^https?$/ }).max(2048),
  clientId: z.string().regex(/^[!-~]{1,256}$/),
  scopes: z.array(OAuthScope).max(32),
});
export type OAuth2ClientSettings = z.infer<typeof OAuth2ClientSettings>;

/**
 * One connection (collection `connections`): a credential for tools, scoped to a tenant and workspace, usable
 * by the tools on its allow-list. The credential is only in `secret`, encrypted; it is removed on revocation.
 */
export const Connection = z.object({
  connectionId: Uuid,
  tenant: TenantId,
  workspace: WorkspaceId,
  name: ConnectionName,
  kind: ConnectionKind,
  state: ConnectionState,
  allowedTools: z.array(ToolId).min(1).max(100),
  description: boundedText(500).optional(),
  /** Counts the credentials the connection has held: 1 on create, +1 with every rotation. */
  secretGeneration: z.number().int().positive(),
  secret: EncryptedEnvelope.optional(),
  /** A copy of the oauth2 settings for display; the broker uses the copy inside `secret`, which cannot be altered unnoticed. */
  oauth2: OAuth2ClientSettings.optional(),
  createdAt: IsoDateTime,
  createdBy: PrincipalId.optional(),
  updatedAt: IsoDateTime,
  rotatedAt: IsoDateTime.optional(),
  rotatedBy: PrincipalId.optional(),
  revokedAt: IsoDateTime.optional(),
  revokedBy: PrincipalId.optional(),
  revokeReason: boundedText(500).optional(),
  /** Incremented by every transition; the compare-and-set guard. */
  version: z.number().int().positive(),
});
export type Connection = z.infer<typeof Connection>;

/** Active until `expiresAt` (then Expired, by the sweeper) or until its connection is revoked. */
export const SecretLeaseState = z.enum(['Active', 'Expired', 'Revoked']);
export type SecretLeaseState = z.infer<typeof SecretLeaseState>;

/**
 * One lease (collection `secret_leases`): who received which connection's credential, for which invocation
 * and tool, when and until when. Never the value. At most one per (tenant, workspace, invocation, connection).
 */
export const SecretLease = z.object({
  leaseId: Uuid,
  tenant: TenantId,
  workspace: WorkspaceId,
  connectionId: Uuid,
  /** The ref the requester named (the connection's name or id). */
  connectionRef: ConnectionRef,
  invocationId: InvocationId,
  toolId: ToolId,
  /** The service identity the credential was sealed to (`svc:{recipientKeyId}`). */
  leasedTo: PrincipalId,
  recipientKeyId: SealingKeyId,
  secretGeneration: z.number().int().positive(),
  state: SecretLeaseState,
  grantedAt: IsoDateTime,
  expiresAt: IsoDateTime,
  endedAt: IsoDateTime.optional(),
  correlationId: ExternalId.optional(),
  version: z.number().int().positive(),
});
export type SecretLease = z.infer<typeof SecretLease>;

/**
 * The access token the broker last obtained for an oauth2-client-credentials connection (collection
 * `access_tokens`, one per connection), encrypted like any secret, shared by all broker replicas.
 */
export const CachedAccessToken = z.object({
  connectionId: Uuid,
  tenant: TenantId,
  workspace: WorkspaceId,
  /** The connection's secretGeneration the token was obtained with; a rotation makes it stale. */
  secretGeneration: z.number().int().positive(),
  token: EncryptedEnvelope,
  obtainedAt: IsoDateTime,
  expiresAt: IsoDateTime,
});
export type CachedAccessToken = z.infer<typeof CachedAccessToken>;
