// The endpoint's Prometheus metrics, on the registry the service kit serves on /metrics: every JSON-RPC message by
// method and outcome, the open notification streams, and the requests the per-token limit turned away.
import type { ServiceMetrics } from '@toolplane/service-kit';
import type { McpMethodLabel, RequestOutcome } from '../core/request-outcome.js';

/** What the HTTP routes and the protocol adapter report into. */
export interface EndpointMetrics {
  /** One JSON-RPC message answered (or an HTTP request refused before the SDK saw its messages: method `other`). */
  readonly request: (method: McpMethodLabel, outcome: RequestOutcome) => void;
  /** One request refused by the per-token rate limit. */
  readonly rateLimited: () => void;
}

/** Declares the endpoint's metrics; `openStreams` is read at scrape time (this replica's GET streams). */
export function endpointMetrics(metrics: ServiceMetrics, openStreams: () => number): EndpointMetrics {
  const requests = metrics.counter({
    name: 'mcp_requests_total',
    help: 'JSON-RPC messages to the MCP endpoint by method (a closed list, else other) and outcome (ok or the taxonomy code); HTTP requests refused before the SDK saw their messages count once under method other.',
    labelNames: ['method', 'outcome'],
  });
  metrics.gauge({
    name: 'mcp_open_streams',
    help: 'Notification streams (GET) this replica holds open.',
    labelNames: [],
    collect: (set) => set({}, openStreams()),
  });
  const limited = metrics.counter({ name: 'mcp_rate_limited_total', help: 'Requests refused with 429 by the per-token rate limit of this replica.', labelNames: [] });
  return {
    request: (method, outcome) => requests.inc({ method, outcome }),
    rateLimited: () => limited.inc({}),
  };
}
