import { describe, expect, it } from 'vitest';
import { PolicyBundleInput, ToolDescriptor, type BindToolReply, type PolicyBundle } from '@toolplane/contracts';
import { bundleFields, parseDocumentInput } from './policies.js';
import { bindSummary } from './tools.js';

const at = '2026-03-01T12:00:00.000Z';
const bundle: PolicyBundle = {
  tenant: 'acme',
  name: 'payments-strict',
  deniedSideEffectClasses: ['WRITE'],
  approvalRequiredClasses: [],
  rateLimits: [{ tools: '**', per: 'TOOL', limit: 5, windowMs: 1000 }],
  classRaises: [],
  commands: { block: ['\\bpsql\\b'], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' },
  updatedBy: 'user:ada',
  updatedAt: at,
  version: 3,
};

describe('policy bundles in the CLI', () => {
  it('puts back a bundle as `get --json` printed it, dropping what the adapter owns and keeping its name', () => {
    expect(parseDocumentInput(PolicyBundleInput, JSON.stringify(bundle), 'policy bundle')).toEqual({
      name: 'payments-strict',
      deniedSideEffectClasses: ['WRITE'],
      approvalRequiredClasses: [],
      rateLimits: [{ tools: '**', per: 'TOOL', limit: 5, windowMs: 1000 }],
      classRaises: [],
      commands: { block: ['\\bpsql\\b'], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' },
    });
    expect(() => parseDocumentInput(PolicyBundleInput, JSON.stringify({ ...bundle, name: undefined }), 'policy bundle')).toThrow('the policy bundle is invalid at name');
  });

  it('shows a bundle’s rules', () => {
    const text = bundleFields(bundle);
    expect(text).toContain('bundle:           payments-strict\n');
    expect(text).toContain('denied classes:   WRITE\n');
    expect(text).toContain('rate limits:      ** 5/1000ms per tool\n');
    expect(text).toContain('blocked commands: 1 patterns, deny\n');
  });
});

describe('tools bind output', () => {
  const now = new Date().toISOString();
  const descriptor = ToolDescriptor.parse({
    tenant: 'acme',
    workspace: 'main',
    toolId: 'payments.refund',
    toolVersion: '2',
    kind: 'Mcp',
    providerToolName: 'refund',
    description: 'Refunds.',
    inputSchemaJson: '{"type":"object"}',
    definitionHash: 'a'.repeat(64),
    sideEffectClass: 'WRITE',
    riskClass: 'MEDIUM',
    idempotency: 'NONE',
    authorization: { permissions: [], roles: [] },
    secretDependencies: [],
    timeoutMs: 30_000,
    retryPolicy: { maxAttempts: 1, initialBackoffMs: 200, maxBackoffMs: 5_000 },
    rateLimits: [],
    auditRequirements: { argumentsHash: true, resultHash: true },
    sandboxKind: 'None',
    healthy: true,
    active: true,
    boundBy: 'user:ada',
    boundAt: now,
    updatedAt: now,
    version: 1,
  });
  const reply = (extra: Partial<BindToolReply>): BindToolReply => ({ descriptor, created: true, serverState: 'Active', ...extra });

  it('names every agent that lists the tool but will be denied it', () => {
    const text = bindSummary(reply({ conflicts: [{ agentId: 'reader', code: 'CLASS_ABOVE_AGENT_MAX', reason: 'payments.refund is WRITE; the agent lists it (pattern payments.*) but may cause at most READ' }] }));
    expect(text.startsWith('bound (server Active)\n')).toBe(true);
    expect(text.endsWith('agent conflicts: 1 agent profile list the tool but will be denied it\n  reader: payments.refund is WRITE; the agent lists it (pattern payments.*) but may cause at most READ\n')).toBe(true);
  });

  it('says when there are none, and when they could not be checked', () => {
    expect(bindSummary(reply({ conflicts: [] })).endsWith('agent conflicts: none\n')).toBe(true);
    expect(bindSummary(reply({ conflictsUnknown: 'the tool adapter could not check the agent profiles: TIMEOUT x' })).endsWith('agent conflicts: not checked (the tool adapter could not check the agent profiles: TIMEOUT x)\n')).toBe(true);
  });
});
