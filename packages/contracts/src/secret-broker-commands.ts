import { z } from 'zod';
import { ConnectionRef, ExternalId, InvocationId, IsoDateTime, PrincipalId, ToolId, Uuid, boundedText } from './primitives.js';
import { SealedBox, SealingKeyId } from './sealed-secrets.js';
import { Connection, ConnectionKind, ConnectionName, ConnectionState, OAuth2ClientSettings, OAuthScope } from './secret-broker-documents.js';

// Request/reply contracts of the secret broker (`tp.v1.cmd.{tenant}.{workspace}.secrets.{operation}`). Scope comes
// from the subject, never from a body. Secret material goes in once (create, rotate) and never comes out: no reply
// has a field that could carry it, except the lease's SealedBox, which only the recipient can open. Validation
// messages name the field and the rule, never the value.

// Who asks comes from the operator token in the Authorization header; a body's `actor` is accepted so that older
// clients are not refused, and ignored.
const Actor = PrincipalId.optional().meta({ description: "Ignored: the operator token's principal is recorded." });

// Credentials go into HTTP headers: no control characters anywhere, and no whitespace in tokens.
const HeaderToken = z.string().min(1).max(8192).regex(/^[!-~]+$/, 'must be printable ASCII without spaces');
// Printable characters only: C0 and C1 control characters (CR, LF, NUL, DEL …) are outside these ranges.
const NoControlCharacters = /^[ -~\u00a0-\uffff]+$/;

/** The secret-broker's request/reply operations, as they appear in command subjects. */
export const secretBrokerOperations = {
  createConnection: 'createConnection',
  rotateConnection: 'rotateConnection',
  revokeConnection: 'revokeConnection',
  listConnections: 'listConnections',
  showConnection: 'showConnection',
  leaseSecret: 'leaseSecret',
} as const;

/**
 * A credential as an operator gives it (create, rotate). For oauth2-client-credentials the secret is the client
 * secret together with the client id, token endpoint and scopes, so none of them can be changed unnoticed at rest.
 */
export const CredentialInput = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('api-key'), apiKey: HeaderToken }),
  z.strictObject({ kind: z.literal('bearer'), token: HeaderToken }),
  z.strictObject({
    kind: z.literal('basic'),
    username: z
      .string()
      .min(1)
      .max(256)
      .regex(/^[ -9;-~\u00a0-\uffff]+$/, 'must not contain ":" or control characters'),
    password: z.string().min(1).max(1024).regex(NoControlCharacters, 'must not contain control characters'),
  }),
  z.strictObject({
    kind: z.literal('oauth2-client-credentials'),
    tokenEndpoint: OAuth2ClientSettings.shape.tokenEndpoint,
    clientId: OAuth2ClientSettings.shape.clientId,
    clientSecret: z.string().min(1).max(1024).regex(NoControlCharacters, 'must not contain control characters'),
    scopes: z.array(OAuthScope).max(32).default([]),
  }),
]);
export type CredentialInput = z.infer<typeof CredentialInput>;

/**
 * What a lease hands the recipient, inside the SealedBox (canonical JSON): the credential ready to use. For
 * oauth2-client-credentials it is the current access token, never the client secret.
 */
export const LeasedCredential = z
  .discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('api-key'), apiKey: z.string().min(1) }),
    z.strictObject({ kind: z.literal('bearer'), token: z.string().min(1) }),
    z.strictObject({ kind: z.literal('basic'), username: z.string().min(1), password: z.string().min(1) }),
    z.strictObject({
      kind: z.literal('oauth2-client-credentials'),
      accessToken: z.string().min(1),
      tokenType: z.literal('Bearer'),
      expiresAt: IsoDateTime,
      scopes: z.array(z.string()).optional(),
    }),
  ])
  .meta({ description: 'The plaintext of a lease’s SealedBox: the credential ready to use.' });
export type LeasedCredential = z.infer<typeof LeasedCredential>;

