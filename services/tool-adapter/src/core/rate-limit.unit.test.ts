import { describe, expect, it } from 'vitest';
import { applicableRateLimits, fixedWindowDecision, windowStartOf } from './rate-limit.js';

const scope = { tenant: 'acme', workspace: 'main' };

describe('fixedWindowDecision', () => {
  const limit = { limit: 2, windowMs: 1000 };

  it('admits up to the limit per aligned window, then refuses until the window ends', () => {
    let counter = undefined as ReturnType<typeof fixedWindowDecision>['counter'] | undefined;
    const first = fixedWindowDecision(limit, counter, 10_250);
    expect(first).toEqual({ allowed: true, counter: { windowStart: 10_000, count: 1 } });
    counter = first.counter;
    const second = fixedWindowDecision(limit, counter, 10_600);
    expect(second).toEqual({ allowed: true, counter: { windowStart: 10_000, count: 2 } });
    const third = fixedWindowDecision(limit, second.counter, 10_900);
    expect(third).toEqual({ allowed: false, retryAfterMs: 100, counter: { windowStart: 10_000, count: 2 } });
    expect(fixedWindowDecision(limit, second.counter, 11_000)).toEqual({ allowed: true, counter: { windowStart: 11_000, count: 1 } });
  });

  it('treats a counter of an earlier window as empty', () => {
    expect(fixedWindowDecision(limit, { windowStart: 5_000, count: 99 }, 10_001)).toEqual({ allowed: true, counter: { windowStart: 10_000, count: 1 } });
  });

  it('aligns windows to multiples of their length', () => {
    expect(windowStartOf(123_456, 60_000)).toBe(120_000);
  });
});

describe('applicableRateLimits', () => {
  it('keys descriptor limits per workspace and tenant rules per tenant, by tool, agent, or both', () => {
    const checks = applicableRateLimits({
      scope,
      toolId: 'github.create_issue',
      actor: 'agent:a1',
      descriptorLimits: [
        { per: 'TOOL', limit: 10, windowMs: 1000 },
        { per: 'AGENT', limit: 5, windowMs: 1000 },
      ],
      tenantRules: [
        { tools: 'github.*', per: 'TOOL', limit: 100, windowMs: 60_000 },
        { tools: '**', per: 'AGENT', limit: 1000, windowMs: 60_000 },
        { tools: 'github.**', per: 'AGENT_TOOL', limit: 50, windowMs: 60_000 },
        { tools: 'slack.*', per: 'TOOL', limit: 1, windowMs: 1000 },
      ],
    });
    expect(checks.map((c) => c.key)).toEqual([
      'd|acme|main|github.create_issue|tool|10/1000',
      'd|acme|main|github.create_issue|agent|agent:a1|5/1000',
      't|acme|github.*|TOOL|100/60000|tool|github.create_issue',
      't|acme|**|AGENT|1000/60000|agent|agent:a1',
      't|acme|github.**|AGENT_TOOL|50/60000|agent|agent:a1|github.create_issue',
    ]);
    expect(checks.map((c) => c.source)).toEqual(['descriptor', 'descriptor', 'tenant-policy', 'tenant-policy', 'tenant-policy']);
  });
});
