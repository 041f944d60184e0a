import { PolicyDecision, type JsonObject, type ToolDescriptor } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { at, caller, descriptor, hash, ids, later, profile, scope, tenantPolicy } from '../../test/core-fixtures.js';
import { DEFAULT_BLOCKED_COMMAND_PATTERNS } from './command-policy.js';
import { defaultTenantPolicy, evaluatePolicy, rateLimitChecksFor, type PolicyInput } from './policy-evaluator.js';
import type { RateLog } from './rate-limit.js';

function input(overrides: Partial<PolicyInput> = {}, args: JsonObject = { title: 'x' }, tool: ToolDescriptor = descriptor()): PolicyInput {
  return {
    subject: { invocationId: ids.invocation, ...scope, toolId: tool.toolId, toolVersion: tool.toolVersion, requestHash: hash('a'), arguments: args },
    descriptor: tool,
    caller,
    agentProfile: profile(),
    tenantPolicy: tenantPolicy(),
    rateCounters: new Map(),
    now: at,
    ...overrides,
  };
}

const codes = (evaluation: ReturnType<typeof evaluatePolicy>) => evaluation.decision.reasons.map((r) => r.code);

describe('evaluatePolicy', () => {
  it('allows a call the profile and policy permit, with a valid, bound decision', () => {
    const { decision } = evaluatePolicy(input());
    expect(PolicyDecision.parse(decision)).toEqual(decision);
    expect(decision).toMatchObject({ effect: 'allow', declaredClass: 'WRITE', effectiveClass: 'WRITE', riskClass: 'MEDIUM', invocationId: ids.invocation, requestHash: hash('a'), reasons: [] });
    expect(decision.deniedAt).toBeUndefined();
  });

  it('is deterministic: the same inputs give the same decision and id; other inputs another id', () => {
    const first = evaluatePolicy(input()).decision;
    expect(evaluatePolicy(input()).decision).toEqual(first);
    expect(evaluatePolicy(input({ now: later(1) })).decision.decisionId).not.toBe(first.decisionId);
    expect(evaluatePolicy(input({ tenantPolicy: tenantPolicy({ version: 8 }) })).decision.decisionId).not.toBe(first.decisionId);
  });

  describe('agent permission', () => {
    it('denies a tool outside the profile, or denied by it', () => {
      const outside = evaluatePolicy(input({}, {}, descriptor({ toolId: 'slack.post_message' })));
      expect(outside.decision).toMatchObject({ effect: 'deny', deniedAt: 'AGENT_PERMISSION', failure: { code: 'AUTHORIZATION_DENIED', retryable: false } });
      expect(codes(outside)).toEqual(['TOOL_NOT_IN_PROFILE']);
      expect(codes(evaluatePolicy(input({ agentProfile: profile({ deniedTools: ['github.create_*'] }) })))).toEqual(['TOOL_DENIED_BY_PROFILE']);
    });

    it('denies an agent without a profile, or with a profile of another agent or workspace', () => {
      expect(codes(evaluatePolicy(input({ agentProfile: undefined })))).toEqual(['NO_AGENT_PROFILE']);
      expect(codes(evaluatePolicy(input({ agentProfile: profile({ agentId: 'someone-else' }) })))).toEqual(['NO_AGENT_PROFILE']);
      expect(codes(evaluatePolicy(input({ agentProfile: profile({ workspace: 'other' }) })))).toEqual(['NO_AGENT_PROFILE']);
    });

    it('denies calls without an agent unless the tenant allows direct principal calls', () => {
      const direct = { principal: 'user:ops', roles: [] };
      expect(codes(evaluatePolicy(input({ caller: direct, agentProfile: undefined })))).toEqual(['DIRECT_CALLS_NOT_ALLOWED']);
      expect(evaluatePolicy(input({ caller: direct, agentProfile: undefined, tenantPolicy: tenantPolicy({ allowDirectPrincipalCalls: true }) })).decision.effect).toBe('allow');
    });

    it('denies tools above the agent’s maximum risk or side-effect class', () => {
      expect(codes(evaluatePolicy(input({ agentProfile: profile({ maxRiskClass: 'LOW' }) })))).toEqual(['RISK_ABOVE_AGENT_MAX']);
      expect(codes(evaluatePolicy(input({ agentProfile: profile({ maxSideEffectClass: 'READ' }) })))).toEqual(['CLASS_ABOVE_AGENT_MAX']);
    });

    it('requires the descriptor’s permissions (from the profile) and one of its roles (from the principal)', () => {
      const guarded = descriptor({ authorization: { permissions: ['repo:write', 'repo:admin'], roles: ['maintainer'] } });
      const denied = evaluatePolicy(input({}, { title: 'x' }, guarded));
      expect(codes(denied)).toEqual(['MISSING_PERMISSION', 'MISSING_ROLE']);
      expect(denied.decision.reasons[0]?.message).toContain('repo:admin');
      expect(denied.decision.reasons[0]?.message).not.toContain('repo:write,');
      const allowed = evaluatePolicy(input({ caller: { ...caller, roles: ['maintainer'] }, agentProfile: profile({ permissions: ['repo:write', 'repo:admin'] }) }, { title: 'x' }, guarded));
      expect(allowed.decision.effect).toBe('allow');
    });
  });

  describe('tenant policy', () => {
    it('denies by kill switch for the tenant, the tool or the server', () => {
      const common = { reason: 'incident 42', engagedBy: 'user:oncall', engagedAt: at };
      expect(codes(evaluatePolicy(input({ tenantPolicy: tenantPolicy({ killSwitches: [{ target: 'TENANT', ...common }] }) })))).toEqual(['KILL_SWITCH_TENANT']);
      expect(codes(evaluatePolicy(input({ tenantPolicy: tenantPolicy({ killSwitches: [{ target: 'TOOL', tools: 'github.**', ...common }] }) })))).toEqual(['KILL_SWITCH_TOOL']);
      expect(codes(evaluatePolicy(input({ tenantPolicy: tenantPolicy({ killSwitches: [{ target: 'SERVER', mcpServerId: ids.server, ...common }] }) })))).toEqual(['KILL_SWITCH_SERVER']);
      const otherTool = evaluatePolicy(input({ tenantPolicy: tenantPolicy({ killSwitches: [{ target: 'TOOL', tools: 'slack.*', ...common }] }) }));
      expect(otherTool.decision.effect).toBe('allow');
      const killed = evaluatePolicy(input({ tenantPolicy: tenantPolicy({ killSwitches: [{ target: 'TENANT', ...common }] }) }));
      expect(killed.decision).toMatchObject({ effect: 'deny', deniedAt: 'TENANT_POLICY', failure: { code: 'AUTHORIZATION_DENIED' } });
      expect(killed.decision.failure?.message).toContain('incident 42');
    });

    it('denies denied classes and risks above the tenant ceiling', () => {
      expect(codes(evaluatePolicy(input({ tenantPolicy: tenantPolicy({ deniedSideEffectClasses: ['WRITE'] }) })))).toEqual(['CLASS_DENIED']);
      expect(codes(evaluatePolicy(input({ tenantPolicy: tenantPolicy({ maxRiskClass: 'LOW' }) })))).toEqual(['RISK_ABOVE_TENANT_MAX']);
    });

    it('reports agent denials before tenant ones, and names the first stage', () => {
      const both = evaluatePolicy(input({ agentProfile: profile({ maxRiskClass: 'LOW' }), tenantPolicy: tenantPolicy({ deniedSideEffectClasses: ['WRITE'] }) }));
      expect(codes(both)).toEqual(['RISK_ABOVE_AGENT_MAX', 'CLASS_DENIED']);
      expect(both.decision.deniedAt).toBe('AGENT_PERMISSION');
      expect(both.decision.failure?.message).toContain('and 1 more reason');
    });
  });

  describe('rate limits', () => {
    const limited = descriptor({ rateLimits: [{ per: 'AGENT', limit: 2, windowMs: 60_000 }] });

    it('counts admitted calls and refuses with RATE_LIMITED once the window is full', () => {
      const counters = new Map<string, RateLog>();
      for (let i = 0; i < 2; i++) {
        const evaluation = evaluatePolicy(input({ rateCounters: counters }, { title: 'x' }, limited));
        expect(evaluation.decision.effect).toBe('allow');
        for (const update of evaluation.rateCounterUpdates) counters.set(update.key, update.log);
      }
      const refused = evaluatePolicy(input({ rateCounters: counters, now: later(30_000) }, { title: 'x' }, limited));
      expect(refused.decision).toMatchObject({ effect: 'deny', deniedAt: 'TENANT_POLICY', failure: { code: 'RATE_LIMITED', retryable: true }, retryAfterMs: 30_000 });
      expect(refused.rateCounterUpdates).toEqual([]);
      expect(evaluatePolicy(input({ rateCounters: counters, now: later(60_000) }, { title: 'x' }, limited)).decision.effect).toBe('allow');
    });

    it('gives another decision id when the counter it read holds other calls, and the same id for the same log', () => {
      const id = (counters: Map<string, RateLog>) => evaluatePolicy(input({ rateCounters: counters }, { title: 'x' }, limited)).decision.decisionId;
      const key = rateLimitChecksFor(input({}, { title: 'x' }, limited))[0]?.key ?? '';
      const newest = Date.parse(at) - 1_000;
      const one = new Map([[key, { slots: [[newest, 1]] }]]) as Map<string, RateLog>;
      const ids = [
        id(new Map()),
        id(one),
        id(new Map([[key, { slots: [[newest, 2]] }]])),
        id(new Map([[key, { slots: [[newest - 5_000, 1]] }]])),
        // The same count and newest slot, but an older slot dropped out and the newest grew.
        id(new Map([[key, { slots: [[newest - 9_000, 1], [newest, 1]] }]])),
        id(new Map([[key, { slots: [[newest - 8_000, 1], [newest, 1]] }]])),
      ];
      expect(new Set(ids).size).toBe(ids.length);
      expect(id(new Map([[key, { slots: [[newest, 1]] }]]) as Map<string, RateLog>)).toBe(ids[1]);
    });

    it('does not consume the budget for calls denied for other reasons', () => {
      const denied = evaluatePolicy(input({ agentProfile: profile({ maxRiskClass: 'LOW' }) }, { title: 'x' }, limited));
      expect(denied.rateCounterUpdates).toEqual([]);
      expect(codes(denied)).not.toContain('RATE_LIMITED');
    });

    it('names the counters to load before evaluating', () => {
      const checks = rateLimitChecksFor(input({ tenantPolicy: tenantPolicy({ rateLimits: [{ tools: '**', per: 'TOOL', limit: 5, windowMs: 1000 }] }) }, {}, limited));
      expect(checks.map((c) => c.key)).toEqual(['d|acme|main|github.create_issue|agent|agent:agent-support|2/60000', 't|acme|**|TOOL|5/1000|tool|github.create_issue']);
    });
  });

  describe('side-effect classification', () => {
    it('raises the class by environment (never lowers it) and by policy, with reasons', () => {
      const production = tenantPolicy({ environments: [{ workspace: 'main', environment: 'PRODUCTION', raiseTo: 'DESTRUCTIVE', raiseReads: false, requireApprovalForWrites: false }] });
      const raised = evaluatePolicy(input({ tenantPolicy: production }));
      expect(raised.decision).toMatchObject({ declaredClass: 'WRITE', effectiveClass: 'DESTRUCTIVE', effect: 'approval_required' });
      expect(codes(raised)).toEqual(['CLASS_RAISED_BY_ENVIRONMENT', 'APPROVAL_REQUIRED_FOR_CLASS']);
      const read = evaluatePolicy(input({ tenantPolicy: production }, {}, descriptor({ sideEffectClass: 'READ' })));
      expect(read.decision.effectiveClass).toBe('READ');
      const privileged = evaluatePolicy(input({ tenantPolicy: production }, {}, descriptor({ sideEffectClass: 'PRIVILEGED' })));
      expect(privileged.decision.effectiveClass).toBe('PRIVILEGED');
      const byPolicy = evaluatePolicy(input({ tenantPolicy: tenantPolicy({ classRaises: [{ tools: 'github.*', raiseTo: 'EXTERNAL_COMMUNICATION', reason: 'public repos' }] }) }));
      expect(byPolicy.decision.effectiveClass).toBe('EXTERNAL_COMMUNICATION');
      expect(codes(byPolicy)).toContain('CLASS_RAISED_BY_POLICY');
    });

    it('applies denied classes to the raised class', () => {
      const policy = tenantPolicy({ deniedSideEffectClasses: ['DESTRUCTIVE'], classRaises: [{ tools: '**', raiseTo: 'DESTRUCTIVE', reason: 'freeze' }] });
      expect(evaluatePolicy(input({ tenantPolicy: policy })).decision).toMatchObject({ effect: 'deny', effectiveClass: 'DESTRUCTIVE' });
    });

    it('asks for approval by class, by risk and by environment, naming the approvers', () => {
      const byRisk = evaluatePolicy(input({ tenantPolicy: tenantPolicy({ approvalRiskThreshold: 'MEDIUM' }) }));
      expect(byRisk.decision).toMatchObject({ effect: 'approval_required', approval: { approvers: { roles: ['approver'] }, ttlMs: 3_600_000 } });
      expect(codes(byRisk)).toEqual(['APPROVAL_REQUIRED_FOR_RISK']);
      const byEnvironment = evaluatePolicy(
        input({ tenantPolicy: tenantPolicy({ environments: [{ workspace: 'main', environment: 'PRODUCTION', raiseReads: false, requireApprovalForWrites: true }] }) }),
      );
      expect(codes(byEnvironment)).toEqual(['APPROVAL_REQUIRED_FOR_ENVIRONMENT']);
      expect(evaluatePolicy(input({}, {}, descriptor({ sideEffectClass: 'DESTRUCTIVE' }))).decision.effect).toBe('approval_required');
    });

    it('asks for approval when the tool itself requires one (a ToolDefinition with approval Required), whatever the policy says', () => {
      const lenient = tenantPolicy({ approvalRequiredClasses: [] });
      const required = evaluatePolicy(input({ tenantPolicy: lenient }, {}, descriptor({ sideEffectClass: 'READ', approvalRequired: true })));
      expect(required.decision.effect).toBe('approval_required');
      expect(codes(required)).toEqual(['APPROVAL_REQUIRED_BY_TOOL']);
      expect(evaluatePolicy(input({ tenantPolicy: lenient }, {}, descriptor({ sideEffectClass: 'READ', approvalRequired: false }))).decision.effect).toBe('allow');
    });
  });

  describe('command rules', () => {
    const shellTool = descriptor({ toolId: 'shell.run', sideEffectClass: 'CODE_EXECUTION', riskClass: 'HIGH', commandPolicy: { argument: 'command', allow: [], block: [] } });
    const blocking = tenantPolicy({ approvalRequiredClasses: [], commands: { block: [...DEFAULT_BLOCKED_COMMAND_PATTERNS], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' } });

    it('denies a blocked command when the policy says DENY', () => {
      for (const command of ['rm -rf /', 'DROP DATABASE prod', 'terraform destroy', 'kubectl delete namespace prod', 'az group delete -n rg']) {
        const evaluation = evaluatePolicy(input({ tenantPolicy: blocking }, { command }, shellTool));
        expect(evaluation.decision, command).toMatchObject({ effect: 'deny', deniedAt: 'TENANT_POLICY' });
        expect(codes(evaluation)).toEqual(['COMMAND_BLOCKED']);
        expect(JSON.stringify(evaluation.decision)).not.toContain(command);
      }
      expect(evaluatePolicy(input({ tenantPolicy: blocking }, { command: 'ls -la' }, shellTool)).decision.effect).toBe('allow');
    });

    it('escalates a blocked command to approval at the escalation class when the policy says ESCALATE', () => {
      const escalating = tenantPolicy({ approvalRequiredClasses: [], commands: { block: [...DEFAULT_BLOCKED_COMMAND_PATTERNS], onBlocked: 'ESCALATE', escalateTo: 'PRIVILEGED' } });
      const evaluation = evaluatePolicy(input({ tenantPolicy: escalating }, { command: 'terraform destroy' }, shellTool));
      expect(evaluation.decision).toMatchObject({ effect: 'approval_required', declaredClass: 'CODE_EXECUTION', effectiveClass: 'PRIVILEGED' });
      expect(codes(evaluation)).toEqual(['CLASS_RAISED_BY_COMMAND', 'APPROVAL_REQUIRED_FOR_COMMAND']);
      const capped = evaluatePolicy(input({ tenantPolicy: escalating, agentProfile: profile({ maxSideEffectClass: 'CODE_EXECUTION' }) }, { command: 'terraform destroy' }, shellTool));
      expect(capped.decision).toMatchObject({ effect: 'deny', deniedAt: 'AGENT_PERMISSION' });
    });

    it('denies an unreadable command and fails closed on unusable patterns', () => {
      expect(codes(evaluatePolicy(input({ tenantPolicy: blocking }, { cmd: 'ls' }, shellTool)))).toEqual(['COMMAND_UNREADABLE']);
      const broken = descriptor({ ...shellTool, commandPolicy: { argument: 'command', allow: [], block: ['(x)\\1'] } });
      expect(codes(evaluatePolicy(input({ tenantPolicy: blocking }, { command: 'ls' }, broken)))).toEqual(['COMMAND_PATTERN_INVALID']);
    });
  });

  it('provides a conservative default tenant policy', () => {
    const policy = defaultTenantPolicy('acme', at);
    expect(evaluatePolicy(input({ tenantPolicy: policy })).decision.effect).toBe('allow');
    expect(evaluatePolicy(input({ tenantPolicy: policy }, {}, descriptor({ sideEffectClass: 'DESTRUCTIVE' }))).decision.effect).toBe('approval_required');
  });
});
