import { describe, expect, it } from 'vitest';
import type { Approval, ApprovalRequested, ApprovalStreamEvent } from '@toolplane/contracts';
import { decide, evolve, openingOf, type ApprovalAggregate, type ApprovalCommand, type DecidingHuman } from './approval-decider.js';
import { decisionOf } from './decision-timing.js';

const requestedAt = new Date('2026-11-29T12:00:00.000Z');
const scope = { tenant: 'acme', workspace: 'main' };
const approvalId = '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const requested: ApprovalRequested = {
  type: 'ApprovalRequested',
  data: {
    approvalId,
    requestHash: 'a'.repeat(64),
    sideEffectClass: 'DESTRUCTIVE',
    riskClass: 'HIGH',
    summary: 'Delete repository acme/old-site',
    approvers: { roles: ['approver'], principals: [] },
    expiresAt: '2026-11-29T12:15:00.000Z',
  },
  metadata: {
    eventId: '0b7e3f0a-5a8f-4d7e-8c11-9f0e1d2c3b4a',
    ...scope,
    principal: 'user:bob@acme.example',
    toolCallId: 'call_1',
    invocationId: '7d0c5a9e-1f0b-4c3e-9a57-1c2d3e4f5a6b',
    attempt: 1,
    sequence: 4,
    toolId: 'github.delete_repo',
    toolVersion: '1.2.0',
    correlationId: 'run-42',
    occurredAt: requestedAt.toISOString(),
  },
};
const alice: DecidingHuman = { principal: 'user:alice@acme.example', tenant: 'acme', workspaces: ['main'], roles: ['approver'] };
const at = (iso: string) => ({ approvalId, scope, now: new Date(iso) });

/** Applies a command as the write path does: what it appended, and the approval after it. */
function apply(state: ApprovalAggregate, command: ApprovalCommand): { appended: ApprovalStreamEvent[]; state: Approval } {
  const appended = decide(command, state);
  const next = appended.reduce(evolve, state);
  if (next === null) throw new Error('no approval');
  return { appended, state: next };
}
const pending = () => apply(null, { type: 'OpenApproval', data: { opened: openingOf(requested, scope, requestedAt) } }).state;

describe('the decision an append made', () => {
  it('times a grant, a rejection, an expiry and a void of a pending approval from the request', () => {
    const granted = apply(pending(), { type: 'GrantApproval', data: { decider: alice }, metadata: at('2026-11-29T12:00:42.500Z') });
    expect(decisionOf(granted.appended, granted.state)).toEqual({ outcome: 'granted', seconds: 42.5 });
    const rejected = apply(pending(), { type: 'RejectApproval', data: { decider: alice, reason: 'no' }, metadata: at('2026-11-29T12:01:00.000Z') });
    expect(decisionOf(rejected.appended, rejected.state)).toEqual({ outcome: 'rejected', seconds: 60 });
    const expired = apply(pending(), { type: 'ExpireApproval', metadata: at('2026-11-29T12:15:00.000Z') });
    expect(decisionOf(expired.appended, expired.state)).toEqual({ outcome: 'expired', seconds: 900 });
    const voided = apply(pending(), { type: 'VoidApproval', data: { reason: 'ToolRemoved' }, metadata: at('2026-11-29T12:00:03.000Z') });
    expect(decisionOf(voided.appended, voided.state)).toEqual({ outcome: 'voided', seconds: 3 });
  });

  it('sees no decision in an opening, a consumption, a repeat, or the void of an approval already granted', () => {
    const opened = apply(null, { type: 'OpenApproval', data: { opened: openingOf(requested, scope, requestedAt) } });
    expect(decisionOf(opened.appended, opened.state)).toBeUndefined();
    const granted = apply(opened.state, { type: 'GrantApproval', data: { decider: alice }, metadata: at('2026-11-29T12:00:10.000Z') });
    const repeated = apply(granted.state, { type: 'GrantApproval', data: { decider: alice }, metadata: at('2026-11-29T12:00:11.000Z') });
    expect(repeated.appended).toEqual([]);
    expect(decisionOf(repeated.appended, repeated.state)).toBeUndefined();
    const voided = apply(granted.state, { type: 'VoidApproval', data: { reason: 'ToolRemoved' }, metadata: at('2026-11-29T12:00:12.000Z') });
    expect(voided.appended.map((event) => event.type)).toEqual(['ApprovalVoided']);
    expect(decisionOf(voided.appended, voided.state)).toBeUndefined();
    const consumed = apply(granted.state, { type: 'ConsumeApproval', data: { requestHash: 'a'.repeat(64), toolVersion: '1.2.0' }, metadata: at('2026-11-29T12:00:13.000Z') });
    expect(decisionOf(consumed.appended, consumed.state)).toBeUndefined();
  });

  it('counts a decision stamped before the request (clocks apart) as immediate, not negative', () => {
    const granted = apply(pending(), { type: 'GrantApproval', data: { decider: alice }, metadata: at('2026-11-29T11:59:59.000Z') });
    expect(decisionOf(granted.appended, granted.state)).toEqual({ outcome: 'granted', seconds: 0 });
  });
});
