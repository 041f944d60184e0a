import { EffectiveToolSet } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { at, caller, descriptor, ids, later, profile, scope, tenantPolicy } from '../../test/core-fixtures.js';
import { ArgumentValidators } from './argument-validation.js';
import { effectiveTools, type EffectiveToolsInput } from './effective-tools.js';

const registered = [
  descriptor({ toolId: 'github.create_issue', sideEffectClass: 'WRITE', riskClass: 'MEDIUM' }),
  descriptor({ toolId: 'github.list_issues', sideEffectClass: 'READ', riskClass: 'LOW', title: 'List issues' }),
  descriptor({ toolId: 'github.delete_repo', sideEffectClass: 'DESTRUCTIVE', riskClass: 'HIGH' }),
  descriptor({ toolId: 'github.admin', sideEffectClass: 'PRIVILEGED', riskClass: 'CRITICAL' }),
  descriptor({ toolId: 'slack.post_message', sideEffectClass: 'EXTERNAL_COMMUNICATION', riskClass: 'MEDIUM' }),
  descriptor({ toolId: 'search.web.query', sideEffectClass: 'READ', riskClass: 'LOW', active: false, inactiveReason: 'DefinitionChanged' }),
];

function run(overrides: Partial<EffectiveToolsInput> = {}) {
  return effectiveTools({ scope, descriptors: registered, caller, agentProfile: profile(), tenantPolicy: tenantPolicy(), explain: true, ...overrides });
}

const visible = (set: EffectiveToolSet) => set.tools.map((t) => t.toolId);
const hiddenCodes = (set: EffectiveToolSet, toolId: string) => set.hidden?.find((h) => h.toolId === toolId)?.reasons.map((r) => r.code);

