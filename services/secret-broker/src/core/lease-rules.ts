import {
  ToolplaneError,
  toWireError,
  type Connection,
  type CredentialInput,
  type LeasedCredential,
  type Scope,
  type SecretLease,
  type SecretLeaseDenied,
  type SecretLeased,
  type SecretLeaseRequest,
} from '@toolplane/contracts';

// The pure rules of leases: who may have which credential, for how long, and what is recorded and published.
// Scope comes from the subject; a connection of another scope is indistinguishable from a missing one.

/** What decideLease needs to know. */
export interface LeaseFacts {
  readonly scope: Scope;
  readonly request: SecretLeaseRequest;
  /** The connection the ref names in the request's scope, or null. */
  readonly connection: Connection | null;
  /** Whether the broker has a public key configured under this recipient key id. */
  readonly recipientKnown: boolean;
  readonly now: Date;
  /** The longest lease the broker grants. */
  readonly maxTtlMs: number;
}

/** The verdict on a lease request: granted until `expiresAt` to `leasedTo`, or refused with a taxonomy error. */
export type LeaseDecision =
  | { readonly granted: true; readonly connection: Connection; readonly expiresAt: Date; readonly leasedTo: string }
  | { readonly granted: false; readonly error: ToolplaneError };

/** The service identity a lease sealed to `recipientKeyId` is released to. */
export function leasedTo(recipientKeyId: string): string {
  return `svc:${recipientKeyId}`;
}

/**
 * Decides a lease request. In order: an unknown recipient key is refused (AUTHORIZATION_DENIED) before the
 * connection is even looked at; a connection missing from the scope is NOT_FOUND (another tenant's looks the
 * same); a revoked one, or a tool not on its allow-list, is AUTHORIZATION_DENIED.
 */
export function decideLease(facts: LeaseFacts): LeaseDecision {
  const { request, connection } = facts;
  const refuse = (code: 'AUTHORIZATION_DENIED' | 'NOT_FOUND' | 'INTERNAL', message: string): LeaseDecision => ({ granted: false, error: new ToolplaneError(code, message) });
  if (!facts.recipientKnown) return refuse('AUTHORIZATION_DENIED', `recipient key ${request.recipientKeyId} is not configured in the secret broker; leases are sealed only to configured keys`);
  if (connection === null || connection.tenant !== facts.scope.tenant || connection.workspace !== facts.scope.workspace) {
    return refuse('NOT_FOUND', `no connection ${request.connectionRef} in this workspace`);
  }
  if (connection.state !== 'Active') return refuse('AUTHORIZATION_DENIED', `connection ${connection.name} is revoked`);
  if (!connection.allowedTools.includes(request.toolId)) return refuse('AUTHORIZATION_DENIED', `tool ${request.toolId} is not allowed to use connection ${connection.name}`);
  if (connection.secret === undefined) return refuse('INTERNAL', `connection ${connection.name} has no stored credential`);
  const ttlMs = Math.min(request.ttlMs ?? facts.maxTtlMs, facts.maxTtlMs);
  return { granted: true, connection, expiresAt: new Date(facts.now.getTime() + ttlMs), leasedTo: leasedTo(request.recipientKeyId) };
}

/** A lease ends no later than the access token it carries. */
export function leaseExpiry(expiresAt: Date, tokenExpiresAt: Date | undefined): Date {
  return tokenExpiresAt !== undefined && tokenExpiresAt < expiresAt ? tokenExpiresAt : expiresAt;
}

/** The lease record of a granted request. */
export function newLease(
  facts: { readonly scope: Scope; readonly request: SecretLeaseRequest; readonly connection: Connection },
  grant: { readonly leaseId: string; readonly now: Date; readonly expiresAt: Date; readonly leasedTo: string },
): SecretLease {
  const { scope, request, connection } = facts;
  return {
    leaseId: grant.leaseId,
    tenant: scope.tenant,
    workspace: scope.workspace,
    connectionId: connection.connectionId,
    connectionRef: request.connectionRef,
    invocationId: request.invocationId,
    toolId: request.toolId,
    leasedTo: grant.leasedTo,
    recipientKeyId: request.recipientKeyId,
    secretGeneration: connection.secretGeneration,
    state: 'Active',
    grantedAt: grant.now.toISOString(),
    expiresAt: grant.expiresAt.toISOString(),
    ...(request.correlationId === undefined ? {} : { correlationId: request.correlationId }),
    version: 1,
  };
}

