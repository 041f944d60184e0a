import { SecretBrokerRecord, hasErrorCode, secretBrokerAggregateFilters, secretBrokerDeadLetterSubject, secretBrokerStream } from '@toolplane/contracts';
import { storedAppendSchema } from '@toolplane/event-store';
import { consume, type ConsumerHandle, type ConsumerSpec, type Messaging } from '@toolplane/messaging';
import { logConsumerDiagnostic, type Logger, type StoreStatus } from '@toolplane/service-kit';
import { toStoreError, type StoreCollection } from '@toolplane/store';
import type { ConnectionDocument, SecretLeaseDocument } from './collections.js';
import { toConnectionSummary } from './core/connection-rules.js';

// Folds the broker's private stream into its read models: `connections` (summaries, never secrets) and
// `secret_leases`. One durable consumer with one message in flight across all replicas, so the documents have a
// single writer that sees each aggregate's messages in order. Every write is idempotent (a redelivered message
// changes nothing): a connection's document is replaced by the summary its message carries; a lease is inserted once
// and ended once (ending matches only an active lease, so the first end stays). Acked only after the write.

/** The projector's durable consumer. */
export const projectorConsumer: ConsumerSpec = {
  durableName: 'secret-broker-projector',
  description: 'Folds connections and leases into the secret broker read models.',
  filterSubjects: [...secretBrokerAggregateFilters],
  // One message in flight across replicas: the order of an aggregate's messages is the order of its writes.
  maxAckPending: 1,
  ackWaitMs: 30_000,
};

// Deliveries of a record whose write keeps failing: with the default backoff (up to a minute between them), about a week.
const maxDeliver = 10_000;

/** What the projector writes to. */
export interface ProjectorOptions {
  readonly messaging: Messaging;
  readonly connections: StoreCollection<ConnectionDocument>;
  readonly leases: StoreCollection<SecretLeaseDocument>;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  /** Whether MongoDB answers (and the unique indexes are in place): a message waits for it rather than spend its deliveries. */
  readonly storeStatus: StoreStatus;
}

/** Folds one record (an event of an append) into the read models. */
export async function projectRecord(options: Pick<ProjectorOptions, 'connections' | 'leases'>, record: SecretBrokerRecord, signal?: AbortSignal): Promise<void> {
  const what = `projecting ${record.type}`;
  try {
    switch (record.type) {
      case 'ConnectionCreated':
      case 'ConnectionRotated':
      case 'ConnectionSecretRewrapped':
      case 'ConnectionRevoked': {
        const summary = toConnectionSummary(record.data.connection);
        await options.connections.raw.replaceOne({ _id: summary.connectionId }, summary, { upsert: true });
        if (record.type === 'ConnectionRevoked') {
          const endedAt = summary.revokedAt ?? summary.updatedAt;
          await options.leases.raw.updateMany({ connectionId: summary.connectionId, tenant: summary.tenant, workspace: summary.workspace, state: 'Active' }, { $set: { state: 'Revoked', endedAt }, $inc: { version: 1 } });
        }
        return;
      }
      case 'LeaseGranted': {
        const { lease } = record.data;
        const { leaseId: _key, ...rest } = lease;
        await options.leases.raw.updateOne({ _id: lease.leaseId }, { $setOnInsert: { leaseId: lease.leaseId, ...rest } }, { upsert: true });
        return;
      }
      case 'LeaseEnded':
        await options.leases.raw.updateOne({ _id: record.data.leaseId, state: 'Active' }, { $set: { state: record.data.state, endedAt: record.data.endedAt }, $inc: { version: 1 } });
        return;
    }
  } catch (error) {
    throw toStoreError(error, what, signal);
  }
}

/** Starts the projector's consumer (declared by the service definition). */
export function startProjector(options: ProjectorOptions): Promise<ConsumerHandle> {
  const log = options.logger;
  return consume(options.messaging, {
    stream: secretBrokerStream.name,
    consumer: projectorConsumer.durableName,
    schema: storedAppendSchema(SecretBrokerRecord),
    handler: async (message, context) => {
      // Held (the consumer tells the server it is still being worked on) while MongoDB is away, rather than nak'ed.
      await options.storeStatus.whenAvailable({ signal: context.signal });
      try {
        for (const record of message.events) await projectRecord(options, record, context.signal);
      } catch (error) {
        // The next delivery waits for a fresh answer instead of trusting what the last probe said.
        if (hasErrorCode(error) && error.code === 'TEMPORARY_UNAVAILABLE') void options.storeStatus.whenAvailable({ recheck: true }).catch(() => undefined);
        throw error;
      }
    },
    deadLetterSubject: secretBrokerDeadLetterSubject(projectorConsumer.durableName),
    // A write that fails because MongoDB went away is retried for as long as that lasts: what is skipped, nobody redoes.
    maxDeliver,
    signal: options.signal,
    onDiagnostic: logConsumerDiagnostic(log),
  });
}
