import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ApprovalOutcomeEvent, Approval as ApprovalSchema, Uuid, type Approval, type ApprovalRequested } from '@toolplane/contracts';
import { approvalFromRequest, decide, evolve, transitionFields, type ApprovalCommand, type Decider, type Decision } from './approval-core.js';
import { approvalEventId, nameBasedUuid } from './event-ids.js';

const requestedAt = new Date('2026-11-29T12:00:00.000Z');
const expiresAt = new Date('2026-11-29T12:15:00.000Z');
const before = new Date('2026-11-29T12:05:00.000Z');
const after = new Date('2026-11-29T12:20:00.000Z');
const hashA = 'a'.repeat(64);
const hashB = 'b'.repeat(64);

const requested: ApprovalRequested = {
  type: 'ApprovalRequested',
  data: {
    approvalId: '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
    requestHash: hashA,
    sideEffectClass: 'DESTRUCTIVE',
    riskClass: 'HIGH',
    summary: 'Delete repository acme/old-site',
    approvers: { roles: ['approver'], principals: ['user:carol@acme.example'] },
    expiresAt: expiresAt.toISOString(),
  },
  metadata: {
    eventId: '0b7e3f0a-5a8f-4d7e-8c11-9f0e1d2c3b4a',
    tenant: 'acme',
    workspace: 'main',
    principal: 'user:bob@acme.example',
    agentId: 'agent-support',
    agentRevision: '7',
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

function pending(): Approval {
  const created = approvalFromRequest(requested, { tenant: 'acme', workspace: 'main' }, requestedAt);
  if (!created.ok) throw created.error;
  return created.approval;
}

const alice: Decider = { principal: 'user:alice@acme.example', tenant: 'acme', workspaces: ['main'], roles: ['approver'] };
const carol: Decider = { principal: 'user:carol@acme.example', tenant: 'acme', workspaces: ['main'], roles: [] };
const approve = (decider: Decider = alice, reason?: string): ApprovalCommand => ({ type: 'Approve', decider, reason });
const reject = (decider: Decider = alice, reason = 'not during the freeze'): ApprovalCommand => ({ type: 'Reject', decider, reason });
const consume = (requestHash = hashA, toolVersion = '1.2.0'): ApprovalCommand => ({ type: 'Consume', requestHash, toolVersion });

function changed(decision: Decision): Extract<Decision, { kind: 'changed' }> {
  if (decision.kind !== 'changed') throw new Error(`expected a transition, got ${decision.kind === 'refused' ? `${decision.error.code}: ${decision.error.message}` : 'unchanged'}`);
  return decision;
}

function refusal(decision: Decision): string {
  if (decision.kind !== 'refused') throw new Error(`expected a refusal, got ${decision.kind}`);
  return decision.error.code;
}

function apply(approval: Approval, command: ApprovalCommand, now: Date): Approval {
  return evolve(approval, changed(decide(approval, command, now)));
}

describe('approvalFromRequest', () => {
  it('creates a pending approval bound to the request hash and exact tool version, in the subject’s scope', () => {
    const approval = pending();
    expect(ApprovalSchema.parse(approval)).toEqual(approval);
    expect(approval).toMatchObject({
      state: 'Pending',
      version: 1,
      tenant: 'acme',
      workspace: 'main',
      requestHash: hashA,
      toolId: 'github.delete_repo',
      toolVersion: '1.2.0',
      requestedBy: 'user:bob@acme.example',
      agentId: 'agent-support',
      expiresAt: expiresAt.toISOString(),
      outbox: [],
    });
  });

  it('normalises instants so that stored ones compare as strings', () => {
    const created = approvalFromRequest({ ...requested, data: { ...requested.data, expiresAt: '2026-11-29T12:15:00Z' } }, { tenant: 'acme', workspace: 'main' }, requestedAt);
    expect(created.ok && created.approval.expiresAt).toBe('2026-11-29T12:15:00.000Z');
  });

  it('refuses an event whose scope differs from its subject’s, and one without a tool version', () => {
    const elsewhere = approvalFromRequest(requested, { tenant: 'globex', workspace: 'main' }, requestedAt);
    expect(!elsewhere.ok && elsewhere.error.code).toBe('INVALID_ARGUMENT');
    const { toolVersion: _toolVersion, ...metadata } = requested.metadata;
    const unversioned = approvalFromRequest({ ...requested, metadata }, { tenant: 'acme', workspace: 'main' }, requestedAt);
    expect(!unversioned.ok && unversioned.error.code).toBe('INVALID_ARGUMENT');
  });
});

describe('deciding an approval', () => {
  it('grants for a holder of an approver role, with a valid ApprovalGranted event', () => {
    const decision = changed(decide(pending(), approve(alice, 'looks right'), before));
    expect(decision.changes).toMatchObject({ state: 'Granted', decidedBy: alice.principal, decidedAt: before.toISOString(), reason: 'looks right' });
    expect(ApprovalOutcomeEvent.parse(decision.event)).toEqual(decision.event);
    expect(decision.event).toMatchObject({
      type: 'ApprovalGranted',
      data: { approvalId: requested.data.approvalId, requestHash: hashA, decidedBy: alice.principal, reason: 'looks right' },
      metadata: { tenant: 'acme', workspace: 'main', actor: alice.principal, toolVersion: '1.2.0', invocationId: requested.metadata.invocationId },
    });
  });

  it('grants for a principal named in the approvers list without any role', () => {
    expect(changed(decide(pending(), approve(carol), before)).changes.state).toBe('Granted');
  });

  it('rejects with the reason, as ApprovalRejected', () => {
    const decision = changed(decide(pending(), reject(alice, 'not during the freeze'), before));
    expect(decision.changes).toMatchObject({ state: 'Rejected', reason: 'not during the freeze' });
    expect(ApprovalOutcomeEvent.parse(decision.event)).toMatchObject({ type: 'ApprovalRejected', data: { reason: 'not during the freeze' } });
  });

  it('refuses self-approval by the requesting principal or agent, whatever their roles', () => {
    const requester: Decider = { ...alice, principal: 'user:bob@acme.example' };
    const agent: Decider = { ...alice, principal: 'agent-support' };
    for (const decider of [requester, agent]) {
      expect(refusal(decide(pending(), approve(decider), before))).toBe('AUTHORIZATION_DENIED');
      expect(refusal(decide(pending(), reject(decider), before))).toBe('AUTHORIZATION_DENIED');
    }
    // Also when the requester is named as an approver.
    const namesRequester = { ...pending(), approvers: { roles: [], principals: ['user:bob@acme.example'] } };
    expect(refusal(decide(namesRequester, approve(requester), before))).toBe('AUTHORIZATION_DENIED');
  });

  it('refuses a decider who is neither named nor holds an approver role', () => {
    const dave: Decider = { principal: 'user:dave@acme.example', tenant: 'acme', workspaces: ['main'], roles: ['viewer'] };
    expect(refusal(decide(pending(), approve(dave), before))).toBe('AUTHORIZATION_DENIED');
  });

  it('refuses a decider of another tenant or workspace, even with the right role and name', () => {
    expect(refusal(decide(pending(), approve({ ...carol, tenant: 'globex', roles: ['approver'] }), before))).toBe('AUTHORIZATION_DENIED');
    expect(refusal(decide(pending(), approve({ ...alice, workspaces: ['ops'] }), before))).toBe('AUTHORIZATION_DENIED');
  });

  it('refuses a decision after expiry even before the sweeper marked it, from the deadline on', () => {
    expect(refusal(decide(pending(), approve(), after))).toBe('APPROVAL_EXPIRED');
    expect(refusal(decide(pending(), reject(), expiresAt))).toBe('APPROVAL_EXPIRED');
    expect(changed(decide(pending(), approve(), new Date(expiresAt.getTime() - 1))).changes.state).toBe('Granted');
  });

  it('refuses deciding an expired approval', () => {
    const expired = apply(pending(), { type: 'Expire' }, after);
    expect(refusal(decide(expired, approve(), before))).toBe('APPROVAL_EXPIRED');
  });

  it('decides once: another decision conflicts, the same human repeating the same decision changes nothing', () => {
    const granted = apply(pending(), approve(alice), before);
    expect(decide(granted, approve(alice), before)).toEqual({ kind: 'unchanged' });
    expect(refusal(decide(granted, approve(carol), before))).toBe('CONFLICT');
    expect(refusal(decide(granted, reject(alice), before))).toBe('CONFLICT');
    const rejected = apply(pending(), reject(alice), before);
    expect(decide(rejected, reject(alice, 'again'), before)).toEqual({ kind: 'unchanged' });
    expect(refusal(decide(rejected, approve(alice), before))).toBe('CONFLICT');
  });
});

describe('consuming an approval', () => {
  const granted = () => apply(pending(), approve(), before);

  it('uses a granted approval presented with its request hash and tool version, as ApprovalConsumed', () => {
    const decision = changed(decide(granted(), consume(), before));
    expect(decision.changes).toMatchObject({ state: 'Consumed', consumedAt: before.toISOString() });
    expect(ApprovalOutcomeEvent.parse(decision.event)).toMatchObject({ type: 'ApprovalConsumed', data: { requestHash: hashA } });
  });

  it('is single use: consuming again is a conflict', () => {
    const consumed = apply(granted(), consume(), before);
    expect(refusal(decide(consumed, consume(), before))).toBe('CONFLICT');
  });

  it('refuses a different request hash or tool version, in any state', () => {
    for (const approval of [pending(), granted(), apply(granted(), consume(), before)]) {
      expect(refusal(decide(approval, consume(hashB), before))).toBe('CONFLICT');
      expect(refusal(decide(approval, consume(hashA, '1.3.0'), before))).toBe('CONFLICT');
    }
  });

  it('refuses an undecided, rejected, expired or void approval with the fitting code', () => {
    expect(refusal(decide(pending(), consume(), before))).toBe('CONFLICT');
    expect(refusal(decide(pending(), consume(), after))).toBe('APPROVAL_EXPIRED');
    expect(refusal(decide(apply(pending(), reject(), before), consume(), before))).toBe('APPROVAL_REJECTED');
    expect(refusal(decide(apply(pending(), { type: 'Expire' }, after), consume(), after))).toBe('APPROVAL_EXPIRED');
    expect(refusal(decide(apply(granted(), { type: 'Void', reason: 'DefinitionChanged' }, before), consume(), before))).toBe('CONFLICT');
  });

  it('keeps a granted approval usable after the decision deadline (expiry bounds the decision, not the use)', () => {
    expect(changed(decide(granted(), consume(), after)).changes.state).toBe('Consumed');
  });
});

describe('expiry', () => {
  it('expires a pending approval once its deadline has passed, and not before', () => {
    expect(decide(pending(), { type: 'Expire' }, before)).toEqual({ kind: 'unchanged' });
    const decision = changed(decide(pending(), { type: 'Expire' }, expiresAt));
    expect(decision.changes.state).toBe('Expired');
    expect(ApprovalOutcomeEvent.parse(decision.event).type).toBe('ApprovalExpired');
  });

  it('leaves decided and already expired approvals alone', () => {
    const expired = apply(pending(), { type: 'Expire' }, after);
    expect(decide(expired, { type: 'Expire' }, after)).toEqual({ kind: 'unchanged' });
    expect(decide(apply(pending(), approve(), before), { type: 'Expire' }, after)).toEqual({ kind: 'unchanged' });
  });

  it('gives two sweepers expiring the same approval the same event id, so a duplicate is dropped', () => {
    const first = changed(decide(pending(), { type: 'Expire' }, after));
    const second = changed(decide(pending(), { type: 'Expire' }, new Date(after.getTime() + 5_000)));
    expect(first.event.metadata.eventId).toBe(second.event.metadata.eventId);
    expect(first.event.metadata.eventId).toBe(approvalEventId(requested.data.approvalId, 'ApprovalExpired'));
  });
});

describe('voiding', () => {
  it('voids a pending or granted approval when its tool version is suspended or retired', () => {
    for (const approval of [pending(), apply(pending(), approve(), before)]) {
      const decision = changed(decide(approval, { type: 'Void', reason: 'DefinitionChanged', causationId: 'evt-1' }, before));
      expect(decision.changes).toMatchObject({ state: 'Voided', voidReason: 'DefinitionChanged' });
      expect(ApprovalOutcomeEvent.parse(decision.event)).toMatchObject({ type: 'ApprovalVoided', data: { reason: 'DefinitionChanged' }, metadata: { causationId: 'evt-1' } });
    }
  });

  it('leaves used, rejected, expired and void approvals as they are', () => {
    const consumed = apply(apply(pending(), approve(), before), consume(), before);
    const rejected = apply(pending(), reject(), before);
    const expired = apply(pending(), { type: 'Expire' }, after);
    const voided = apply(pending(), { type: 'Void', reason: 'ToolRemoved' }, before);
    for (const approval of [consumed, rejected, expired, voided]) expect(decide(approval, { type: 'Void', reason: 'Unbound' }, before)).toEqual({ kind: 'unchanged' });
  });

  it('refuses deciding a void approval', () => {
    const voided = apply(pending(), { type: 'Void', reason: 'ServerRetired' }, before);
    expect(refusal(decide(voided, approve(), before))).toBe('CONFLICT');
    expect(refusal(decide(voided, reject(), before))).toBe('CONFLICT');
  });
});

describe('the outbox and event ids', () => {
  it('appends each transition’s event to the outbox in the same write', () => {
    const granted = apply(pending(), approve(), before);
    const consumed = evolve(granted, changed(decide(granted, consume(), before)));
    expect(consumed.outbox?.map((event) => event.type)).toEqual(['ApprovalGranted', 'ApprovalConsumed']);
    expect(consumed.version).toBe(3);
    expect(transitionFields({ ...granted, outbox: [] }, changed(decide(granted, consume(), before))).outbox).toHaveLength(1);
  });

  it('derives valid, stable, distinct UUIDs from names', () => {
    const id = nameBasedUuid('x');
    expect(Uuid.safeParse(id).success).toBe(true);
    expect(nameBasedUuid('x')).toBe(id);
    expect(approvalEventId('a', 'ApprovalGranted')).not.toBe(approvalEventId('a', 'ApprovalConsumed'));
    fc.assert(fc.property(fc.string(), (name) => Uuid.safeParse(nameBasedUuid(name)).success));
  });
});

describe('any sequence of commands', () => {
  const deciders = [alice, carol, { ...alice, principal: 'user:bob@acme.example' }, { ...carol, tenant: 'globex' }];
  const command = fc.oneof(
    fc.record({ type: fc.constant('Approve' as const), decider: fc.constantFrom(...deciders) }),
    fc.record({ type: fc.constant('Reject' as const), decider: fc.constantFrom(...deciders), reason: fc.constant('no') }),
    fc.record({ type: fc.constant('Consume' as const), requestHash: fc.constantFrom(hashA, hashB), toolVersion: fc.constantFrom('1.2.0', '1.3.0') }),
    fc.constant({ type: 'Expire' as const }),
    fc.record({ type: fc.constant('Void' as const), reason: fc.constant('DefinitionChanged' as const) }),
  );
  const allowed = new Set(['Pending>Granted', 'Pending>Rejected', 'Pending>Expired', 'Pending>Voided', 'Granted>Consumed', 'Granted>Voided']);

  it('moves only along the state machine, consumes at most once, and never emits an event type twice', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(command, fc.integer({ min: 0, max: 40 * 60_000 })), { maxLength: 12 }), (steps) => {
        let approval = pending();
        const emitted: string[] = [];
        for (const [step, offsetMs] of steps) {
          const decision = decide(approval, step, new Date(requestedAt.getTime() + offsetMs));
          if (decision.kind !== 'changed') continue;
          expect(allowed.has(`${approval.state}>${decision.changes.state}`)).toBe(true);
          if (step.type === 'Approve' || step.type === 'Reject') expect(step.decider.principal).not.toBe(approval.requestedBy);
          if (step.type === 'Consume') expect([step.requestHash, step.toolVersion]).toEqual([hashA, '1.2.0']);
          emitted.push(decision.event.type);
          approval = evolve(approval, decision);
        }
        expect(new Set(emitted).size).toBe(emitted.length);
        expect(emitted.filter((type) => type === 'ApprovalConsumed').length).toBeLessThanOrEqual(1);
      }),
    );
  });
});
