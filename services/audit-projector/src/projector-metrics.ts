// The audit projector's Prometheus metrics, on the registry the service kit serves on /metrics: what the live
// projection wrote, by event type, and how far behind the events it was when it wrote them.
import type { LifecycleEvent } from '@toolplane/contracts';
import type { ServiceMetrics } from '@toolplane/service-kit';

/** What the projection consumer reports into. */
export interface ProjectorMetrics {
  /** Events just written to the projections (a batch, or a group retried on its own). */
  readonly written: (events: readonly { readonly event: LifecycleEvent }[]) => void;
}

/**
 * Declares the projector's metrics. `projected_events_total{type}` counts writes, so a redelivered event written
 * again counts again; `type` is the event's schema type, a closed set. `projection_lag_seconds` is an event's
 * occurredAt (its producer's clock) to the moment its batch's write returned.
 */
export function projectorMetrics(metrics: ServiceMetrics, now: () => Date): ProjectorMetrics {
  const projected = metrics.counter({ name: 'projected_events_total', help: 'Lifecycle events written to the audit projections, by event type.', labelNames: ['type'] });
  const lag = metrics.histogram({ name: 'projection_lag_seconds', help: 'Seconds from an event occurring to its batch being written to the audit projections.', labelNames: [] });
  return {
    written: (events) => {
      const writtenAtMs = now().getTime();
      // Off the batch's path: its messages are acknowledged as soon as the write returns, and a batch is thousands
      // of events. The write time is taken first, so the deferral does not add to the lag.
      setImmediate(() => {
        const byType = new Map<string, number>();
        for (const { event } of events) {
          byType.set(event.type, (byType.get(event.type) ?? 0) + 1);
          lag.observe({}, Math.max(0, (writtenAtMs - Date.parse(event.metadata.occurredAt)) / 1_000));
        }
        for (const [type, count] of byType) projected.inc({ type }, count);
      });
    },
  };
}
