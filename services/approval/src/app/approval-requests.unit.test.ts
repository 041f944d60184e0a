import { describe, expect, it } from 'vitest';
import { eventSubject, type ApprovalRequested, type ApprovalStreamEvent, type ToolDescriptor } from '@toolplane/contracts';
import { inMemoryEventStore } from '@toolplane/event-store';
import type { Messaging } from '@toolplane/messaging';
import type { Logger } from '@toolplane/service-kit';
import { onApprovalRequested } from './approval-requests.js';
import { readApproval, type ApprovalRuntime } from './approval-runtime.js';

// An approval requested for a tool version retired before the request arrived (its retirement's voiding ran first)
// is voided as it opens, unless a release retired the version with in-flight policy FINISH.

const scope = { tenant: 'acme', workspace: 'support' };
const approvalId = '0b7c6a34-52d1-4f0e-9d6a-3c1f8e2b9a71';
const event: ApprovalRequested = {
  type: 'ApprovalRequested',
  data: { approvalId, requestHash: 'a'.repeat(64), sideEffectClass: 'WRITE', riskClass: 'MEDIUM', summary: 'Refund', approvers: { roles: ['approver'], principals: [] }, expiresAt: '2030-01-01T10:10:00.000Z' },
  metadata: {
    eventId: '5e0d3f9c-8d4b-4a57-b1a4-0f2f5d3c9e11',
    ...scope,
    principal: 'user:bob@acme.example',
    toolCallId: 'call_1234',
    invocationId: '7f0b6f1e-2a7c-4c1e-8d3f-1b2a3c4d5e6f',
    attempt: 1,
    sequence: 4,
    toolId: 'payments.refund',
    toolVersion: '2',
    correlationId: 'corr-42',
    occurredAt: '2030-01-01T10:00:00.000Z',
  },
};

type Retirement = Pick<ToolDescriptor, 'active' | 'inactiveReason' | 'inFlight'>;

async function opened(descriptor: Retirement | undefined) {
  const quiet = () => undefined;
  const runtime: ApprovalRuntime = {
    events: inMemoryEventStore<ApprovalStreamEvent>(),
    approvals: new Proxy({} as ApprovalRuntime['approvals'], {
      get: () => {
        throw new Error('the read model was read');
      },
    }),
    messaging: {} as Messaging,
    clock: () => new Date('2030-01-01T10:00:01.000Z'),
    logger: { debug: quiet, info: quiet, warn: quiet, error: quiet } as unknown as Logger,
    onDecided: quiet,
    descriptorOf: () => Promise.resolve(descriptor === undefined ? undefined : ({ ...descriptor } as ToolDescriptor)),
  };
  await onApprovalRequested(runtime, event, { subject: eventSubject(scope, 'ApprovalRequested'), signal: new AbortController().signal });
  return readApproval(runtime, scope, approvalId);
}

describe('an approval requested for a retired tool version', () => {
  it('stays Pending while the version is active, or unknown to the read model', async () => {
    expect((await opened({ active: true }))?.state).toBe('Pending');
    expect((await opened(undefined))?.state).toBe('Pending');
  });

  it('is voided as it opens when the version was retired, a release’s CANCEL_PENDING included', async () => {
    expect(await opened({ active: false, inactiveReason: 'Unbound' })).toMatchObject({ state: 'Voided', voidReason: 'Unbound' });
    expect(await opened({ active: false, inactiveReason: 'ReleaseRevoked', inFlight: 'CANCEL_PENDING' })).toMatchObject({ state: 'Voided', voidReason: 'ReleaseRevoked' });
  });

  it('stays Pending when a release retired the version with FINISH', async () => {
    expect((await opened({ active: false, inactiveReason: 'ReleaseDeprecated', inFlight: 'FINISH' }))?.state).toBe('Pending');
  });
});
