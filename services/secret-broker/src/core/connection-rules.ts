import {
  ToolplaneError,
  type Connection,
  type ConnectionSummary,
  type ConnectionView,
  type CreateConnectionRequest,
  type CredentialInput,
  type OAuth2ClientSettings,
  type RevokeConnectionRequest,
  type RotateConnectionRequest,
  type Scope,
} from '@toolplane/contracts';

// The pure rules of connections: what a create, rotate or revoke may do and what it writes. No I/O, no clock,
// no randomness: the caller passes `now` and the new id, encrypts the credential and stores the result.

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What the rules need to know about the deployment. */
export interface ConnectionPolicy {
  /** Whether http:// token endpoints are acceptable (development only). */
  readonly allowHttpTokenEndpoints: boolean;
}

/** What a credential's ciphertext is bound to: another connection, tenant, workspace, kind or generation fails to decrypt it. */
export function credentialContext(connection: Pick<Connection, 'tenant' | 'workspace' | 'connectionId' | 'kind' | 'secretGeneration'>): Record<string, string> {
  return {
    purpose: 'connection-credential',
    tenant: connection.tenant,
    workspace: connection.workspace,
    connectionId: connection.connectionId,
    kind: connection.kind,
    secretGeneration: String(connection.secretGeneration),
  };
}

/** What an access token's ciphertext is bound to: its connection and the credential generation it came from. */
export function accessTokenContext(connection: Pick<Connection, 'tenant' | 'workspace' | 'connectionId' | 'secretGeneration'>): Record<string, string> {
  return {
    purpose: 'access-token',
    tenant: connection.tenant,
    workspace: connection.workspace,
    connectionId: connection.connectionId,
    secretGeneration: String(connection.secretGeneration),
  };
}

/**
 * Checks what the wire contract cannot: a token endpoint is https (http only where allowed), without
 * credentials or a fragment. Messages name the rule; the credential is never part of them.
 */
