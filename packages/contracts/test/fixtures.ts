// Valid sample messages shared by the unit tests: one per lifecycle event type, a request, a receipt.
import type { InvocationEventMetadata, EventMetadata, ApprovalEventMetadata, LifecycleEvent, InvocationRequest, InvocationReceipt, EventType } from '../src/mod.js';

export const scope = { tenant: 'acme', workspace: 'main' } as const;

export const ids = {
  invocation: '7d0c5a9e-1f0b-4c3e-9a57-1c2d3e4f5a6b',
  event: '0b7e3f0a-5a8f-4d7e-8c11-9f0e1d2c3b4a',
  approval: 'c6a1e2d3-4b5f-4a6b-9c7d-8e9f0a1b2c3d',
  policyDecision: 'f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b',
  server: '3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f',
  lease: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
} as const;

export const hash = (c: string): string => c.repeat(64);

export const invocationMetadata: InvocationEventMetadata = {
  eventId: ids.event,
  ...scope,
  principal: 'user:alice@example.com',
  agentId: 'agent-support',
  agentRevision: '7',
  toolCallId: 'call_AbC123',
  invocationId: ids.invocation,
  attempt: 1,
  sequence: 3,
  toolId: 'github.create_issue',
  toolVersion: '1.0.0',
  correlationId: 'run-42',
  occurredAt: '2026-11-29T17:00:00.000Z',
};

export const baseMetadata: EventMetadata = { eventId: ids.event, ...scope, occurredAt: '2026-11-29T17:00:00.000Z', actor: 'user:bob' };

export const approvalMetadata: ApprovalEventMetadata = {
  ...baseMetadata,
  invocationId: ids.invocation,
  toolCallId: 'call_AbC123',
  toolId: 'github.create_issue',
  toolVersion: '1.0.0',
};

const failure = { code: 'TEMPORARY_UNAVAILABLE', message: 'upstream 503', retryable: true, providerErrorType: 'HttpStatus(503)' } as const;

