import type { KeyObject } from 'node:crypto';
import {
  ToolplaneError,
  eventMsgId,
  subjectOfEvent,
  LifecycleEvent,
  type ConnectionView,
  type CreateConnectionRequest,
  type ListConnectionsReply,
  type ListConnectionsRequest,
  type RevokeConnectionRequest,
  type RotateConnectionRequest,
  type Scope,
  type SecretLeaseReply,
  type SecretLeaseRequest,
  type ShowConnectionRequest,
} from '@toolplane/contracts';
import { publish, type Messaging } from '@toolplane/messaging';
import { sealToRecipient } from '@toolplane/sealing';
import { compareAndSet, findPage, insertIfAbsent, type StoreCollection } from '@toolplane/store';
import type { Logger } from '@toolplane/service-kit';
import type { AccessTokens } from './access-tokens.js';
import type { ConnectionDocument, SecretLeaseDocument } from './collections.js';
import { planNewConnection, planRevocation, planRotation, toConnectionView, type ConnectionPolicy } from './core/connection-rules.js';
import { deterministicUuid } from './core/deterministic-id.js';
import { checkExistingLease, decideLease, deniedEvent, leasedCredential, leasedEvent, leaseExpiry, leaseOutdatedBy, newLease } from './core/lease-rules.js';
import type { CredentialVault } from './credential-vault.js';
import { endLease, findConnection, parseConnection, parseLease, requireConnection, revokeActiveLeases } from './repositories.js';

// The secret broker's operations: the pure rules of core/ applied to the stores, the vault, the token cache and
// the event stream. Nothing here logs, returns or publishes a secret value: plaintext exists only between
// decryption and sealing, inside leaseSecret, and is zeroed after use.

/** What the operations run with (the composition root builds it). */
export interface BrokerDependencies {
  readonly connections: StoreCollection<ConnectionDocument>;
  readonly leases: StoreCollection<SecretLeaseDocument>;
  readonly vault: CredentialVault;
  readonly tokens: AccessTokens;
  /** The recipients leases may be sealed to, by key id. */
  readonly recipients: ReadonlyMap<string, KeyObject>;
  readonly messaging: Messaging;
  readonly policy: ConnectionPolicy;
  readonly maxLeaseTtlMs: number;
  readonly now: () => Date;
  readonly newId: () => string;
  readonly logger: Logger;
}

/** The broker's request/reply operations, each for one scope (taken from the subject). */
export interface Broker {
  createConnection(scope: Scope, request: CreateConnectionRequest, signal: AbortSignal): Promise<ConnectionView>;
  rotateConnection(scope: Scope, request: RotateConnectionRequest, signal: AbortSignal): Promise<ConnectionView>;
  revokeConnection(scope: Scope, request: RevokeConnectionRequest, signal: AbortSignal): Promise<ConnectionView>;
  listConnections(scope: Scope, request: ListConnectionsRequest, signal: AbortSignal): Promise<ListConnectionsReply>;
  showConnection(scope: Scope, request: ShowConnectionRequest, signal: AbortSignal): Promise<ConnectionView>;
  leaseSecret(scope: Scope, request: SecretLeaseRequest, signal: AbortSignal): Promise<SecretLeaseReply>;
}

