import { describe, expect, it } from 'vitest';
import { AgentProfile, EffectiveToolSet, EffectiveToolSetRequest, KillSwitch, PolicyDecision, TenantPolicy, ToolPattern } from './policy.js';

const at = '2026-03-01T12:00:00.000Z';

const tenantPolicy: TenantPolicy = {
  tenant: 'acme',
  deniedSideEffectClasses: ['PRIVILEGED'],
  approvalRequiredClasses: ['DESTRUCTIVE'],
  approvalRiskThreshold: 'HIGH',
  approvers: { roles: ['approver'], principals: [] },
  approvalTtlMs: 3_600_000,
  rateLimits: [{ tools: 'github.*', per: 'AGENT_TOOL', limit: 10, windowMs: 60_000 }],
  killSwitches: [{ target: 'SERVER', mcpServerId: '3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f', reason: 'incident', engagedBy: 'user:oncall', engagedAt: at }],
  environments: [{ workspace: 'prod', environment: 'PRODUCTION', raiseTo: 'DESTRUCTIVE', raiseReads: false, requireApprovalForWrites: true }],
  classRaises: [{ tools: 'slack.**', raiseTo: 'EXTERNAL_COMMUNICATION', reason: 'messages leave the company' }],
  commands: { block: ['\\brm\\s+-rf\\b'], onBlocked: 'ESCALATE', escalateTo: 'PRIVILEGED' },
  allowDirectPrincipalCalls: false,
  sensitiveArgumentFields: [],
  updatedBy: 'user:admin',
  updatedAt: at,
  version: 1,
};

describe('policy documents', () => {
  it('accept valid agent profiles and tenant policies', () => {
    const profile: AgentProfile = {
      tenant: 'acme',
      workspace: 'main',
      agentId: 'agent-support',
      allowedTools: ['github.*', '**.read_*'],
      deniedTools: ['github.delete_*'],
      maxRiskClass: 'MEDIUM',
      maxSideEffectClass: 'WRITE',
      permissions: ['repo:write'],
      updatedBy: 'user:admin',
      updatedAt: at,
      version: 2,
    };
    expect(AgentProfile.parse(profile)).toEqual(profile);
    expect(TenantPolicy.parse(tenantPolicy)).toEqual(tenantPolicy);
  });

  it('accept tool ids and globs, and nothing that could act as a regular expression', () => {
    for (const ok of ['github.create_issue', 'github.*', '**', '*.read_*', 'a.**.z']) expect(ToolPattern.safeParse(ok).success, ok).toBe(true);
    for (const bad of ['', 'github.(.*)', 'a..b', 'a b', '.a', 'a/b', 'x'.repeat(201)]) expect(ToolPattern.safeParse(bad).success, bad).toBe(false);
  });

  it('name the target of a kill switch', () => {
    expect(KillSwitch.safeParse({ target: 'TOOL', reason: 'x', engagedBy: 'user:a', engagedAt: at }).success).toBe(false);
    expect(KillSwitch.safeParse({ target: 'TENANT', reason: 'x', engagedBy: 'user:a', engagedAt: at }).success).toBe(true);
  });

  it('bind a policy decision to its invocation', () => {
    const decision: PolicyDecision = {
      decisionId: '8e1f4c2a-9b7d-8c3e-a5f6-1b2c3d4e5f60',
      invocationId: '7d0c5a9e-1f0b-4c3e-9a57-1c2d3e4f5a6b',
      toolId: 'github.create_issue',
      toolVersion: '1.0.0',
      requestHash: 'a'.repeat(64),
      effect: 'deny',
      declaredClass: 'WRITE',
      effectiveClass: 'WRITE',
      riskClass: 'MEDIUM',
      deniedAt: 'TENANT_POLICY',
      failure: { code: 'RATE_LIMITED', message: 'rate limit reached', retryable: true },
      retryAfterMs: 1200,
      reasons: [{ code: 'RATE_LIMITED', stage: 'TENANT_POLICY', effect: 'deny', message: 'rate limit reached' }],
      tenantPolicyVersion: 1,
      evaluatedAt: at,
    };
    expect(PolicyDecision.parse(decision)).toEqual(decision);
    expect(PolicyDecision.safeParse({ ...decision, extra: 1 }).success).toBe(false);
  });

  it('describe the effective tool set request and answer', () => {
    expect(EffectiveToolSetRequest.safeParse({ contextToken: 'a.b.c', runPolicy: { allowedTools: ['github.*'] }, taskScope: { tools: ['github.list_issues'] }, explain: true }).success).toBe(true);
    expect(EffectiveToolSetRequest.safeParse({ contextToken: 'a.b.c', tenant: 'other' }).success).toBe(false);
    const set: EffectiveToolSet = {
      agentId: 'agent-support',
      tools: [
        {
          toolId: 'github.list_issues',
          toolVersion: '1.0.0',
          name: 'github__list_issues',
          description: 'Lists issues.',
          inputSchema: { type: 'object', properties: { $ref: { type: 'string' } } },
          sideEffectClass: 'READ',
          riskClass: 'LOW',
          requiresApproval: false,
        },
      ],
      hidden: [{ toolId: 'github.delete_repo', toolVersion: '1.0.0', reasons: [{ code: 'TOOL_DENIED_BY_PROFILE', message: 'denied' }] }],
    };
    expect(EffectiveToolSet.parse(set)).toEqual(set);
    expect(EffectiveToolSet.safeParse({ tools: [{ ...set.tools[0], name: 'github.list_issues' }] }).success).toBe(false);
  });
});