/** One valid event of every type; `satisfies` makes a missing or misspelled type a compile error. */
export const sampleEvents = {
  InvocationReceived: {
    type: 'InvocationReceived',
    data: { requestHash: hash('a'), idempotencyKey: 'key-1', idempotencyKeyDerived: false, deadline: '2026-11-29T17:01:00.000Z' },
    metadata: { ...invocationMetadata, sequence: 1 },
  },
  InvocationDenied: {
    type: 'InvocationDenied',
    data: { stage: 'TENANT_POLICY', failure: { code: 'AUTHORIZATION_DENIED', message: 'kill switch', retryable: false }, policyDecisionId: ids.policyDecision },
    metadata: invocationMetadata,
  },
  ToolCallStarted: {
    type: 'ToolCallStarted',
    data: {
      requestHash: hash('a'),
      idempotencyKey: 'key-1',
      declaredSideEffectClass: 'READ',
      sideEffectClass: 'WRITE',
      riskClass: 'LOW',
      policyDecisionId: ids.policyDecision,
      secretLeaseIds: [ids.lease],
      mcpServerId: ids.server,
      deadline: '2026-11-29T17:01:00.000Z',
    },
    metadata: invocationMetadata,
  },
  ToolCallCompleted: { type: 'ToolCallCompleted', data: { resultHash: hash('b'), truncated: false, durationMs: 12 }, metadata: invocationMetadata },
  ToolCallFailed: { type: 'ToolCallFailed', data: { failure, durationMs: 12 }, metadata: invocationMetadata },
  ToolCallCancelled: { type: 'ToolCallCancelled', data: { failure: { code: 'CANCELLED', message: 'caller aborted', retryable: false }, durationMs: 3 }, metadata: invocationMetadata },
  ToolEffectUncertain: { type: 'ToolEffectUncertain', data: { failure: { code: 'UNKNOWN_OUTCOME', message: 'timeout after send', retryable: false } }, metadata: invocationMetadata },
  SandboxLeased: { type: 'SandboxLeased', data: { sandboxLeaseId: ids.lease, sandboxKind: 'Process', expiresAt: '2026-11-29T17:05:00.000Z' }, metadata: invocationMetadata },
  SandboxReleased: { type: 'SandboxReleased', data: { sandboxLeaseId: ids.lease, sandboxKind: 'Process' }, metadata: invocationMetadata },
  ApprovalRequested: {
    type: 'ApprovalRequested',
    data: {
      approvalId: ids.approval,
      requestHash: hash('a'),
      sideEffectClass: 'WRITE',
      riskClass: 'MEDIUM',
      summary: 'Create an issue titled "Hi" in acme/main',
      approvers: { roles: ['approver'], principals: [] },
      expiresAt: '2026-11-29T18:00:00.000Z',
    },
    metadata: invocationMetadata,
  },
  ApprovalGranted: { type: 'ApprovalGranted', data: { approvalId: ids.approval, requestHash: hash('a'), decidedBy: 'user:bob' }, metadata: approvalMetadata },
  ApprovalRejected: { type: 'ApprovalRejected', data: { approvalId: ids.approval, requestHash: hash('a'), decidedBy: 'user:bob', reason: 'not today' }, metadata: approvalMetadata },
  ApprovalExpired: { type: 'ApprovalExpired', data: { approvalId: ids.approval, requestHash: hash('a') }, metadata: approvalMetadata },
  ApprovalConsumed: { type: 'ApprovalConsumed', data: { approvalId: ids.approval, requestHash: hash('a') }, metadata: approvalMetadata },
  ApprovalVoided: { type: 'ApprovalVoided', data: { approvalId: ids.approval, requestHash: hash('a'), reason: 'DefinitionChanged' }, metadata: approvalMetadata },
  McpServerRegistered: {
    type: 'McpServerRegistered',
    data: { serverId: ids.server, name: 'github', direction: 'Consumed', transport: 'StreamableHttp', authentication: 'OAuth2ProtectedResource', governancePolicyRef: 'default' },
    metadata: baseMetadata,
  },
  McpServerStateChanged: { type: 'McpServerStateChanged', data: { serverId: ids.server, from: 'Active', to: 'Degraded', reason: '3 failed pings', version: 4 }, metadata: baseMetadata },
  McpCapabilitiesDiscovered: {
    type: 'McpCapabilitiesDiscovered',
    data: { serverId: ids.server, protocolVersion: '2025-06-18', snapshotHash: hash('c'), toolCount: 1, resourceCount: 0, promptCount: 2 },
    metadata: baseMetadata,
  },
  McpToolDefinitionChanged: {
    type: 'McpToolDefinitionChanged',
    data: { serverId: ids.server, toolName: 'create_issue', change: 'Changed', previousDefinitionHash: hash('d'), definitionHash: hash('e'), toolId: 'github.create_issue', toolVersion: '1.0.0' },
    metadata: baseMetadata,
  },
  ToolDescriptorActivated: {
    type: 'ToolDescriptorActivated',
    data: { toolId: 'github.create_issue', toolVersion: '1.0.0', kind: 'Mcp', sideEffectClass: 'WRITE', riskClass: 'MEDIUM', mcpServerId: ids.server, definitionHash: hash('d') },
    metadata: baseMetadata,
  },
  ToolDescriptorRetired: { type: 'ToolDescriptorRetired', data: { toolId: 'github.create_issue', toolVersion: '1.0.0', reason: 'DefinitionChanged' }, metadata: baseMetadata },
  ReleasePublished: { type: 'ReleasePublished', data: { releaseId: 'payments-2026.03', version: 1 }, metadata: baseMetadata },
  ReleaseDeprecated: { type: 'ReleaseDeprecated', data: { releaseId: 'payments-2026.03', inFlight: 'FINISH', reason: 'superseded by 2026.04', version: 3 }, metadata: baseMetadata },
  ReleaseRevoked: { type: 'ReleaseRevoked', data: { releaseId: 'payments-2026.03', inFlight: 'CANCEL_PENDING', version: 4 }, metadata: baseMetadata },
  SecretLeased: {
    type: 'SecretLeased',
    data: { leaseId: ids.lease, connectionRef: 'github-app', invocationId: ids.invocation, toolId: 'github.create_issue', leasedTo: 'svc:tool-adapter', expiresAt: '2026-11-29T17:05:00.000Z' },
    metadata: baseMetadata,
  },
  SecretLeaseDenied: {
    type: 'SecretLeaseDenied',
    data: { connectionRef: 'github-app', invocationId: ids.invocation, toolId: 'github.create_issue', failure: { code: 'AUTHORIZATION_DENIED', message: 'tool not allowed', retryable: false } },
    metadata: baseMetadata,
  },
} as const satisfies { [T in EventType]: Extract<LifecycleEvent, { type: T }> };

export const request: InvocationRequest = {
  toolId: 'github.create_issue',
  arguments: { title: 'Hi', labels: ['bug'] },
  idempotencyKey: 'key-1',
  correlationId: 'run-42',
  contextToken: 'eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ1c2VyOmFsaWNlIn0.c2lnbmF0dXJl',
};

export const receipt: InvocationReceipt = {
  ...scope,
  invocationId: ids.invocation,
  toolCallId: 'call_AbC123',
  attempt: 1,
  idempotencyKey: 'key-1',
  principal: 'user:alice@example.com',
  agentId: 'agent-support',
  agentRevision: '7',
  toolId: 'github.create_issue',
  toolVersion: '1.0.0',
  requestHash: hash('a'),
  resultHash: hash('b'),
  sideEffectClass: 'WRITE',
  policyDecisionId: ids.policyDecision,
  state: 'Observed',
  receivedAt: '2026-11-29T17:00:00.000Z',
  startedAt: '2026-11-29T17:00:00.010Z',
  endedAt: '2026-11-29T17:00:00.022Z',
  signature: { alg: 'Ed25519', keyId: 'adapter-2026-11', value: `${'A'.repeat(86)}==` },
};