export function checkCredential(credential: CredentialInput, policy: ConnectionPolicy): void {
  if (credential.kind !== 'oauth2-client-credentials') return;
  let url: URL;
  try {
    url = new URL(credential.tokenEndpoint);
  } catch {
    throw new ToolplaneError('INVALID_ARGUMENT', 'credential.tokenEndpoint is not a URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttpTokenEndpoints)) {
    throw new ToolplaneError('INVALID_ARGUMENT', 'credential.tokenEndpoint must be an https:// URL');
  }
  if (url.username !== '' || url.password !== '') throw new ToolplaneError('INVALID_ARGUMENT', 'credential.tokenEndpoint must not contain credentials');
  if (url.hash !== '') throw new ToolplaneError('INVALID_ARGUMENT', 'credential.tokenEndpoint must not have a fragment');
}

/** The non-secret oauth2 settings of a credential, kept in the clear for display. */
export function displaySettings(credential: CredentialInput): OAuth2ClientSettings | undefined {
  if (credential.kind !== 'oauth2-client-credentials') return undefined;
  return { tokenEndpoint: credential.tokenEndpoint, clientId: credential.clientId, scopes: [...credential.scopes] };
}

/** The plaintext stored (encrypted) for a credential: its canonical fields only, as JSON. */
export function credentialPlaintext(credential: CredentialInput): string {
  switch (credential.kind) {
    case 'api-key':
      return JSON.stringify({ kind: credential.kind, apiKey: credential.apiKey });
    case 'bearer':
      return JSON.stringify({ kind: credential.kind, token: credential.token });
    case 'basic':
      return JSON.stringify({ kind: credential.kind, username: credential.username, password: credential.password });
    case 'oauth2-client-credentials':
      return JSON.stringify({
        kind: credential.kind,
        tokenEndpoint: credential.tokenEndpoint,
        clientId: credential.clientId,
        clientSecret: credential.clientSecret,
        scopes: credential.scopes,
      });
  }
}

/** A new connection, without its encrypted secret (the caller adds it, bound to `credentialContext`). */
export function planNewConnection(
  scope: Scope,
  request: CreateConnectionRequest,
  ids: { readonly connectionId: string; readonly now: Date },
  policy: ConnectionPolicy,
): Omit<Connection, 'secret'> {
  if (uuidShape.test(request.name)) throw new ToolplaneError('INVALID_ARGUMENT', 'name must not look like a UUID: connection ids do');
  checkCredential(request.credential, policy);
  const at = ids.now.toISOString();
  const oauth2 = displaySettings(request.credential);
  return {
    connectionId: ids.connectionId,
    tenant: scope.tenant,
    workspace: scope.workspace,
    name: request.name,
    kind: request.credential.kind,
    state: 'Active',
    allowedTools: [...new Set(request.allowedTools)].sort(),
    ...(request.description === undefined ? {} : { description: request.description }),
    secretGeneration: 1,
    ...(oauth2 === undefined ? {} : { oauth2 }),
    createdAt: at,
    ...(request.actor === undefined ? {} : { createdBy: request.actor }),
    updatedAt: at,
    version: 1,
  };
}

/** The fields a rotation sets (besides the new encrypted secret), or why it is refused. */
export function planRotation(
  connection: Connection,
  request: RotateConnectionRequest,
  now: Date,
  policy: ConnectionPolicy,
): Pick<Connection, 'secretGeneration' | 'updatedAt' | 'rotatedAt'> & Partial<Pick<Connection, 'oauth2' | 'rotatedBy'>> {
  if (connection.state !== 'Active') throw new ToolplaneError('CONFLICT', `connection ${connection.name} is revoked; create a new one`);
  if (request.credential.kind !== connection.kind) {
    throw new ToolplaneError('INVALID_ARGUMENT', `connection ${connection.name} holds a ${connection.kind} credential, not ${request.credential.kind}`);
  }
  checkCredential(request.credential, policy);
  const at = now.toISOString();
  const oauth2 = displaySettings(request.credential);
  return {
    secretGeneration: connection.secretGeneration + 1,
    updatedAt: at,
    rotatedAt: at,
    ...(oauth2 === undefined ? {} : { oauth2 }),
    ...(request.actor === undefined ? {} : { rotatedBy: request.actor }),
  };
}

/** The fields a revocation sets, or `undefined` when the connection is already revoked (revoking is idempotent). */
export function planRevocation(
  connection: Connection,
  request: RevokeConnectionRequest,
  now: Date,
): (Pick<Connection, 'state' | 'updatedAt' | 'revokedAt'> & Partial<Pick<Connection, 'revokedBy' | 'revokeReason'>>) | undefined {
  if (connection.state === 'Revoked') return undefined;
  const at = now.toISOString();
  return {
    state: 'Revoked',
    updatedAt: at,
    revokedAt: at,
    ...(request.actor === undefined ? {} : { revokedBy: request.actor }),
    ...(request.reason === undefined ? {} : { revokeReason: request.reason }),
  };
}

/** A connection as the `connections` read model holds it: its metadata and the KEK id of its secret, never the secret. */
export function toConnectionSummary(connection: Connection): ConnectionSummary {
  const { secret, ...metadata } = connection;
  return { ...metadata, ...(secret === undefined ? {} : { kekId: secret.kekId }) };
}

/** A connection as reads show it: an explicit list of metadata fields, so secret material can never slip through. */
export function toConnectionView(connection: Connection | ConnectionSummary): ConnectionView {
  const optional = <K extends keyof Connection & keyof ConnectionView>(key: K) => (connection[key] === undefined ? {} : { [key]: connection[key] });
  const kekId = ('kekId' in connection ? connection.kekId : undefined) ?? ('secret' in connection ? connection.secret?.kekId : undefined);
  return {
    connectionId: connection.connectionId,
    name: connection.name,
    kind: connection.kind,
    state: connection.state,
    allowedTools: [...connection.allowedTools],
    ...optional('description'),
    secretGeneration: connection.secretGeneration,
    ...(kekId === undefined ? {} : { kekId }),
    ...(connection.oauth2 === undefined ? {} : { oauth2: { ...connection.oauth2, scopes: [...connection.oauth2.scopes] } }),
    createdAt: connection.createdAt,
    ...optional('createdBy'),
    updatedAt: connection.updatedAt,
    ...optional('rotatedAt'),
    ...optional('rotatedBy'),
    ...optional('revokedAt'),
    ...optional('revokedBy'),
    ...optional('revokeReason'),
    version: connection.version,
  };
}

/** Whether a ref names a connection by id (UUID-shaped) rather than by name. */
export function refIsId(ref: string): boolean {
  return uuidShape.test(ref);
}
