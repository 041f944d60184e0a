import type { RateLimit, RateLimitRule, Scope } from '@toolplane/contracts';
import { toolPatternMatches } from './tool-patterns.js';

// Rate limiting as a pure decision over a sliding log. A fixed window admits twice its limit across a window edge
// (the limit just before it and again just after); here a call is admitted only if fewer than `limit` calls were
// admitted in the `windowMs` that end with it, so no window of that length, wherever it starts, ever holds more than
// `limit` admitted calls. The log keeps admitted calls in slots: 1 ms slots (exact timestamps) while the limit is at
// most RATE_LOG_SLOTS, else `windowMs / RATE_LOG_SLOTS` slots that count whole (a slot partly inside the window
// counts fully, so a large limit refuses at most one slot's calls early, never admits one too many). Either way a log
// holds at most RATE_LOG_SLOTS + 1 slots, so a counter is one small value that a compare-and-set can replace.

/** The most slots a counter's log is split into (and so the largest limit counted exactly, in 1 ms slots). */
export const RATE_LOG_SLOTS = 64;

/** A counter's admitted calls, oldest first: `[slot start (epoch ms), calls admitted in the slot]`. */
export interface RateLog {
  readonly slots: readonly (readonly [number, number])[];
}

/** One limit that applies to a call: which counter it uses and how many calls per window it admits. */
export interface RateLimitCheck {
  readonly key: string;
  readonly limit: number;
  readonly windowMs: number;
  /** Who set the limit, for reasons and metrics. */
  readonly source: 'descriptor' | 'tenant-policy' | 'policy-bundle';
  /** The bundle that set it, for source policy-bundle. */
  readonly policyBundle?: string;
  readonly description: string;
}

/** The outcome of one check: the log with the call counted, or the time until a slot frees up. */
export type RateLimitVerdict = { readonly allowed: true; readonly log: RateLog } | { readonly allowed: false; readonly retryAfterMs: number; readonly log: RateLog };

/** How long one slot of a limit's log lasts. */
export function rateSlotMs(limit: { readonly limit: number; readonly windowMs: number }): number {
  return limit.limit <= RATE_LOG_SLOTS ? 1 : Math.ceil(limit.windowMs / RATE_LOG_SLOTS);
}

/**
 * Admits a call at `nowMs` if fewer than `limit` calls were admitted in the window `(nowMs - windowMs, nowMs]`.
 * Slots that have left the window are dropped. A log written by a replica whose clock runs ahead is taken as it is:
 * its calls count until they leave the window by this clock, and this call goes in its newest slot (the log stays
 * ordered, and a skewed clock can only make the limit stricter).
 */
export function slidingWindowDecision(limit: { readonly limit: number; readonly windowMs: number }, current: RateLog | undefined, nowMs: number): RateLimitVerdict {
  const slotMs = rateSlotMs(limit);
  // A slot counts while its last millisecond is inside the window.
  const live = (current?.slots ?? []).filter(([start]) => start + slotMs - 1 > nowMs - limit.windowMs);
  const used = live.reduce((sum, [, calls]) => sum + calls, 0);
  if (used >= limit.limit) {
    // The earliest moment enough of the oldest slots have left the window for one more call.
    let freed = 0;
    let retryAt = nowMs + 1;
    for (const [start, calls] of live) {
      freed += calls;
      retryAt = start + slotMs - 1 + limit.windowMs;
      if (used - freed < limit.limit) break;
    }
    return { allowed: false, retryAfterMs: Math.max(1, retryAt - nowMs), log: { slots: live } };
  }
  const newest = live.at(-1);
  const slot = Math.max(nowMs - (nowMs % slotMs), newest?.[0] ?? Number.NEGATIVE_INFINITY);
  const slots = newest !== undefined && newest[0] === slot ? [...live.slice(0, -1), [slot, newest[1] + 1] as const] : [...live, [slot, 1] as const];
  return { allowed: true, log: { slots } };
}

/** What decides which rate limits apply to a call. */
export interface RateLimitSubject {
  readonly scope: Scope;
  readonly toolId: string;
  /** The agent, or the principal when no agent acts. */
  readonly actor: string;
  readonly descriptorLimits: readonly RateLimit[];
  readonly tenantRules: readonly RateLimitRule[];
  /** The rules of the policy bundle of the tool's server, counted apart from the tenant's (their keys name the bundle). */
  readonly bundleRules?: { readonly name: string; readonly rules: readonly RateLimitRule[] } | undefined;
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
  const bundle = subject.bundleRules;
  for (const rule of bundle?.rules ?? []) {
    if (bundle === undefined || !toolPatternMatches(rule.tools, toolId)) continue;
    // Bundle names (ExternalId) hold no `|`, so a bundle's keys never read as another's or the tenant's.
    const spec = `${bundle.name}|${rule.tools}|${rule.per}|${rule.limit}/${rule.windowMs}`;
    const key =
      rule.per === 'TOOL' ? `b|${scope.tenant}|${spec}|tool|${toolId}` : rule.per === 'AGENT' ? `b|${scope.tenant}|${spec}|agent|${actor}` : `b|${scope.tenant}|${spec}|agent|${actor}|${toolId}`;
    const per = rule.per === 'TOOL' ? 'per tool' : rule.per === 'AGENT' ? 'per agent' : 'per agent and tool';
    const description = `${rule.limit} calls per ${rule.windowMs} ms ${per} for ${rule.tools} (policy bundle ${JSON.stringify(bundle.name)})`;
    checks.push({ key, limit: rule.limit, windowMs: rule.windowMs, source: 'policy-bundle', policyBundle: bundle.name, description });
  }
  return checks;
}
