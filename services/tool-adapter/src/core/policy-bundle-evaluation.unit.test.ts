import { PolicyDecision, type JsonObject, type PolicyBundle, type ToolDescriptor } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { at, caller, descriptor, hash, ids, profile, scope, tenantPolicy } from '../../test/core-fixtures.js';
import { evaluatePolicy, rateLimitChecksFor, type PolicyInput, type ServerPolicyBundle } from './policy-evaluator.js';
import { publicationConflicts } from './publication-check.js';
import type { RateLog } from './rate-limit.js';

// A server's policy bundle on top of the agent's profile and the tenant policy: strictest outcome wins, and every
// reason the bundle causes names it.

function bundle(overrides: Partial<PolicyBundle> = {}): PolicyBundle {
  return {
    tenant: scope.tenant,
    name: 'payments-strict',
    deniedSideEffectClasses: [],
    approvalRequiredClasses: [],
    rateLimits: [],
    classRaises: [],
    commands: { block: [], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' },
    updatedBy: 'user:admin',
    updatedAt: at,
    version: 2,
    ...overrides,
  };
}

const applied = (b: PolicyBundle): ServerPolicyBundle => ({ kind: 'bundle', bundle: b });

function input(serverBundle: ServerPolicyBundle | undefined, overrides: Partial<PolicyInput> = {}, args: JsonObject = { title: 'x' }, tool: ToolDescriptor = descriptor()): PolicyInput {
  return {
    subject: { invocationId: ids.invocation, ...scope, toolId: tool.toolId, toolVersion: tool.toolVersion, requestHash: hash('a'), arguments: args },
    descriptor: tool,
    caller,
    agentProfile: profile(),
    tenantPolicy: tenantPolicy(),
    serverBundle,
    rateCounters: new Map(),
    now: at,
    ...overrides,
  };
}

const codes = (evaluation: ReturnType<typeof evaluatePolicy>) => evaluation.decision.reasons.map((r) => r.code);

describe('evaluatePolicy with a server policy bundle', () => {
  it('denies a WRITE the tenant policy allows when the bundle denies WRITE, naming the bundle in the reason and the failure', () => {
    expect(evaluatePolicy(input({ kind: 'none' })).decision.effect).toBe('allow');
    const { decision } = evaluatePolicy(input(applied(bundle({ deniedSideEffectClasses: ['WRITE'] }))));
    expect(PolicyDecision.parse(decision)).toEqual(decision);
    expect(decision).toMatchObject({ effect: 'deny', deniedAt: 'TENANT_POLICY', policyBundle: { name: 'payments-strict', version: 2 } });
    expect(decision.reasons).toEqual([{ code: 'CLASS_DENIED', stage: 'TENANT_POLICY', effect: 'deny', message: 'policy bundle "payments-strict" denies WRITE', policyBundle: 'payments-strict' }]);
    expect(decision.failure).toEqual({ code: 'AUTHORIZATION_DENIED', message: 'policy bundle "payments-strict" denies WRITE', retryable: false });
  });

  it('is the same as no bundle when the server has none, and the decision id depends on the bundle and its version', () => {
    const none = evaluatePolicy(input({ kind: 'none' })).decision;
    expect(evaluatePolicy(input(undefined)).decision).toEqual(none);
    expect(none.policyBundle).toBeUndefined();
    const v2 = evaluatePolicy(input(applied(bundle()))).decision;
    const v3 = evaluatePolicy(input(applied(bundle({ version: 3 })))).decision;
    expect(v2.effect).toBe('allow');
    expect(new Set([none.decisionId, v2.decisionId, v3.decisionId]).size).toBe(3);
  });

  it('fails closed on a missing bundle, an unreadable one and a server that cannot be asked', () => {
    const missing = evaluatePolicy(input({ kind: 'missing', name: 'payments-strict' })).decision;
    expect(missing).toMatchObject({ effect: 'deny', failure: { code: 'AUTHORIZATION_DENIED' }, policyBundle: { name: 'payments-strict' } });
    expect(missing.reasons).toEqual([expect.objectContaining({ code: 'POLICY_BUNDLE_MISSING', policyBundle: 'payments-strict' })]);
    expect(missing.failure?.message).toContain('"payments-strict", which does not exist in tenant acme');
    const unreadable = evaluatePolicy(input({ kind: 'missing', name: 'payments-strict', problem: 'version: expected number' })).decision;
    expect(unreadable.failure?.message).toContain('cannot be read: version: expected number');
    const unavailable = evaluatePolicy(input({ kind: 'unavailable', problem: 'no responders' })).decision;
    expect(unavailable).toMatchObject({ effect: 'deny', failure: { code: 'TEMPORARY_UNAVAILABLE', retryable: true } });
    expect(codes(evaluatePolicy(input({ kind: 'unavailable', problem: 'x' })))).toEqual(['POLICY_BUNDLE_UNAVAILABLE']);
  });

  it('takes the strictest of tenant policy and bundle: either one denying denies, either asking for approval asks', () => {
    const tenantDenies = evaluatePolicy(input(applied(bundle()), { tenantPolicy: tenantPolicy({ deniedSideEffectClasses: ['WRITE'] }) })).decision;
    expect(tenantDenies.effect).toBe('deny');
    expect(tenantDenies.reasons.map((r) => r.policyBundle)).toEqual([undefined]);
    const bundleAsks = evaluatePolicy(input(applied(bundle({ approvalRequiredClasses: ['WRITE'] })))).decision;
    expect(bundleAsks).toMatchObject({ effect: 'approval_required', approval: { approvers: { roles: ['approver'] } } });
    expect(bundleAsks.reasons).toEqual([expect.objectContaining({ code: 'APPROVAL_REQUIRED_FOR_CLASS', policyBundle: 'payments-strict', message: 'policy bundle "payments-strict": WRITE calls need an approval' })]);
    const byRisk = evaluatePolicy(input(applied(bundle({ approvalRiskThreshold: 'MEDIUM' })))).decision;
    expect(byRisk.reasons.map((r) => r.code)).toEqual(['APPROVAL_REQUIRED_FOR_RISK']);
    const riskCeiling = evaluatePolicy(input(applied(bundle({ maxRiskClass: 'LOW', approvalRequiredClasses: ['WRITE'] })))).decision;
    expect(riskCeiling.effect).toBe('deny');
    expect(riskCeiling.reasons.map((r) => r.code)).toEqual(['RISK_ABOVE_BUNDLE_MAX', 'APPROVAL_REQUIRED_FOR_CLASS']);
  });

  it('raises the effective class by the bundle, and every other rule (the agent ceiling, the tenant policy) sees the raised class', () => {
    const raising = bundle({ classRaises: [{ tools: 'github.*', raiseTo: 'DESTRUCTIVE', reason: 'payment records' }] });
    const { decision } = evaluatePolicy(input(applied(raising)));
    expect(decision).toMatchObject({ declaredClass: 'WRITE', effectiveClass: 'DESTRUCTIVE', effect: 'approval_required' });
    expect(decision.reasons.find((r) => r.code === 'CLASS_RAISED_BY_POLICY')).toMatchObject({ policyBundle: 'payments-strict', message: expect.stringContaining('policy bundle "payments-strict" raises') as string });
    const capped = evaluatePolicy(input(applied(raising), { agentProfile: profile({ maxSideEffectClass: 'WRITE' }) })).decision;
    expect(capped).toMatchObject({ effect: 'deny', deniedAt: 'AGENT_PERMISSION' });
  });

  it('blocks commands by the bundle’s block list with its own action', () => {
    const shellTool = descriptor({ toolId: 'shell.run', sideEffectClass: 'CODE_EXECUTION', riskClass: 'HIGH', commandPolicy: { argument: 'command', allow: [], block: [] } });
    const lenient = tenantPolicy({ approvalRequiredClasses: [] });
    const denying = bundle({ commands: { block: ['\\bpsql\\b'], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' } });
    const blocked = evaluatePolicy(input(applied(denying), { tenantPolicy: lenient }, { command: 'psql -c "select 1"' }, shellTool)).decision;
    expect(blocked.reasons).toEqual([expect.objectContaining({ code: 'COMMAND_BLOCKED', policyBundle: 'payments-strict', message: 'the command matches a blocked pattern of policy bundle "payments-strict"' })]);
    expect(evaluatePolicy(input(applied(denying), { tenantPolicy: lenient }, { command: 'ls' }, shellTool)).decision.effect).toBe('allow');
    const escalating = bundle({ commands: { block: ['\\bpsql\\b'], onBlocked: 'ESCALATE', escalateTo: 'PRIVILEGED' } });
    const escalated = evaluatePolicy(input(applied(escalating), { tenantPolicy: lenient }, { command: 'psql' }, shellTool)).decision;
    expect(escalated).toMatchObject({ effect: 'approval_required', effectiveClass: 'PRIVILEGED' });
    const broken = bundle({ commands: { block: ['(x)\\1'], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' } });
    expect(codes(evaluatePolicy(input(applied(broken), { tenantPolicy: lenient }, { command: 'ls' }, shellTool)))).toEqual(['COMMAND_PATTERN_INVALID']);
  });

  it('counts the bundle’s rate limits apart from the tenant’s, and names the bundle when one refuses', () => {
    const rule = { tools: '**', per: 'TOOL', limit: 1, windowMs: 60_000 } as const;
    const limited = bundle({ rateLimits: [rule] });
    const both = input(applied(limited), { tenantPolicy: tenantPolicy({ rateLimits: [rule] }) });
    const checks = rateLimitChecksFor(both);
    expect(checks.map((c) => c.source)).toEqual(['tenant-policy', 'policy-bundle']);
    expect(new Set(checks.map((c) => c.key)).size).toBe(2);
    const bundleKey = checks[1]?.key ?? '';
    const full: RateLog = { slots: [[Date.parse(at) - 1_000, 1]] };
    const refused = evaluatePolicy({ ...both, rateCounters: new Map([[bundleKey, full]]) });
    expect(refused.decision).toMatchObject({ effect: 'deny', failure: { code: 'RATE_LIMITED', retryable: true } });
    expect(refused.decision.reasons).toEqual([expect.objectContaining({ code: 'RATE_LIMITED', policyBundle: 'payments-strict', message: expect.stringContaining('(policy bundle "payments-strict")') as string })]);
    expect(rateLimitChecksFor(input({ kind: 'none' }, { tenantPolicy: tenantPolicy({ rateLimits: [rule] }) })).map((c) => c.source)).toEqual(['tenant-policy']);
  });
});

describe('publicationConflicts', () => {
  const tool = { toolId: 'github.create_issue', sideEffectClass: 'WRITE', riskClass: 'MEDIUM' } as const;

  it('reports an agent limited to READ that lists a WRITE tool, and one whose risk ceiling it exceeds', () => {
    const conflicts = publicationConflicts(tool, [
      profile({ agentId: 'reader', maxSideEffectClass: 'READ' }),
      profile({ agentId: 'cautious', maxRiskClass: 'LOW' }),
      profile({ agentId: 'writer', maxSideEffectClass: 'WRITE' }),
      profile({ agentId: 'unlimited' }),
    ]);
    expect(conflicts).toEqual([
      { agentId: 'cautious', code: 'RISK_ABOVE_AGENT_MAX', reason: 'github.create_issue is MEDIUM risk; the agent lists it (pattern github.*) but may use at most LOW' },
      { agentId: 'reader', code: 'CLASS_ABOVE_AGENT_MAX', reason: 'github.create_issue is WRITE; the agent lists it (pattern github.*) but may cause at most READ' },
    ]);
  });

  it('reports an agent whose clearance is below a resource’s classification (INTERNAL when the profile names none)', () => {
    const resource = { toolId: 'github.handbook', sideEffectClass: 'READ', riskClass: 'LOW', classification: 'CONFIDENTIAL' } as const;
    expect(publicationConflicts(resource, [profile({ agentId: 'cleared', clearance: 'RESTRICTED' }), profile({ agentId: 'default' })])).toEqual([
      { agentId: 'default', code: 'CLASSIFICATION_ABOVE_CLEARANCE', reason: 'github.handbook is CONFIDENTIAL; the agent lists it (pattern github.*) but is cleared for INTERNAL at most' },
    ]);
    expect(publicationConflicts({ ...resource, classification: 'INTERNAL' }, [profile({ agentId: 'default' })])).toEqual([]);
  });

  it('leaves out agents that do not list the tool or deny it explicitly', () => {
    expect(
      publicationConflicts(tool, [
        profile({ agentId: 'elsewhere', allowedTools: ['slack.*'], maxSideEffectClass: 'READ' }),
        profile({ agentId: 'excluded', deniedTools: ['github.create_*'], maxSideEffectClass: 'READ' }),
      ]),
    ).toEqual([]);
  });
});
