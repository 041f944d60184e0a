// Expires pending approvals whose deadline passed, and republishes outbox events whose writer died before
// publishing them. Any number of replicas may sweep at once: each expiry is one compare-and-set (one winner),
// and every event has a deterministic id, so nothing is expired or announced twice.
import { sleep, type Approval } from '@toolplane/contracts';
import { flushOutbox, runCommand, type ApprovalRuntime } from './approval-runtime.js';
import { findApprovals } from './approval-store.js';

/** What one sweep did. */
export interface SweepReport {
  readonly expired: number;
  readonly republished: number;
}

const batchSize = 100;

/** One sweep: expire what is due, then flush outboxes left behind for longer than `outboxGraceMs`. */
export async function sweepOnce(runtime: ApprovalRuntime, options: { readonly outboxGraceMs: number; readonly signal?: AbortSignal }): Promise<SweepReport> {
  const { signal } = options;
  const now = runtime.clock();
  let expired = 0;
  const due = await findApprovals(runtime.approvals, { state: 'Pending', expiresAt: { $lte: now.toISOString() } }, 'expiresAt', batchSize, signal);
  for (const approval of due) {
    try {
      const outcome = await runCommand(runtime, { tenant: approval.tenant, workspace: approval.workspace }, approval.approvalId, { type: 'Expire' }, signal);
      // Another replica may have expired it first: only this replica's own transitions count.
      if (outcome.changed) expired += 1;
    } catch (error) {
      runtime.logger.warn({ err: error, approvalId: approval.approvalId }, 'expiring an approval failed; the next sweep retries');
    }
  }
  // A writer publishes its own outbox right after the transition; only outboxes older than the grace are orphans.
  const cutoff = new Date(now.getTime() - options.outboxGraceMs).toISOString();
  const orphaned = await findApprovals(runtime.approvals, { 'outbox.0': { $exists: true }, updatedAt: { $lt: cutoff } }, 'updatedAt', batchSize, signal);
  let republished = 0;
  for (const approval of orphaned) {
    const after: Approval = await flushOutbox(runtime, approval, signal);
    if ((after.outbox ?? []).length === 0) republished += 1;
  }
  return { expired, republished };
}

/** Sweeps every `intervalMs` until `signal` aborts; resolves once the last sweep has finished. */
export async function runSweeper(runtime: ApprovalRuntime, options: { readonly intervalMs: number; readonly outboxGraceMs: number; readonly signal: AbortSignal }): Promise<void> {
  const { signal } = options;
  while (!signal.aborted) {
    try {
      const report = await sweepOnce(runtime, { outboxGraceMs: options.outboxGraceMs, signal });
      if (report.expired + report.republished > 0) runtime.logger.info(report, 'approval sweep');
    } catch (error) {
      if (signal.aborted) break;
      runtime.logger.warn({ err: error }, 'approval sweep failed; retrying at the next interval');
    }
    await sleep(options.intervalMs, signal, 'approval sweep').catch(() => undefined);
  }
}
