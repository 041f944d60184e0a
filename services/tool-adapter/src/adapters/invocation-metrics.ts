import type { ToolInvocation } from '@toolplane/contracts';
import type { ServiceMetrics } from '@toolplane/service-kit';
import type { InvocationObserver } from '../app/invocation-observer.js';
import type { CircuitPosition } from './mcp-executor.js';

// The tool adapter's Prometheus metrics (names as exposed, with the kit's `toolplane_` prefix; see the README):
// counts and timings are recorded as the pipeline driver reports them, the circuit states are read at scrape time.
// Labels are bounded sets (states, codes, stages, classes) or operator-registered names (tools, servers); no id of a
// call, principal or agent is ever a label.

/** The side-effect label of a call not classified before it ended (an unknown tool, a schema denial). */
export const unclassifiedSideEffect = 'unclassified';

const circuitValue: Record<CircuitPosition, number> = { closed: 0, 'half-open': 1, open: 2 };

/** The call's effective side-effect class (the declared one before classification), as a label. */
function sideEffectOf(invocation: ToolInvocation): string {
  return invocation.effectiveClass ?? invocation.declaredClass ?? unclassifiedSideEffect;
}

/**
 * Declares the adapter's metrics on `metrics` and returns the observer the pipeline driver reports to. `circuits`
 * lists each MCP server's circuit as it is when Prometheus scrapes.
 */
export function invocationMetrics(metrics: ServiceMetrics, circuits: () => Iterable<{ readonly server: string; readonly state: CircuitPosition }>): InvocationObserver {
  const calls = metrics.counter({ name: 'tool_calls_total', help: 'Tool calls by their terminal state; code is the failure code, or "none".', labelNames: ['tool', 'state', 'code'] });
  const stages = metrics.histogram({ name: 'pipeline_stage_seconds', help: 'Time per governed-pipeline stage: its I/O, the decision on its outcome and the append it required.', labelNames: ['stage'] });
  const callSeconds = metrics.histogram({ name: 'tool_call_seconds', help: 'Time from a call being received to its terminal state (an approval wait included).', labelNames: ['side_effect'] });
  const rateLimited = metrics.counter({ name: 'rate_limit_rejections_total', help: 'Calls denied because a rate limit was reached.', labelNames: [] });
  const approvalWaits = metrics.counter({ name: 'approval_waits_total', help: 'Calls parked to wait for a human approval.', labelNames: ['side_effect'] });
  metrics.gauge({
    name: 'circuit_breaker_state',
    help: 'The circuit of each MCP server: 0 closed, 1 half-open, 2 open.',
    labelNames: ['server'],
    collect: (set) => {
      for (const { server, state } of circuits()) set({ server }, circuitValue[state]);
    },
  });

  return {
    stagePerformed: (step, seconds) => stages.observe({ stage: step }, seconds),
    parked: (invocation) => approvalWaits.inc({ side_effect: sideEffectOf(invocation) }),
    ended: (invocation) => {
      const code = invocation.failure?.code ?? 'none';
      calls.inc({ tool: invocation.toolId, state: invocation.state, code });
      if (code === 'RATE_LIMITED') rateLimited.inc({});
      if (invocation.endedAt !== undefined) callSeconds.observe({ side_effect: sideEffectOf(invocation) }, (Date.parse(invocation.endedAt) - Date.parse(invocation.receivedAt)) / 1000);
    },
  };
}
