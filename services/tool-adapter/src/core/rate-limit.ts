import type { RateLimit, RateLimitRule, Scope } from '@toolplane/contracts';
import { toolPatternMatches } from './tool-patterns.js';

// Rate limiting as a pure decision over a counter value: fixed windows aligned to multiples of `windowMs`. The
// adapter persists counters; aligned windows make (counter key, window start) a natural unique key, so counting can
// be done with insert-only slot records (atomic on every MongoDB-protocol server) instead of conditional updates.

/** How many calls a counter admitted in the window starting at `windowStart` (epoch milliseconds). */
export interface RateWindowCounter {
  readonly windowStart: number;
  readonly count: number;
}

/** One limit that applies to a call: which counter it uses and how many calls per window it admits. */
export interface RateLimitCheck {
  readonly key: string;
  readonly limit: number;
  readonly windowMs: number;
  /** Who set the limit, for reasons and metrics. */
  readonly source: 'descriptor' | 'tenant-policy';
  readonly description: string;
}

/** The outcome of one fixed-window check. */
export type RateLimitVerdict =
  | { readonly allowed: true; readonly counter: RateWindowCounter }
  | { readonly allowed: false; readonly retryAfterMs: number; readonly counter: RateWindowCounter };

/** The start of the aligned window that contains `nowMs`. */
export function windowStartOf(nowMs: number, windowMs: number): number {
  return nowMs - (nowMs % windowMs);
}

/**
 * Admits a call if the counter's current window has room: returns the counter after counting the call, or, when the
 * window is full, the time until it ends. A counter from an earlier window counts as empty.
 */
export function fixedWindowDecision(limit: { readonly limit: number; readonly windowMs: number }, current: RateWindowCounter | undefined, nowMs: number): RateLimitVerdict {
  const windowStart = windowStartOf(nowMs, limit.windowMs);
  const used = current !== undefined && current.windowStart === windowStart ? current.count : 0;
  if (used >= limit.limit) return { allowed: false, retryAfterMs: windowStart + limit.windowMs - nowMs, counter: { windowStart, count: used } };
  return { allowed: true, counter: { windowStart, count: used + 1 } };
}

/** What decides which rate limits apply to a call. */
export interface RateLimitSubject {
  readonly scope: Scope;
  readonly toolId: string;
  /** The agent, or the principal when no agent acts. */
  readonly actor: string;
  readonly descriptorLimits: readonly RateLimit[];
  readonly tenantRules: readonly RateLimitRule[];
}

/**
 * The counters a call must pass, with their keys: the descriptor's limits count within the workspace, a tenant
 * policy's across the tenant. Keys name the limit's parameters, so changing a limit starts fresh counters.
 */
export function applicableRateLimits(subject: RateLimitSubject): RateLimitCheck[] {
  const { scope, toolId, actor } = subject;
  const checks: RateLimitCheck[] = [];
  for (const limit of subject.descriptorLimits) {
    const spec = `${limit.limit}/${limit.windowMs}`;
    const key = limit.per === 'TOOL' ? `d|${scope.tenant}|${scope.workspace}|${toolId}|tool|${spec}` : `d|${scope.tenant}|${scope.workspace}|${toolId}|agent|${actor}|${spec}`;
    const description = `${limit.limit} calls per ${limit.windowMs} ms ${limit.per === 'TOOL' ? 'for this tool' : 'per agent for this tool'} (descriptor)`;
    checks.push({ key, limit: limit.limit, windowMs: limit.windowMs, source: 'descriptor', description });
  }
  for (const rule of subject.tenantRules) {
    if (!toolPatternMatches(rule.tools, toolId)) continue;
    const spec = `${rule.tools}|${rule.per}|${rule.limit}/${rule.windowMs}`;
    const key =
      rule.per === 'TOOL'
        ? `t|${scope.tenant}|${spec}|tool|${toolId}`
        : rule.per === 'AGENT'
          ? `t|${scope.tenant}|${spec}|agent|${actor}`
          : `t|${scope.tenant}|${spec}|agent|${actor}|${toolId}`;
    const per = rule.per === 'TOOL' ? 'per tool' : rule.per === 'AGENT' ? 'per agent' : 'per agent and tool';
    checks.push({ key, limit: rule.limit, windowMs: rule.windowMs, source: 'tenant-policy', description: `${rule.limit} calls per ${rule.windowMs} ms ${per} for ${rule.tools} (tenant policy)` });
  }
  return checks;
}