/** Builds the broker's operations over its dependencies. */
export function createBroker(deps: BrokerDependencies): Broker {
  const { connections, leases, vault, tokens, recipients, messaging, policy, now, newId } = deps;
  const log = deps.logger;

  const publishEvent = async (event: LifecycleEvent, signal: AbortSignal) => {
    await publish(messaging, { subject: subjectOfEvent(event), schema: LifecycleEvent, message: event, msgId: eventMsgId(event), signal });
  };

  const deny = async (scope: Scope, request: SecretLeaseRequest, error: unknown, signal: AbortSignal): Promise<never> => {
    if (!(error instanceof ToolplaneError)) log.error({ err: error, invocationId: request.invocationId }, 'lease failed unexpectedly');
    const event = deniedEvent(scope, request, error, newId(), now());
    log.info({ invocationId: request.invocationId, toolId: request.toolId, connectionRef: request.connectionRef, code: event.data.failure.code }, 'lease denied');
    try {
      await publishEvent(event, signal);
    } catch (publishError) {
      // The refusal stands either way; losing its event must not turn it into a different error.
      log.warn({ err: publishError, invocationId: request.invocationId }, 'could not publish SecretLeaseDenied');
    }
    throw error instanceof ToolplaneError ? error : new ToolplaneError('INTERNAL', 'the lease could not be granted');
  };

  const grant = async (scope: Scope, request: SecretLeaseRequest, signal: AbortSignal): Promise<SecretLeaseReply> => {
    const at = now();
    const found = await findConnection(connections, scope, request.connectionRef, signal);
    const decision = decideLease({ scope, request, connection: found, recipientKnown: recipients.has(request.recipientKeyId), now: at, maxTtlMs: deps.maxLeaseTtlMs });
    if (!decision.granted) throw decision.error;
    const { connection } = decision;
    const recipientKey = recipients.get(request.recipientKeyId);
    if (recipientKey === undefined) throw new ToolplaneError('INTERNAL', 'the recipient key vanished');

    const credential = vault.open(connection);
    const token = credential.kind === 'oauth2-client-credentials' ? await tokens.current(connection, credential, signal) : undefined;
    if (token?.fetched === true) log.info({ connectionId: connection.connectionId, expiresAt: token.expiresAt.toISOString() }, 'access token obtained');
    const candidate = newLease({ scope, request, connection }, { leaseId: newId(), now: at, expiresAt: leaseExpiry(decision.expiresAt, token?.expiresAt), leasedTo: decision.leasedTo });
    const stored = await insertIfAbsent(
      leases,
      { _id: candidate.leaseId, ...candidate },
      { key: { tenant: scope.tenant, workspace: scope.workspace, invocationId: request.invocationId, connectionId: connection.connectionId }, signal },
    );
    const lease = stored.created ? candidate : parseLease(stored.existing);
    if (!stored.created) {
      const problem = checkExistingLease(lease, request, connection, at);
      if (problem !== undefined) throw problem;
    }
    // A revocation or rotation that committed after the connection was read above must not leave a lease
    // granted behind its back: revocation revokes the leases it finds, and this check catches the ones it could not see.
    const outdated = leaseOutdatedBy(lease, await findConnection(connections, scope, connection.connectionId, signal));
    if (outdated !== undefined) {
      await endLease(leases, lease, 'Revoked', now(), signal);
      throw outdated;
    }
    await publishEvent(leasedEvent(lease, deterministicUuid(`SecretLeased/${lease.leaseId}`), at), signal);

    const plaintext = Buffer.from(JSON.stringify(leasedCredential(credential, token)), 'utf8');
    try {
      const sealed = sealToRecipient({ keyId: request.recipientKeyId, publicKey: recipientKey }, plaintext, { leaseId: lease.leaseId, invocationId: request.invocationId });
      log.info({ leaseId: lease.leaseId, invocationId: lease.invocationId, toolId: lease.toolId, connectionId: lease.connectionId, leasedTo: lease.leasedTo, expiresAt: lease.expiresAt }, 'lease granted');
      return { leaseId: lease.leaseId, connectionId: connection.connectionId, kind: connection.kind, expiresAt: lease.expiresAt, sealed };
    } finally {
      plaintext.fill(0);
    }
  };

  return {
    async createConnection(scope, request, signal) {
      const plan = planNewConnection(scope, request, { connectionId: newId(), now: now() }, policy);
      const document: ConnectionDocument = { _id: plan.connectionId, ...plan, secret: vault.seal(plan, request.credential) };
      const result = await insertIfAbsent(connections, document, { key: { tenant: scope.tenant, workspace: scope.workspace, name: plan.name }, signal });
      if (!result.created) throw new ToolplaneError('CONFLICT', `a connection named ${plan.name} already exists in this workspace`);
      log.info({ connectionId: plan.connectionId, name: plan.name, kind: plan.kind, kekId: document.secret?.kekId }, 'connection created');
      return toConnectionView(parseConnection(result.document));
    },

    async rotateConnection(scope, request, signal) {
      const connection = await requireConnection(connections, scope, request.connectionRef, signal);
      const plan = planRotation(connection, request, now(), policy);
      const secret = vault.seal({ ...connection, secretGeneration: plan.secretGeneration }, request.credential);
      const result = await compareAndSet(
        connections,
        { id: connection.connectionId, expect: { version: connection.version, state: 'Active' }, where: { tenant: scope.tenant, workspace: scope.workspace }, set: { ...plan, secret } },
        { signal },
      );
      if (!result.ok) {
        if (result.current?.state === 'Revoked') throw new ToolplaneError('CONFLICT', `connection ${connection.name} is revoked; create a new one`);
        throw new ToolplaneError('CONFLICT', `connection ${connection.name} changed while it was being rotated; try again`);
      }
      await tokens.forget(connection, signal);
      log.info({ connectionId: connection.connectionId, secretGeneration: plan.secretGeneration, kekId: secret.kekId }, 'connection rotated');
      return toConnectionView(parseConnection(result.document));
    },

    async revokeConnection(scope, request, signal) {
      let connection = await requireConnection(connections, scope, request.connectionRef, signal);
      const at = now();
      const plan = planRevocation(connection, request, at);
      if (plan !== undefined) {
        const result = await compareAndSet(
          connections,
          { id: connection.connectionId, expect: { version: connection.version, state: 'Active' }, where: { tenant: scope.tenant, workspace: scope.workspace }, set: plan, unset: ['secret'] },
          { signal },
        );
        if (!result.ok && result.current?.state !== 'Revoked') throw new ToolplaneError('CONFLICT', `connection ${connection.name} changed while it was being revoked; try again`);
        connection = parseConnection(result.ok ? result.document : result.current);
      }
      // Also on a repeated revoke: finishes the work of one that stopped half-way.
      const revokedLeases = await revokeActiveLeases(leases, connection, at, signal);
      await tokens.forget(connection, signal);
      log.info({ connectionId: connection.connectionId, revokedLeases }, 'connection revoked');
      return toConnectionView(connection);
    },

    async listConnections(scope, request, signal) {
      const page = await findPage(connections, {
        filter: { tenant: scope.tenant, workspace: scope.workspace, ...(request.state === undefined ? {} : { state: request.state }) },
        sortBy: 'name',
        limit: request.limit,
        ...(request.after === undefined ? {} : { after: request.after }),
        signal,
      });
      return { items: page.items.map((document) => toConnectionView(parseConnection(document))), next: page.next };
    },

    async showConnection(scope, request, signal) {
      return toConnectionView(await requireConnection(connections, scope, request.connectionRef, signal));
    },

    async leaseSecret(scope, request, signal) {
      try {
        return await grant(scope, request, signal);
      } catch (error) {
        return deny(scope, request, error, signal);
      }
    },
  };
}