/** A connection as every read shows it: metadata only, never secret material. */
export const ConnectionView = Connection.omit({ tenant: true, workspace: true, secret: true })
  .extend({
    /** Tools that may use it (a revoked connection keeps its list). */
    allowedTools: z.array(ToolId),
    /** The key-encryption key the secret is wrapped with (absent once revoked). */
    kekId: SealingKeyId.optional(),
  })
  .strict();
export type ConnectionView = z.infer<typeof ConnectionView>;

/** Creates a connection in the subject's scope with its first credential. */
export const CreateConnectionRequest = z.strictObject({
  name: ConnectionName,
  allowedTools: z.array(ToolId).min(1).max(100),
  credential: CredentialInput,
  description: boundedText(500).optional(),
  actor: Actor,
});
export type CreateConnectionRequest = z.infer<typeof CreateConnectionRequest>;

/** Replaces a connection's credential (same kind); cached tokens of the old one are dropped. */
export const RotateConnectionRequest = z.strictObject({ connectionRef: ConnectionRef, credential: CredentialInput, actor: Actor });
export type RotateConnectionRequest = z.infer<typeof RotateConnectionRequest>;

/** Revokes a connection: its secret is deleted, its active leases are revoked, further leases are denied. */
export const RevokeConnectionRequest = z.strictObject({ connectionRef: ConnectionRef, reason: boundedText(500).optional(), actor: Actor });
export type RevokeConnectionRequest = z.infer<typeof RevokeConnectionRequest>;

/** Names one connection of the scope by name or id. */
export const ShowConnectionRequest = z.strictObject({ connectionRef: ConnectionRef });
export type ShowConnectionRequest = z.infer<typeof ShowConnectionRequest>;

/** Lists the scope's connections by name, a page at a time. */
export const ListConnectionsRequest = z.strictObject({
  state: ConnectionState.optional(),
  limit: z.number().int().min(1).max(200).default(50),
  /** The `next` of the previous page. */
  after: z.string().min(1).max(2048).optional(),
});
export type ListConnectionsRequest = z.infer<typeof ListConnectionsRequest>;

/** A page of connections and the cursor of the next one (null on the last page). */
export const ListConnectionsReply = z.strictObject({ items: z.array(ConnectionView), next: z.string().nullable() });
export type ListConnectionsReply = z.infer<typeof ListConnectionsReply>;

/**
 * Asks for a connection's credential for one invocation of one tool, sealed to the recipient key the broker has
 * configured under `recipientKeyId` (the requesting service's identity). At most one lease exists per
 * invocation and connection: asking again returns it, sealed afresh, while it is active.
 */
export const SecretLeaseRequest = z.strictObject({
  invocationId: InvocationId,
  toolId: ToolId,
  connectionRef: ConnectionRef,
  recipientKeyId: SealingKeyId,
  /** A shorter lease than the broker's maximum. */
  ttlMs: z.number().int().positive().max(86_400_000).optional(),
  correlationId: ExternalId.optional(),
});
export type SecretLeaseRequest = z.infer<typeof SecretLeaseRequest>;

/**
 * A granted lease. `sealed` opens with the recipient's private key and the context
 * `{ leaseId, invocationId }` (the recipient key id is bound by the box itself) into a LeasedCredential.
 */
export const SecretLeaseReply = z.strictObject({
  leaseId: Uuid,
  connectionId: Uuid,
  kind: ConnectionKind,
  expiresAt: IsoDateTime,
  sealed: SealedBox,
});
export type SecretLeaseReply = z.infer<typeof SecretLeaseReply>;

/** The request and reply contract of every secret-broker operation, by operation name. */
export const secretBrokerContracts = {
  createConnection: { request: CreateConnectionRequest, reply: ConnectionView },
  rotateConnection: { request: RotateConnectionRequest, reply: ConnectionView },
  revokeConnection: { request: RevokeConnectionRequest, reply: ConnectionView },
  listConnections: { request: ListConnectionsRequest, reply: ListConnectionsReply },
  showConnection: { request: ShowConnectionRequest, reply: ConnectionView },
  leaseSecret: { request: SecretLeaseRequest, reply: SecretLeaseReply },
} as const satisfies Record<keyof typeof secretBrokerOperations, { request: z.ZodType; reply: z.ZodType }>;
