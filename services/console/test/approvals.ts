// Approvals as the approval service shows them, for tests.
import { randomUUID } from 'node:crypto';
import type { ApprovalView } from '@toolplane/contracts';

/** A pending approval of acme/main; override any field. */
export function pendingApproval(overrides: Partial<ApprovalView> = {}): ApprovalView {
  return {
    approvalId: randomUUID(),
    tenant: 'acme',
    workspace: 'main',
    invocationId: randomUUID(),
    toolCallId: `call_${randomUUID().slice(0, 8)}`,
    toolId: 'github.delete_repo',
    toolVersion: '1.2.0',
    requestHash: 'a'.repeat(64),
    sideEffectClass: 'DESTRUCTIVE',
    riskClass: 'HIGH',
    summary: 'Delete repository acme/old-site',
    requestedBy: 'user:bob@acme.example',
    agentId: 'agent-support',
    agentRevision: '7',
    approvers: { roles: ['approver'], principals: [] },
    state: 'Pending',
    requestedAt: '2026-03-01T10:00:00.000Z',
    expiresAt: '2026-03-01T10:10:00.000Z',
    correlationId: 'run-42',
    updatedAt: '2026-03-01T10:00:00.000Z',
    version: 1,
    ...overrides,
  };
}
