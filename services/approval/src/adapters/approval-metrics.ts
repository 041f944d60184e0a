// The approval service's Prometheus metrics, on the registry the service kit serves on /metrics. The app layer only
// reports what happened (a decision, a webhook delivery); this is where that becomes samples.
import type { Logger, ServiceMetrics } from '@toolplane/service-kit';
import type { StoreCollection } from '@toolplane/store';
import type { WebhookDeliveryOutcome } from '../app/approval-webhooks.js';
import type { ApprovalDecision } from '../core/decision-timing.js';
import { countPendingApprovals } from './approval-read-model.js';
import type { StoredApproval } from './collections.js';

/** The most pending approvals one scrape counts: past it the gauge reads this (and something is very wrong anyway). */
export const PENDING_COUNT_LIMIT = 100_000;

/** How long one scrape may spend counting before it leaves the gauge out. */
const PENDING_COUNT_TIMEOUT_MS = 2_000;

/** Time-to-decision buckets (seconds): humans decide in seconds to days (an approval lives up to seven days). */
export const decisionBuckets: readonly number[] = [1, 5, 15, 30, 60, 120, 300, 600, 1_800, 3_600, 7_200, 21_600, 86_400, 259_200, 604_800];

/** What the service's handlers report into. */
export interface ApprovalMetrics {
  readonly decided: (decision: ApprovalDecision) => void;
  readonly webhookDelivery: (outcome: WebhookDeliveryOutcome) => void;
}

/**
 * Declares the service's metrics. `approvals_pending` is counted from the read model at scrape time rather than
 * kept from events: every replica then reports the same number (the one count, not its own share), a restart
 * loses nothing, and approvals opened or decided by another replica are seen. Dashboards take `max` over
 * replicas, not `sum`. A count that fails (the store away) repeats the last count, with a debug line: a gauge
 * without labels cannot be left out of a scrape (it would read 0, which says "nothing waits").
 */
export function approvalMetrics(metrics: ServiceMetrics, options: { readonly approvals: StoreCollection<StoredApproval>; readonly signal: AbortSignal; readonly logger: Logger }): ApprovalMetrics {
  let lastCount: number | undefined;
  metrics.gauge({
    name: 'approvals_pending',
    help: 'Approvals waiting for a decision, counted from the read model at scrape time (the same on every replica: take max, not sum).',
    labelNames: [],
    collect: async (set) => {
      try {
        lastCount = await countPendingApprovals(options.approvals, PENDING_COUNT_LIMIT, AbortSignal.any([options.signal, AbortSignal.timeout(PENDING_COUNT_TIMEOUT_MS)]));
      } catch (error) {
        options.logger.debug({ err: error }, 'pending approvals could not be counted: the gauge repeats the last count');
      }
      if (lastCount !== undefined) set({}, lastCount);
    },
  });
  const decisions = metrics.histogram({
    name: 'approval_decision_seconds',
    help: 'Seconds from an approval being requested to its decision, once per approval, by outcome (granted, rejected, expired, voided).',
    labelNames: ['outcome'],
    buckets: decisionBuckets,
  });
  const deliveries = metrics.counter({
    name: 'approval_webhook_deliveries_total',
    help: 'Deliveries of approval-requested webhooks by outcome (delivered, retry, given_up, skipped).',
    labelNames: ['outcome'],
  });
  return {
    decided: ({ outcome, seconds }) => decisions.observe({ outcome }, seconds),
    webhookDelivery: (outcome) => deliveries.inc({ outcome }),
  };
}