describe('effectiveTools', () => {
  it('returns registered ∩ agent ∩ tenant tools with name, description and input schema, and a valid set', () => {
    const set = run();
    expect(EffectiveToolSet.parse(set)).toEqual(set);
    expect(visible(set)).toEqual(['github.create_issue', 'github.delete_repo', 'github.list_issues']);
    const list = set.tools.find((t) => t.toolId === 'github.list_issues');
    expect(list).toMatchObject({ name: 'github__list_issues', title: 'List issues', description: 'Creates an issue.', sideEffectClass: 'READ', requiresApproval: false });
    expect(list?.inputSchema).toMatchObject({ type: 'object', required: ['title'] });
    expect(set.tools.find((t) => t.toolId === 'github.delete_repo')?.requiresApproval).toBe(true);
    expect(set.agentId).toBe('agent-support');
  });

  it('carries a tool’s output schema when its descriptor declares one, and none otherwise', () => {
    const outputSchema = { type: 'object', properties: { number: { type: 'integer' } }, required: ['number'] };
    const withOutput = [descriptor({ toolId: 'github.create_issue', sideEffectClass: 'WRITE', riskClass: 'MEDIUM', outputSchemaJson: JSON.stringify(outputSchema) }), ...registered.slice(1)];
    const set = run({ descriptors: withOutput });
    expect(EffectiveToolSet.parse(set)).toEqual(set);
    expect(set.tools.find((t) => t.toolId === 'github.create_issue')?.outputSchema).toEqual(outputSchema);
    expect(set.tools.find((t) => t.toolId === 'github.list_issues')).not.toHaveProperty('outputSchema');
  });

  it('explains every hidden tool', () => {
    const set = run();
    expect(hiddenCodes(set, 'github.admin')).toEqual(['RISK_ABOVE_AGENT_MAX']);
    expect(hiddenCodes(set, 'slack.post_message')).toEqual(['TOOL_NOT_IN_PROFILE']);
    expect(hiddenCodes(set, 'search.web.query')).toEqual(['TOOL_INACTIVE']);
    expect(run({ explain: false }).hidden).toBeUndefined();
  });

  it('says which release hid a tool its deprecation or revocation retired', () => {
    const revoked = descriptor({ toolId: 'github.list_issues', releaseId: 'r1', active: false, inactiveReason: 'ReleaseRevoked', inFlight: 'CANCEL_PENDING' });
    const set = run({ descriptors: [revoked] });
    expect(set.tools).toEqual([]);
    expect(set.hidden?.[0]?.reasons[0]).toEqual({ code: 'RELEASE_NOT_PUBLISHED', message: 'github.list_issues@1.0.0 is not active (ReleaseRevoked: release r1 was revoked)' });
  });

  it('applies the run policy, the task scope and the risk restrictions', () => {
    expect(visible(run({ runPolicy: { allowedTools: ['github.list_*', 'github.create_*'] } }))).toEqual(['github.create_issue', 'github.list_issues']);
    const denied = run({ runPolicy: { deniedTools: ['github.delete_*'], maxSideEffectClass: 'WRITE' } });
    expect(visible(denied)).toEqual(['github.create_issue', 'github.list_issues']);
    expect(hiddenCodes(denied, 'github.delete_repo')).toEqual(['DENIED_BY_RUN_POLICY', 'CLASS_ABOVE_RUN_MAX']);
    const scoped = run({ taskScope: { tools: ['github.list_issues'] } });
    expect(visible(scoped)).toEqual(['github.list_issues']);
    expect(hiddenCodes(scoped, 'github.create_issue')).toEqual(['OUTSIDE_TASK_SCOPE']);
    expect(visible(run({ restrictions: { maxRiskClass: 'LOW' } }))).toEqual(['github.list_issues']);
    const noApproval = run({ restrictions: { excludeApprovalRequired: true } });
    expect(hiddenCodes(noApproval, 'github.delete_repo')).toEqual(['APPROVAL_REQUIRED_EXCLUDED']);
    expect(visible(run({ restrictions: { maxSideEffectClass: 'READ' } }))).toEqual(['github.list_issues']);
    expect(visible(run({ runPolicy: { maxRiskClass: 'LOW' } }))).toEqual(['github.list_issues']);
  });

  it('hides the tools their server’s policy bundle denies, naming the bundle, and every tool of a server whose bundle is missing or unknown', () => {
    const strict = { tenant: scope.tenant, name: 'payments-strict', deniedSideEffectClasses: ['WRITE' as const], approvalRequiredClasses: ['DESTRUCTIVE' as const], rateLimits: [], classRaises: [], commands: { block: [], onBlocked: 'DENY' as const, escalateTo: 'PRIVILEGED' as const }, updatedBy: 'user:admin', updatedAt: at, version: 1 };
    const bundled = run({ serverBundles: new Map([[ids.server, { kind: 'bundle', bundle: strict }]]) });
    expect(visible(bundled)).toEqual(['github.delete_repo', 'github.list_issues']);
    expect(bundled.hidden?.find((h) => h.toolId === 'github.create_issue')?.reasons).toEqual([{ code: 'CLASS_DENIED', message: 'policy bundle "payments-strict" denies WRITE' }]);
    expect(bundled.tools.find((t) => t.toolId === 'github.delete_repo')?.requiresApproval).toBe(true);
    // Another server's bundle does not apply.
    expect(visible(run({ serverBundles: new Map([['77777777-7777-4777-8777-777777777777', { kind: 'bundle', bundle: strict }]]) }))).toEqual(visible(run()));
    const missing = run({ serverBundles: new Map([[ids.server, { kind: 'missing', name: 'gone' }]]) });
    expect(visible(missing)).toEqual([]);
    expect(hiddenCodes(missing, 'github.list_issues')).toEqual(['POLICY_BUNDLE_MISSING']);
    expect(hiddenCodes(run({ serverBundles: new Map([[ids.server, { kind: 'unavailable', problem: 'the registry did not answer' }]]) }), 'github.list_issues')).toEqual(['POLICY_BUNDLE_UNAVAILABLE']);
  });

  it('hides tools the tenant policy denies, including by kill switch and environment raise', () => {
    const killed = run({ tenantPolicy: tenantPolicy({ killSwitches: [{ target: 'TOOL', tools: 'github.create_*', reason: 'incident', engagedBy: 'user:oncall', engagedAt: at }] }) });
    expect(hiddenCodes(killed, 'github.create_issue')).toEqual(['KILL_SWITCH_TOOL']);
    const production = run({
      tenantPolicy: tenantPolicy({ environments: [{ workspace: 'main', environment: 'PRODUCTION', raiseTo: 'DESTRUCTIVE', raiseReads: false, requireApprovalForWrites: false }] }),
      restrictions: { excludeApprovalRequired: true },
    });
    expect(visible(production)).toEqual(['github.list_issues']);
  });

  it('shows only the newest active, healthy version of a tool', () => {
    const versions = [
      descriptor({ toolVersion: '1.0.0', boundAt: at }),
      descriptor({ toolVersion: '2.0.0', boundAt: later(1000) }),
      descriptor({ toolVersion: '3.0.0', boundAt: later(2000), healthy: false }),
    ];
    const set = run({ descriptors: versions });
    expect(set.tools.map((t) => t.toolVersion)).toEqual(['2.0.0']);
    expect(set.hidden?.map((h) => [h.toolVersion, h.reasons[0]?.code])).toEqual([
      ['1.0.0', 'TOOL_VERSION_SUPERSEDED'],
      ['3.0.0', 'TOOL_UNHEALTHY'],
    ]);
  });

  it('hides tools whose input schema is unusable', () => {
    const validators = new ArgumentValidators();
    const bad = descriptor({ toolId: 'github.bad', inputSchemaJson: JSON.stringify({ type: 'object', properties: { a: { type: 'string', pattern: '(a)\\1' } } }) });
    const notJson = descriptor({ toolId: 'github.broken', inputSchemaJson: '{' });
    const set = run({ descriptors: [...registered, bad, notJson], schemaStatus: (d) => validators.schemaStatus(d) });
    expect(hiddenCodes(set, 'github.bad')).toEqual(['SCHEMA_UNUSABLE']);
    expect(hiddenCodes(set, 'github.broken')).toEqual(['SCHEMA_UNUSABLE']);
  });

  it('gives model-safe, unique names, deterministically', () => {
    const long = `github.${'x'.repeat(70)}`;
    const set = run({ descriptors: [descriptor({ toolId: long }), descriptor({ toolId: 'github.a__b' }), descriptor({ toolId: 'github__a.b' })], agentProfile: profile({ allowedTools: ['**'] }) });
    const names = set.tools.map((t) => t.name);
    expect(new Set(names).size).toBe(3);
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(run({ descriptors: [descriptor({ toolId: long }), descriptor({ toolId: 'github.a__b' }), descriptor({ toolId: 'github__a.b' })], agentProfile: profile({ allowedTools: ['**'] }) }).tools.map((t) => t.name)).toEqual(names);
  });

  it('ignores descriptors of other scopes', () => {
    expect(visible(run({ descriptors: [descriptor({ workspace: 'other' })] }))).toEqual([]);
  });
});
