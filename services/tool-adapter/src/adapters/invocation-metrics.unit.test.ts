import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import type { ToolInvocation } from '@toolplane/contracts';
import { serviceMetrics } from '@toolplane/service-kit';
import { at, caller, ids, later, request, scope } from '../../test/core-fixtures.js';
import { receiveInvocation } from '../core/invocation-pipeline.js';
import { invocationMetrics } from './invocation-metrics.js';
import type { CircuitPosition } from './mcp-executor.js';

const received = receiveInvocation({ scope, request: request(), caller, invocationId: ids.invocation, resolvedToolVersion: '1.0.0', defaultTimeoutMs: 60_000 }, { now: at }).state.invocation;

function ended(overrides: Partial<ToolInvocation>, afterMs: number): ToolInvocation {
  return { ...received, effectiveClass: 'READ', declaredClass: 'READ', ...overrides, endedAt: later(afterMs) };
}

describe('invocationMetrics', () => {
  it('counts ended calls by tool, state and code, times them by side effect, and counts rate-limit denials', async () => {
    const registry = new Registry();
    const observer = invocationMetrics(serviceMetrics(registry), () => []);
    observer.ended(ended({ state: 'Observed' }, 250));
    observer.ended(ended({ state: 'Observed' }, 1500));
    observer.ended(ended({ state: 'Denied', failure: { code: 'RATE_LIMITED', message: 'rate limit reached', retryable: true } }, 3));
    // Denied before it was classified: an unknown tool.
    observer.ended(ended({ state: 'Denied', effectiveClass: undefined, declaredClass: undefined, failure: { code: 'NOT_FOUND', message: 'no tool', retryable: false } }, 1));

    const text = await registry.metrics();
    expect(text).toContain('toolplane_tool_calls_total{tool="github.create_issue",state="Observed",code="none"} 2');
    expect(text).toContain('toolplane_tool_calls_total{tool="github.create_issue",state="Denied",code="RATE_LIMITED"} 1');
    expect(text).toContain('toolplane_tool_calls_total{tool="github.create_issue",state="Denied",code="NOT_FOUND"} 1');
    expect(text).toMatch(/^toolplane_rate_limit_rejections_total 1$/m);
    expect(text).toContain('toolplane_tool_call_seconds_count{side_effect="READ"} 3');
    expect(text).toContain('toolplane_tool_call_seconds_sum{side_effect="READ"} 1.753');
    expect(text).toContain('toolplane_tool_call_seconds_bucket{le="0.25",side_effect="READ"} 2');
    expect(text).toContain('toolplane_tool_call_seconds_count{side_effect="unclassified"} 1');
  });

  it('times stages by name and counts approval waits by side effect', async () => {
    const registry = new Registry();
    const observer = invocationMetrics(serviceMetrics(registry), () => []);
    observer.stagePerformed('EXECUTE', 0.2);
    observer.stagePerformed('EXECUTE', 0.004);
    observer.stagePerformed('TOOL_RESOLUTION', 0.0001);
    observer.parked({ ...received, state: 'AwaitingApproval', effectiveClass: 'DESTRUCTIVE' });

    const text = await registry.metrics();
    expect(text).toContain('toolplane_pipeline_stage_seconds_count{stage="EXECUTE"} 2');
    expect(text).toContain('toolplane_pipeline_stage_seconds_bucket{le="0.005",stage="EXECUTE"} 1');
    expect(text).toContain('toolplane_pipeline_stage_seconds_bucket{le="0.0005",stage="TOOL_RESOLUTION"} 1');
    expect(text).toContain('toolplane_approval_waits_total{side_effect="DESTRUCTIVE"} 1');
  });

  it('reads each server circuit at scrape time: 0 closed, 1 half-open, 2 open', async () => {
    const registry = new Registry();
    let circuits: { server: string; state: CircuitPosition }[] = [
      { server: 'acme/main/a', state: 'closed' },
      { server: 'acme/main/b', state: 'open' },
    ];
    invocationMetrics(serviceMetrics(registry), () => circuits);
    const first = await registry.metrics();
    expect(first).toContain('toolplane_circuit_breaker_state{server="acme/main/a"} 0');
    expect(first).toContain('toolplane_circuit_breaker_state{server="acme/main/b"} 2');
    circuits = [{ server: 'acme/main/b', state: 'half-open' }];
    const second = await registry.metrics();
    expect(second).toContain('toolplane_circuit_breaker_state{server="acme/main/b"} 1');
    expect(second).not.toContain('server="acme/main/a"');
  });
});
