// The console's Prometheus metrics, on the registry the service kit serves on /metrics: its live approval streams
// and the decisions operators submitted through it.
import type { ErrorCode } from '@toolplane/contracts';
import type { ServiceMetrics } from '@toolplane/service-kit';

/** What the HTTP routes report into. */
export interface ConsoleMetrics {
  /** A decision submitted past the sign-in and anti-forgery checks, by its outcome as the page shows it. */
  readonly decided: (decision: 'approve' | 'reject', outcome: 'ok' | ErrorCode) => void;
}

/** Declares the console's metrics; `liveStreams` is read at scrape time (this replica's open live pages). */
export function consoleMetrics(metrics: ServiceMetrics, liveStreams: () => number): ConsoleMetrics {
  metrics.gauge({ name: 'console_live_streams', help: 'Live approval streams (server-sent events) this replica holds open.', labelNames: [], collect: (set) => set({}, liveStreams()) });
  const decisions = metrics.counter({
    name: 'console_decisions_total',
    help: 'Approval decisions submitted through the console, by decision (approve, reject) and outcome (ok or the taxonomy code shown).',
    labelNames: ['decision', 'outcome'],
  });
  return { decided: (decision, outcome) => decisions.inc({ decision, outcome }) };
}
