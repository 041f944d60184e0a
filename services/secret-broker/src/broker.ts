import type { KeyObject } from 'node:crypto';
import {
  ToolplaneError,
  type Connection,
  type ConnectionEvent,
  type ConnectionView,
  type CreateConnectionRequest,
  type LeaseEvent,
  type LifecycleEvent,
  type ListConnectionsReply,
  type ListConnectionsRequest,
  type RevokeConnectionRequest,
  type RotateConnectionRequest,
  type Scope,
  type SecretLeaseReply,
  type SecretLeaseRequest,
  type ShowConnectionRequest,
} from '@toolplane/contracts';
import { foldEvents, handleCommand, handlePreparedCommand, type EventStore } from '@toolplane/event-store';
import { sealToRecipient } from '@toolplane/sealing';
import { findPage, type StoreCollection } from '@toolplane/store';
import type { Logger } from '@toolplane/service-kit';
import type { AccessTokens } from './access-tokens.js';
import type { ConnectionDocument } from './collections.js';
import { connectionIdOf, connectionIdOfName, leaseIdOf } from './core/aggregate-ids.js';
import { connectionDecider } from './core/connection-decider.js';
import { toConnectionView, type ConnectionPolicy } from './core/connection-rules.js';
import { deterministicUuid } from './core/deterministic-id.js';
import { leaseDecider } from './core/lease-decider.js';
import { decideLease, deniedEvent, leasedCredential, leasedEvent, leaseOutdatedBy, type LeaseFacts } from './core/lease-rules.js';
import type { CredentialVault } from './credential-vault.js';
import { streamIdOf } from './event-stores.js';
import { parseSummary } from './repositories.js';

// The secret broker's operations: the deciders of core/ on the broker's private stream, the vault, the token cache
// and the public events. The state a decision is made on is read from the stream (never from MongoDB, which holds
// read models for listConnections only). Nothing here logs, returns or publishes a secret value: plaintext exists
// only between decryption and sealing, inside leaseSecret, and is zeroed after use.

