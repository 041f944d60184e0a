// Expires pending approvals whose deadline passed. The read model names the candidates; each is expired through the
// write path, where the decider refuses to expire what is no longer pending. Any number of replicas may sweep at
// once: of two expiring the same approval one appends, the other decides again and finds it expired.
import { sleep } from '@toolplane/contracts';
import { findApprovals } from '../adapters/approval-read-model.js';
import { runCommand, type ApprovalRuntime } from './approval-runtime.js';

/** What one sweep did. */
export interface SweepReport {
  readonly expired: number;
}

const batchSize = 100;

/** One sweep: expire what is due (up to a batch; the next sweep takes the rest). */
export async function sweepOnce(runtime: ApprovalRuntime, options: { readonly signal?: AbortSignal } = {}): Promise<SweepReport> {
  const { signal } = options;
  const now = runtime.clock();
  let expired = 0;
  const due = await findApprovals(runtime.approvals, { state: 'Pending', expiresAt: { $lte: now.toISOString() } }, 'expiresAt', batchSize, signal);
  for (const approval of due) {
    try {
      const scope = { tenant: approval.tenant, workspace: approval.workspace };
      const outcome = await runCommand(runtime, approval.approvalId, { type: 'ExpireApproval', metadata: { approvalId: approval.approvalId, scope, now } }, signal);
      // Another replica may have expired it first: only this replica's own transitions count.
      if (outcome.changed) expired += 1;
    } catch (error) {
      runtime.logger.warn({ err: error, approvalId: approval.approvalId }, 'expiring an approval failed; the next sweep retries');
    }
  }
  return { expired };
}

/**
 * Sweeps every `intervalMs` until `signal` aborts; resolves once the last sweep has finished. While `storeAvailable`
 * says MongoDB (which names the candidates) does not answer, sweeps are skipped without a log line each (the service
 * kit logs the outage once).
 */
export async function runSweeper(runtime: ApprovalRuntime, options: { readonly intervalMs: number; readonly signal: AbortSignal; readonly storeAvailable?: () => boolean }): Promise<void> {
  const { signal } = options;
  while (!signal.aborted) {
    if (options.storeAvailable?.() !== false) {
      try {
        const report = await sweepOnce(runtime, { signal });
        if (report.expired > 0) runtime.logger.info(report, 'approval sweep');
      } catch (error) {
        if (signal.aborted) break;
        runtime.logger.warn({ err: error }, 'approval sweep failed (the read model is unreachable?); retrying at the next interval');
      }
    }
    await sleep(options.intervalMs, signal, 'approval sweep').catch(() => undefined);
  }
}
