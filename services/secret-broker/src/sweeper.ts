import { sleep } from '@toolplane/contracts';
import type { Logger } from '@toolplane/service-kit';
import { compareAndSet, toStoreError, type StoreCollection } from '@toolplane/store';
import type { ConnectionDocument, SecretLeaseDocument } from './collections.js';
import type { CredentialVault } from './credential-vault.js';
import { endLease, parseConnection, parseLease } from './repositories.js';

// FerretDB has no TTL indexes, so every replica sweeps: leases past their expiry become Expired, and secrets
// still wrapped under an older KEK are rewrapped under the current one. Every write is a compare-and-set, so
// any number of replicas can sweep at once and each lease expires exactly once.

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
  readonly vault: CredentialVault;
  readonly currentKekId: string;
  readonly now: () => Date;
  readonly batchSize?: number;
}

/** Runs one sweep: expires due leases, then rewraps secrets under the current KEK (a batch of each). */
export async function sweepOnce(options: SweeperOptions, signal?: AbortSignal): Promise<SweepReport> {
  const batchSize = options.batchSize ?? 200;
  const now = options.now();
  let due: SecretLeaseDocument[];
  try {
    due = await options.leases.raw.find({ state: 'Active', expiresAt: { $lte: now.toISOString() } }, { limit: batchSize, signal }).toArray();
  } catch (error) {
    throw toStoreError(error, 'finding expired leases', signal);
  }
  let expiredLeases = 0;
  for (const document of due) if (await endLease(options.leases, parseLease(document), 'Expired', now, signal)) expiredLeases += 1;

  let stale: ConnectionDocument[];
  try {
    stale = await options.connections.raw.find({ state: 'Active', 'secret.kekId': { $ne: options.currentKekId } }, { limit: batchSize, signal }).toArray();
  } catch (error) {
    throw toStoreError(error, 'finding secrets under an old key-encryption key', signal);
  }
  let rewrappedSecrets = 0;
  let unreadableSecrets = 0;
  for (const document of stale) {
    const connection = parseConnection(document);
    let secret;
    try {
      secret = options.vault.rewrap(connection);
    } catch {
      unreadableSecrets += 1;
      continue;
    }
    if (secret === undefined) continue;
    const result = await compareAndSet(
      options.connections,
      { id: connection.connectionId, expect: { version: connection.version, state: 'Active' }, where: { tenant: connection.tenant, workspace: connection.workspace }, set: { secret, updatedAt: now.toISOString() } },
      signal === undefined ? {} : { signal },
    );
    if (result.ok) rewrappedSecrets += 1;
  }
  return { expiredLeases, rewrappedSecrets, unreadableSecrets };
}

/** Sweeps every `intervalMs` (with jitter, so replicas spread out) until `signal` aborts; resolves once stopped. */
export async function runSweeper(options: SweeperOptions & { readonly intervalMs: number; readonly logger: Logger }, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      await sleep(options.intervalMs * (0.75 + Math.random() * 0.5), signal, 'the sweeper');
    } catch {
      return;
    }
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