/**
 * Whether an invocation that already holds a lease on the connection may have it again (a retried request):
 * only while it is active, for the same tool and recipient, and the credential has not been rotated since.
 */
export function checkExistingLease(existing: SecretLease, request: SecretLeaseRequest, connection: Connection, now: Date): ToolplaneError | undefined {
  const name = connection.name;
  if (existing.state !== 'Active' || Date.parse(existing.expiresAt) <= now.getTime()) {
    return new ToolplaneError('CONFLICT', `the lease of invocation ${request.invocationId} on connection ${name} has ended; a new attempt needs a new invocation id`);
  }
  if (existing.toolId !== request.toolId || existing.recipientKeyId !== request.recipientKeyId) {
    return new ToolplaneError('CONFLICT', `invocation ${request.invocationId} already holds a lease on connection ${name} for another tool or recipient`);
  }
  if (existing.secretGeneration !== connection.secretGeneration) {
    return new ToolplaneError('CONFLICT', `connection ${name} was rotated after invocation ${request.invocationId} leased it; a new attempt needs a new invocation id`);
  }
  return undefined;
}

/** Whether a lease granted just now must be withdrawn because its connection changed meanwhile (revoked or rotated). */
export function leaseOutdatedBy(lease: SecretLease, current: Connection | null): ToolplaneError | undefined {
  if (current === null || current.state !== 'Active') return new ToolplaneError('AUTHORIZATION_DENIED', `connection ${lease.connectionRef} was revoked while the lease was granted`);
  if (current.secretGeneration !== lease.secretGeneration) {
    return new ToolplaneError('CONFLICT', `connection ${current.name} was rotated while the lease was granted; ask again with a new invocation id`);
  }
  return undefined;
}

/** The value a lease hands over: the stored credential, or for oauth2 the current access token. */
export function leasedCredential(credential: CredentialInput, token?: { readonly accessToken: string; readonly expiresAt: Date; readonly scopes?: readonly string[] }): LeasedCredential {
  switch (credential.kind) {
    case 'api-key':
      return { kind: 'api-key', apiKey: credential.apiKey };
    case 'bearer':
      return { kind: 'bearer', token: credential.token };
    case 'basic':
      return { kind: 'basic', username: credential.username, password: credential.password };
    case 'oauth2-client-credentials':
      if (token === undefined) throw new ToolplaneError('INTERNAL', 'an oauth2 lease needs an access token');
      return {
        kind: 'oauth2-client-credentials',
        accessToken: token.accessToken,
        tokenType: 'Bearer',
        expiresAt: token.expiresAt.toISOString(),
        ...(token.scopes === undefined ? {} : { scopes: [...token.scopes] }),
      };
  }
}

/** The SecretLeased event of a lease (ids and times only). */
export function leasedEvent(lease: SecretLease, eventId: string, now: Date): SecretLeased {
  return {
    type: 'SecretLeased',
    data: {
      leaseId: lease.leaseId,
      connectionRef: lease.connectionRef,
      invocationId: lease.invocationId,
      toolId: lease.toolId,
      leasedTo: lease.leasedTo,
      expiresAt: lease.expiresAt,
    },
    metadata: {
      eventId,
      tenant: lease.tenant,
      workspace: lease.workspace,
      occurredAt: now.toISOString(),
      ...(lease.correlationId === undefined ? {} : { correlationId: lease.correlationId }),
      actor: lease.leasedTo,
    },
  };
}

/** The SecretLeaseDenied event of a refused request; the failure keeps the code and the (value-free) message. */
export function deniedEvent(scope: Scope, request: SecretLeaseRequest, error: unknown, eventId: string, now: Date): SecretLeaseDenied {
  const wire = toWireError(error);
  return {
    type: 'SecretLeaseDenied',
    data: {
      connectionRef: request.connectionRef,
      invocationId: request.invocationId,
      toolId: request.toolId,
      failure: { code: wire.code, message: wire.message, retryable: wire.retryable },
    },
    metadata: {
      eventId,
      tenant: scope.tenant,
      workspace: scope.workspace,
      occurredAt: now.toISOString(),
      ...(request.correlationId === undefined ? {} : { correlationId: request.correlationId }),
      actor: leasedTo(request.recipientKeyId),
    },
  };
}
