// Shared sample documents for the pure core's unit tests.
import type { AgentProfile, InvocationRequest, TenantPolicy, ToolDescriptor } from '@toolplane/contracts';
import { generateKeyPairSync } from 'node:crypto';
import type { CallerIdentity } from '../src/core/policy-evaluator.js';
import { receiptSigner, type ReceiptSigningKey } from '../src/core/receipts.js';

export const scope = { tenant: 'acme', workspace: 'main' } as const;
export const at = '2026-03-01T12:00:00.000Z';
export const later = (ms: number, from: string = at): string => new Date(Date.parse(from) + ms).toISOString();

export const ids = {
  invocation: '11111111-1111-4111-8111-111111111111',
  invocation2: '22222222-2222-4222-8222-222222222222',
  approval: '33333333-3333-4333-8333-333333333333',
  lease: '44444444-4444-4444-8444-444444444444',
  sandbox: '55555555-5555-4555-8555-555555555555',
  server: '66666666-6666-4666-8666-666666666666',
} as const;

export const hash = (c: string): string => c.repeat(64);

export function descriptor(overrides: Partial<ToolDescriptor> = {}): ToolDescriptor {
  return {
    ...scope,
    toolId: 'github.create_issue',
    toolVersion: '1.0.0',
    kind: 'Mcp',
    providerToolName: 'create_issue',
    description: 'Creates an issue.',
    inputSchemaJson: JSON.stringify({ type: 'object', properties: { title: { type: 'string' } }, required: ['title'], additionalProperties: false }),
    definitionHash: hash('d'),
    sideEffectClass: 'WRITE',
    riskClass: 'MEDIUM',
    idempotency: 'NONE',
    authorization: { permissions: [], roles: [] },
    secretDependencies: [],
    timeoutMs: 30_000,
    retryPolicy: { maxAttempts: 3, initialBackoffMs: 100, maxBackoffMs: 2000 },
    rateLimits: [],
    auditRequirements: { argumentsHash: true, resultHash: true },
    sandboxKind: 'None',
    mcpServerId: ids.server,
    healthy: true,
    active: true,
    boundBy: 'user:admin',
    boundAt: at,
    updatedAt: at,
    version: 1,
    ...overrides,
  };
}

export function profile(overrides: Partial<AgentProfile> = {}): AgentProfile {
  return {
    ...scope,
    agentId: 'agent-support',
    allowedTools: ['github.*', 'shell.run', 'search.**'],
    deniedTools: [],
    maxRiskClass: 'HIGH',
    permissions: ['repo:write'],
    updatedBy: 'user:admin',
    updatedAt: at,
    version: 3,
    ...overrides,
  };
}

export function tenantPolicy(overrides: Partial<TenantPolicy> = {}): TenantPolicy {
  return {
    tenant: scope.tenant,
    deniedSideEffectClasses: [],
    approvalRequiredClasses: ['DESTRUCTIVE', 'EXTERNAL_COMMUNICATION', 'CODE_EXECUTION', 'PRIVILEGED'],
    approvers: { roles: ['approver'], principals: [] },
    approvalTtlMs: 3_600_000,
    rateLimits: [],
    killSwitches: [],
    environments: [],
    classRaises: [],
    commands: { block: [], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' },
    allowDirectPrincipalCalls: false,
    sensitiveArgumentFields: [],
    updatedBy: 'user:admin',
    updatedAt: at,
    version: 7,
    ...overrides,
  };
}

export const caller: CallerIdentity = { principal: 'user:alice@example.com', agentId: 'agent-support', agentRevision: '7', roles: [] };

export function request(overrides: Partial<InvocationRequest> = {}): InvocationRequest {
  return {
    toolId: 'github.create_issue',
    arguments: { title: 'Broken build' },
    idempotencyKey: 'key-1',
    correlationId: 'run-42',
    contextToken: 'aaa.bbb.ccc',
    ...overrides,
  };
}

export function signingKey(keyId = 'adapter-2026'): ReceiptSigningKey & { publicKey: ReturnType<typeof generateKeyPairSync>['publicKey'] } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { keyId, privateKey, publicKey };
}

const key = signingKey();
export const publicKeys = new Map([[key.keyId, key.publicKey]]);
export const signReceipt = receiptSigner(key);
export const ctx = (now: string = at) => ({ now, signReceipt });