/** What the operations run with (the composition root builds it). */
export interface BrokerDependencies {
  readonly connectionEvents: EventStore<ConnectionEvent>;
  readonly leaseEvents: EventStore<LeaseEvent>;
  /** The `connections` read model (listConnections). */
  readonly connections: StoreCollection<ConnectionDocument>;
  readonly vault: CredentialVault;
  readonly tokens: AccessTokens;
  /** The recipients leases may be sealed to, by key id. */
  readonly recipients: ReadonlyMap<string, KeyObject>;
  /** Publishes a public lifecycle event (with its deterministic id, so a republish is dropped). */
  readonly publishEvent: (event: LifecycleEvent, signal: AbortSignal) => Promise<void>;
  /** Removes a connection's messages before its last from the record (the last holds the whole connection). */
  readonly purgeOlderRecords: (scope: Scope, connectionId: string, signal: AbortSignal) => Promise<void>;
  readonly policy: ConnectionPolicy;
  readonly maxLeaseTtlMs: number;
  readonly now: () => Date;
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

/** The id of SecretLeased for a lease: the same on every republish. */
export function secretLeasedEventId(leaseId: string): string {
  return deterministicUuid(`SecretLeased/${leaseId}`);
}

/** Builds the broker's operations over its dependencies. */
export function createBroker(deps: BrokerDependencies): Broker {
  const { connectionEvents, leaseEvents, connections, vault, tokens, recipients, policy, now } = deps;
  const log = deps.logger;

  const readConnection = async (scope: Scope, connectionId: string, signal: AbortSignal): Promise<{ connection: Connection | null; version: number }> => {
    const stored = await connectionEvents.readStream(streamIdOf(scope, connectionId), { signal });
    return { connection: foldEvents(connectionDecider, stored.events), version: stored.version };
  };

  const deny = async (scope: Scope, request: SecretLeaseRequest, error: unknown, signal: AbortSignal): Promise<never> => {
    if (!(error instanceof ToolplaneError)) log.error({ err: error, invocationId: request.invocationId }, 'lease failed unexpectedly');
    const at = now();
    const code = error instanceof ToolplaneError ? error.code : 'INTERNAL';
    const eventId = deterministicUuid(`SecretLeaseDenied/${scope.tenant}/${scope.workspace}/${request.invocationId}/${request.connectionRef}/${request.toolId}/${code}`);
    const event = deniedEvent(scope, request, error, eventId, at);
    log.info({ invocationId: request.invocationId, toolId: request.toolId, connectionRef: request.connectionRef, code: event.data.failure.code }, 'lease denied');
    try {
      await deps.publishEvent(event, signal);
    } catch (publishError) {
      // The refusal stands either way; losing its event must not turn it into a different error.
      log.warn({ err: publishError, invocationId: request.invocationId }, 'could not publish SecretLeaseDenied');
    }
    throw error instanceof ToolplaneError ? error : new ToolplaneError('INTERNAL', 'the lease could not be granted');
  };

  const grant = async (scope: Scope, request: SecretLeaseRequest, signal: AbortSignal): Promise<SecretLeaseReply> => {
    const at = now();
    const recipientKnown = recipients.has(request.recipientKeyId);
    // An unknown recipient is refused before the connection is read: the answer reveals nothing about it.
    const read = recipientKnown ? await readConnection(scope, connectionIdOf(scope, request.connectionRef), signal) : { connection: null, version: 0 };
    const facts: LeaseFacts = { scope, request, connection: read.connection, recipientKnown, now: at, maxTtlMs: deps.maxLeaseTtlMs };
    const decision = decideLease(facts);
    if (!decision.granted) throw decision.error;
    const { connection } = decision;
    const recipientKey = recipients.get(request.recipientKeyId);
    if (recipientKey === undefined) throw new ToolplaneError('INTERNAL', 'the recipient key vanished');

    const credential = vault.open(connection);
    const token = credential.kind === 'oauth2-client-credentials' ? await tokens.current(connection, credential, signal) : undefined;
    if (token?.fetched === true) log.info({ connectionId: connection.connectionId, expiresAt: token.expiresAt.toISOString() }, 'access token obtained');
    const leaseId = leaseIdOf(scope, request.invocationId, connection.connectionId);
    const leaseStream = streamIdOf(scope, leaseId);
    const handled = await handleCommand(
      leaseEvents,
      leaseDecider,
      leaseStream,
      { type: 'GrantLease', facts, leaseId, connectionVersion: read.version, ...(token === undefined ? {} : { tokenExpiresAt: token.expiresAt }) },
      { signal },
    );
    const lease = handled.newState.lease;
    if (lease === null) throw new ToolplaneError('INTERNAL', 'a granted lease has no record');
    if (handled.newEvents.length > 0) {
      // A rotation or revocation appended after the connection was read must not leave a lease granted behind its
      // back: the connection's subject is read again from the version the lease was decided on.
      const later = await connectionEvents.readStream(streamIdOf(scope, connection.connectionId), { afterVersion: read.version, signal });
      const outdated = later.events.length === 0 ? undefined : leaseOutdatedBy(lease, later.events.reduce<Connection | null>((state, event) => connectionDecider.evolve(state, event), connection));
      if (outdated !== undefined) {
        await handleCommand(leaseEvents, leaseDecider, leaseStream, { type: 'WithdrawLease', now: now() }, { signal });
        throw outdated;
      }
    }
    // Published after the append, and again on every repeat of the request (same event id: JetStream drops the copy),
    // so a crash between the two is repaired by the requester's retry. Pipelined with the sealing.
    const published = deps.publishEvent(leasedEvent(lease, secretLeasedEventId(lease.leaseId), new Date(lease.grantedAt)), signal).then(
      () => undefined,
      (error: unknown) => error,
    );

    const plaintext = Buffer.from(JSON.stringify(leasedCredential(credential, token)), 'utf8');
    let sealed;
    try {
      sealed = sealToRecipient({ keyId: request.recipientKeyId, publicKey: recipientKey }, plaintext, { leaseId: lease.leaseId, invocationId: request.invocationId });
    } finally {
      plaintext.fill(0);
    }
    const publishFailure = await published;
    if (publishFailure !== undefined) throw publishFailure instanceof Error ? publishFailure : new ToolplaneError('INTERNAL', 'SecretLeased could not be published');
    log.info({ leaseId: lease.leaseId, invocationId: lease.invocationId, toolId: lease.toolId, connectionId: lease.connectionId, leasedTo: lease.leasedTo, expiresAt: lease.expiresAt, repeated: handled.newEvents.length === 0 }, 'lease granted');
    return { leaseId: lease.leaseId, connectionId: connection.connectionId, kind: connection.kind, expiresAt: lease.expiresAt, sealed };
  };

  return {
    async createConnection(scope, request, signal) {
      const connectionId = connectionIdOfName(scope, request.name);
      const secret = vault.seal({ tenant: scope.tenant, workspace: scope.workspace, connectionId, kind: request.credential.kind, secretGeneration: 1, name: request.name }, request.credential);
      const handled = await handleCommand(connectionEvents, connectionDecider, streamIdOf(scope, connectionId), { type: 'CreateConnection', scope, request, connectionId, now: now(), policy, secret }, { signal });
      const connection = handled.newState;
      if (connection === null) throw new ToolplaneError('INTERNAL', 'a created connection has no record');
      log.info({ connectionId, name: connection.name, kind: connection.kind, kekId: connection.secret?.kekId }, 'connection created');
      return toConnectionView(connection);
    },

    async rotateConnection(scope, request, signal) {
      const connectionId = connectionIdOf(scope, request.connectionRef);
      const at = now();
      const handled = await handlePreparedCommand(
        connectionEvents,
        connectionDecider,
        streamIdOf(scope, connectionId),
        (state) => {
          const secretGeneration = (state?.secretGeneration ?? 0) + 1;
          const usable = state !== null && state.state === 'Active' && state.kind === request.credential.kind;
          return { type: 'RotateConnection' as const, request, now: at, policy, secretGeneration, secret: usable ? vault.seal({ ...state, secretGeneration }, request.credential) : undefined };
        },
        { signal },
      );
      const connection = handled.newState;
      if (connection === null) throw new ToolplaneError('INTERNAL', 'a rotated connection has no record');
      await tokens.forget(connection, signal);
      // The old credential's ciphertext goes from the record; if that fails it goes with the next rotation or revocation.
      await deps.purgeOlderRecords(scope, connectionId, signal).catch((error: unknown) => log.warn({ err: error, connectionId }, 'could not purge the older records of a rotated connection'));
      log.info({ connectionId, secretGeneration: connection.secretGeneration, kekId: connection.secret?.kekId }, 'connection rotated');
      return toConnectionView(connection);
    },

    async revokeConnection(scope, request, signal) {
      const connectionId = connectionIdOf(scope, request.connectionRef);
      const handled = await handleCommand(connectionEvents, connectionDecider, streamIdOf(scope, connectionId), { type: 'RevokeConnection', request, now: now() }, { signal });
      const connection = handled.newState;
      if (connection === null) throw new ToolplaneError('INTERNAL', 'a revoked connection has no record');
      // Also on a repeated revoke: finishes the work of one that stopped half-way (the secret's ciphertexts leave the
      // record, the cached token the bucket). Outstanding leases end with the revocation (the projector marks them
      // Revoked); a lease racing it is withdrawn by its own granter.
      await deps.purgeOlderRecords(scope, connectionId, signal);
      await tokens.forget(connection, signal);
      log.info({ connectionId, repeated: handled.newEvents.length === 0 }, 'connection revoked');
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
      return { items: page.items.map((document) => toConnectionView(parseSummary(document))), next: page.next };
    },

    async showConnection(scope, request, signal) {
      // From the record, not the read model: a show right after a create or rotate sees it.
      const { connection } = await readConnection(scope, connectionIdOf(scope, request.connectionRef), signal);
      if (connection === null) throw new ToolplaneError('NOT_FOUND', `no connection ${request.connectionRef} in this workspace`);
      return toConnectionView(connection);
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
