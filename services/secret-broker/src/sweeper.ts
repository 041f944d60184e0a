import { hasErrorCode, sleep, type ConnectionEvent, type LeaseEvent, type Scope } from '@toolplane/contracts';
import { handleCommand, handlePreparedCommand, type EventStore } from '@toolplane/event-store';
import type { Logger } from '@toolplane/service-kit';
import { toStoreError, type StoreCollection } from '@toolplane/store';
import type { ConnectionDocument, SecretLeaseDocument } from './collections.js';
import { connectionDecider } from './core/connection-decider.js';
import { leaseDecider } from './core/lease-decider.js';
import type { CredentialVault } from './credential-vault.js';
import { streamIdOf } from './event-stores.js';
import { parseLease, parseSummary } from './repositories.js';

// Every replica sweeps: the read models say which leases are due and which secrets are still wrapped under an older
// KEK, and each change goes through the write path (expire a lease, rewrap a secret), decided on the aggregate's own
// stream. Of replicas that sweep the same lease or secret at once one appends, the others decide again and find
// nothing to do, so each lease expires exactly once; a read model that lags only delays a sweep.

/** What one sweep did. */
export interface SweepReport {
  readonly expiredLeases: number;
  readonly rewrappedSecrets: number;
  /** Secrets that could not be rewrapped (their KEK is gone, or they do not decrypt): each needs an operator. */
  readonly unreadableSecrets: number;
}

/** What the sweeper works on. */
export interface SweeperOptions {
  readonly connections: StoreCollection<ConnectionDocument>;
  readonly leases: StoreCollection<SecretLeaseDocument>;
  readonly connectionEvents: EventStore<ConnectionEvent>;
  readonly leaseEvents: EventStore<LeaseEvent>;
  readonly vault: CredentialVault;
  /** Removes a connection's messages before its last from the record (the secret wrapped under the old KEK). */
  readonly purgeOlderRecords: (scope: Scope, connectionId: string, signal?: AbortSignal) => Promise<void>;
  readonly currentKekId: string;
  readonly now: () => Date;
  readonly batchSize?: number;
}

/** Runs one sweep: expires due leases, then rewraps secrets under the current KEK (a batch of each). */
export async function sweepOnce(options: SweeperOptions, signal?: AbortSignal): Promise<SweepReport> {
  const batchSize = options.batchSize ?? 200;
  const now = options.now();
  const handling = signal === undefined ? {} : { signal };
  let due: SecretLeaseDocument[];
  try {
    due = await options.leases.raw.find({ state: 'Active', expiresAt: { $lte: now.toISOString() } }, { limit: batchSize, signal }).toArray();
  } catch (error) {
    throw toStoreError(error, 'finding expired leases', signal);
  }
  let expiredLeases = 0;
  for (const document of due) {
    const lease = parseLease(document);
    const handled = await handleCommand(options.leaseEvents, leaseDecider, streamIdOf(lease, lease.leaseId), { type: 'ExpireLease', now }, handling);
    if (handled.newEvents.length > 0) expiredLeases += 1;
  }

  let stale: ConnectionDocument[];
  try {
    stale = await options.connections.raw.find({ state: 'Active', kekId: { $ne: options.currentKekId } }, { limit: batchSize, signal }).toArray();
  } catch (error) {
    throw toStoreError(error, 'finding secrets under an old key-encryption key', signal);
  }
  let rewrappedSecrets = 0;
  let unreadableSecrets = 0;
  for (const document of stale) {
    const summary = parseSummary(document);
    try {
      const handled = await handlePreparedCommand(
        options.connectionEvents,
        connectionDecider,
        streamIdOf(summary, summary.connectionId),
        (state) => ({ type: 'RewrapSecret' as const, secret: state === null ? undefined : options.vault.rewrap(state), now }),
        handling,
      );
      if (handled.newEvents.length > 0) {
        rewrappedSecrets += 1;
        await options.purgeOlderRecords(summary, summary.connectionId, signal);
      }
    } catch (error) {
      // The vault's refusal to decrypt (a KEK gone, a ciphertext that does not open) is INTERNAL; anything else is a fault.
      if (!hasErrorCode(error) || error.code !== 'INTERNAL') throw error;
      unreadableSecrets += 1;
    }
  }
  return { expiredLeases, rewrappedSecrets, unreadableSecrets };
}

/**
 * Sweeps every `intervalMs` (with jitter, so replicas spread out) until `signal` aborts; resolves once stopped. While
 * `storeAvailable` says MongoDB (which names what is due) does not answer, sweeps are skipped without a log line each
 * (the service kit logs the outage once).
 */
export async function runSweeper(
  options: SweeperOptions & { readonly intervalMs: number; readonly logger: Logger; readonly storeAvailable?: () => boolean },
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    try {
      await sleep(options.intervalMs * (0.75 + Math.random() * 0.5), signal, 'the sweeper');
    } catch {
      return;
    }
    if (options.storeAvailable?.() === false) continue;
    try {
      const report = await sweepOnce(options, signal);
      if (report.unreadableSecrets > 0) options.logger.warn(report, 'swept; some secrets cannot be rewrapped under the current key-encryption key');
      else if (report.expiredLeases > 0 || report.rewrappedSecrets > 0) options.logger.info(report, 'swept');
      else options.logger.trace(report, 'swept');
    } catch (error) {
      if (signal.aborted) return;
      options.logger.warn({ err: error }, 'sweep failed; retrying at the next interval');
    }
  }
}
