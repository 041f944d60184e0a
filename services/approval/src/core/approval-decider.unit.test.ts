import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Approval as ApprovalSchema, ApprovalOutcomeEvent, ApprovalStreamEvent, Uuid, hasErrorCode, type Approval, type ApprovalRequested, type ApprovalStreamEvent as StreamEvent } from '@toolplane/contracts';
import { foldEvents, handleCommand, inMemoryEventStore } from '@toolplane/event-store';
import { approvalDecider, decide, evolve, openingOf, type ApprovalAggregate, type ApprovalCommand, type DecidingHuman } from './approval-decider.js';
import { approvalEventId, nameBasedUuid } from './event-ids.js';

const requestedAt = new Date('2026-11-29T12:00:00.000Z');
const expiresAt = new Date('2026-11-29T12:15:00.000Z');
const before = new Date('2026-11-29T12:05:00.000Z');
const after = new Date('2026-11-29T12:20:00.000Z');
const hashA = 'a'.repeat(64);
const hashB = 'b'.repeat(64);
const scope = { tenant: 'acme', workspace: 'main' };
const approvalId = '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f';

const requested: ApprovalRequested = {
  type: 'ApprovalRequested',
  data: {
    approvalId,
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

const alice: DecidingHuman = { principal: 'user:alice@acme.example', tenant: 'acme', workspaces: ['main'], roles: ['approver'] };
const carol: DecidingHuman = { principal: 'user:carol@acme.example', tenant: 'acme', workspaces: ['main'], roles: [] };
const at = (now: Date) => ({ approvalId, scope, now });
const open = (event: ApprovalRequested = requested): ApprovalCommand => ({ type: 'OpenApproval', data: { opened: openingOf(event, scope, requestedAt) } });
const grant = (decider: DecidingHuman = alice, now = before, reason?: string): ApprovalCommand => ({ type: 'GrantApproval', data: { decider, reason }, metadata: at(now) });
const reject = (decider: DecidingHuman = alice, now = before, reason = 'not during the freeze'): ApprovalCommand => ({ type: 'RejectApproval', data: { decider, reason }, metadata: at(now) });
const consume = (requestHash = hashA, toolVersion = '1.2.0', now = before): ApprovalCommand => ({ type: 'ConsumeApproval', data: { requestHash, toolVersion }, metadata: at(now) });
const expire = (now = after): ApprovalCommand => ({ type: 'ExpireApproval', metadata: at(now) });
const voidIt = (reason: 'DefinitionChanged' | 'ToolRemoved' | 'Unbound' | 'ServerRetired' = 'DefinitionChanged', causationId?: string): ApprovalCommand => ({
  type: 'VoidApproval',
  data: { reason, causationId },
  metadata: at(before),
});

/** The approval after the commands, each decided against the state the previous ones left. */
function decided(state: ApprovalAggregate, ...commands: ApprovalCommand[]): Approval {
  const folded = commands.reduce((current, command) => decide(command, current).reduce(evolve, current), state);
  if (folded === null) throw new Error('no approval');
  return folded;
}
const pending = () => decided(null, open());
const granted = () => decided(pending(), grant());

function refusal(command: ApprovalCommand, state: ApprovalAggregate): string {
  try {
    decide(command, state);
  } catch (error) {
    if (hasErrorCode(error)) return error.code;
    throw error;
  }
  throw new Error(`expected ${command.type} to be refused`);
}

function only(events: StreamEvent[]): StreamEvent {
  expect(events).toHaveLength(1);
  const [event] = events;
  if (event === undefined) throw new Error('no event');
  expect(ApprovalStreamEvent.parse(event)).toEqual(event);
  return event;
}

describe('opening an approval', () => {
  it('opens a pending approval bound to the request hash and exact tool version, in the subject’s scope', () => {
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
      updatedAt: requestedAt.toISOString(),
    });
    expect(only(decide(open(), null))).toMatchObject({ type: 'ApprovalOpened', metadata: { causationId: requested.metadata.eventId } });
  });

  it('normalises instants so that stored ones compare as strings', () => {
    expect(openingOf({ ...requested, data: { ...requested.data, expiresAt: '2026-11-29T12:15:00Z' } }, scope, requestedAt).data.expiresAt).toBe('2026-11-29T12:15:00.000Z');
  });

  it('refuses an event whose scope differs from its subject’s, and one without a tool version', () => {
    expect(() => openingOf(requested, { tenant: 'globex', workspace: 'main' }, requestedAt)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    const { toolVersion: _toolVersion, ...metadata } = requested.metadata;
    expect(() => openingOf({ ...requested, metadata }, scope, requestedAt)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('opens once per id: a repeated request changes nothing, and a different request hash under the same id is not a new binding', () => {
    expect(decide(open(), pending())).toEqual([]);
    expect(decide(open(), granted())).toEqual([]);
    const otherHash = open({ ...requested, data: { ...requested.data, requestHash: hashB } });
    expect(decide(otherHash, pending())).toEqual([]);
    // A different hash needs a new approval: this one stays bound to the first hash.
    expect(refusal(consume(hashB), granted())).toBe('CONFLICT');
  });

  it('knows no approval before it was opened, nor in another scope', () => {
    expect(refusal(grant(), null)).toBe('NOT_FOUND');
    expect(refusal(consume(), null)).toBe('NOT_FOUND');
    expect(refusal(expire(), null)).toBe('NOT_FOUND');
    expect(refusal({ type: 'GrantApproval', data: { decider: alice }, metadata: { approvalId, scope: { tenant: 'acme', workspace: 'ops' }, now: before } }, pending())).toBe('NOT_FOUND');
    expect(refusal({ type: 'ConsumeApproval', data: { requestHash: hashA, toolVersion: '1.2.0' }, metadata: { approvalId, scope: { tenant: 'globex', workspace: 'main' }, now: before } }, granted())).toBe('NOT_FOUND');
  });
});

describe('deciding an approval', () => {
  it('grants for a holder of an approver role, with a valid ApprovalGranted event', () => {
    const event = only(decide(grant(alice, before, 'looks right'), pending()));
    expect(ApprovalOutcomeEvent.parse(event)).toEqual(event);
    expect(event).toMatchObject({
      type: 'ApprovalGranted',
      data: { approvalId, requestHash: hashA, decidedBy: alice.principal, reason: 'looks right' },
      metadata: { eventId: approvalEventId(approvalId, 'ApprovalGranted'), tenant: 'acme', workspace: 'main', actor: alice.principal, toolVersion: '1.2.0', invocationId: requested.metadata.invocationId },
    });
    expect(decided(pending(), grant(alice, before, 'looks right'))).toMatchObject({ state: 'Granted', decidedBy: alice.principal, decidedAt: before.toISOString(), reason: 'looks right', version: 2 });
  });

  it('grants for a principal named in the approvers list without any role', () => {
    expect(decided(pending(), grant(carol)).state).toBe('Granted');
  });

  it('rejects with the reason, as ApprovalRejected', () => {
    expect(only(decide(reject(), pending()))).toMatchObject({ type: 'ApprovalRejected', data: { reason: 'not during the freeze', decidedBy: alice.principal } });
    expect(decided(pending(), reject())).toMatchObject({ state: 'Rejected', reason: 'not during the freeze' });
  });

  it('refuses self-approval by the requesting principal or agent, whatever their roles', () => {
    const requester: DecidingHuman = { ...alice, principal: 'user:bob@acme.example' };
    const agent: DecidingHuman = { ...alice, principal: 'agent-support' };
    for (const decider of [requester, agent]) {
      expect(refusal(grant(decider), pending())).toBe('AUTHORIZATION_DENIED');
      expect(refusal(reject(decider), pending())).toBe('AUTHORIZATION_DENIED');
    }
    // Also when the requester is named as an approver.
    expect(refusal(grant(requester), { ...pending(), approvers: { roles: [], principals: ['user:bob@acme.example'] } })).toBe('AUTHORIZATION_DENIED');
  });

  it('refuses a decider who is neither named nor holds an approver role (the wrong role)', () => {
    expect(refusal(grant({ principal: 'user:dave@acme.example', tenant: 'acme', workspaces: ['main'], roles: ['viewer'] }), pending())).toBe('AUTHORIZATION_DENIED');
  });

  it('refuses a decider of another tenant or workspace, even with the right role and name', () => {
    expect(refusal(grant({ ...carol, tenant: 'globex', roles: ['approver'] }), pending())).toBe('AUTHORIZATION_DENIED');
    expect(refusal(grant({ ...alice, workspaces: ['ops'] }), pending())).toBe('AUTHORIZATION_DENIED');
  });

  it('refuses a decision after expiry even before the sweeper marked it, from the deadline on', () => {
    expect(refusal(grant(alice, after), pending())).toBe('APPROVAL_EXPIRED');
    expect(refusal(reject(alice, expiresAt), pending())).toBe('APPROVAL_EXPIRED');
    expect(decided(pending(), grant(alice, new Date(expiresAt.getTime() - 1))).state).toBe('Granted');
  });

  it('refuses deciding an expired approval', () => {
    expect(refusal(grant(), decided(pending(), expire()))).toBe('APPROVAL_EXPIRED');
  });

  it('decides once: another decision conflicts, the same human repeating the same decision changes nothing', () => {
    expect(decide(grant(alice), granted())).toEqual([]);
    expect(refusal(grant(carol), granted())).toBe('CONFLICT');
    expect(refusal(reject(alice), granted())).toBe('CONFLICT');
    const rejected = decided(pending(), reject(alice));
    expect(decide(reject(alice, before, 'again'), rejected)).toEqual([]);
    expect(refusal(grant(alice), rejected)).toBe('CONFLICT');
  });
});

describe('consuming an approval', () => {
  it('uses a granted approval presented with its request hash and tool version, as ApprovalConsumed', () => {
    expect(only(decide(consume(), granted()))).toMatchObject({ type: 'ApprovalConsumed', data: { requestHash: hashA }, metadata: { eventId: approvalEventId(approvalId, 'ApprovalConsumed') } });
    expect(decided(granted(), consume())).toMatchObject({ state: 'Consumed', consumedAt: before.toISOString(), version: 3 });
  });

  it('is single use: consuming twice is refused', () => {
    expect(refusal(consume(), decided(granted(), consume()))).toBe('CONFLICT');
  });

  it('refuses a different request hash or tool version, in any state', () => {
    for (const approval of [pending(), granted(), decided(granted(), consume())]) {
      expect(refusal(consume(hashB), approval)).toBe('CONFLICT');
      expect(refusal(consume(hashA, '1.3.0'), approval)).toBe('CONFLICT');
    }
  });

  it('refuses an undecided, rejected, expired or void approval with the fitting code', () => {
    expect(refusal(consume(), pending())).toBe('CONFLICT');
    expect(refusal(consume(hashA, '1.2.0', after), pending())).toBe('APPROVAL_EXPIRED');
    expect(refusal(consume(), decided(pending(), reject()))).toBe('APPROVAL_REJECTED');
    expect(refusal(consume(hashA, '1.2.0', after), decided(pending(), expire()))).toBe('APPROVAL_EXPIRED');
    expect(refusal(consume(), decided(granted(), voidIt()))).toBe('CONFLICT');
  });

  it('keeps a granted approval usable after the decision deadline (expiry bounds the decision, not the use)', () => {
    expect(decided(granted(), consume(hashA, '1.2.0', after)).state).toBe('Consumed');
  });
});

describe('expiry', () => {
  it('expires a pending approval once its deadline has passed, and not before', () => {
    expect(decide(expire(before), pending())).toEqual([]);
    expect(only(decide(expire(expiresAt), pending())).type).toBe('ApprovalExpired');
    expect(decided(pending(), expire()).state).toBe('Expired');
  });

  it('leaves decided and already expired approvals alone', () => {
    expect(decide(expire(), decided(pending(), expire()))).toEqual([]);
    expect(decide(expire(), granted())).toEqual([]);
  });

  it('gives two sweepers expiring the same approval the same event id, so a republished event is dropped', () => {
    const first = only(decide(expire(after), pending()));
    const second = only(decide(expire(new Date(after.getTime() + 5_000)), pending()));
    expect(first.type === 'ApprovalOpened' ? undefined : first.metadata.eventId).toBe(approvalEventId(approvalId, 'ApprovalExpired'));
    expect(second.type === 'ApprovalOpened' ? undefined : second.metadata.eventId).toBe(approvalEventId(approvalId, 'ApprovalExpired'));
  });
});

describe('voiding on definition drift', () => {
  it('voids a pending or granted approval when its tool version is suspended or retired, naming the cause', () => {
    for (const approval of [pending(), granted()]) {
      expect(only(decide(voidIt('DefinitionChanged', 'evt-1'), approval))).toMatchObject({ type: 'ApprovalVoided', data: { reason: 'DefinitionChanged' }, metadata: { causationId: 'evt-1' } });
      expect(decided(approval, voidIt('DefinitionChanged'))).toMatchObject({ state: 'Voided', voidReason: 'DefinitionChanged' });
    }
  });

  it('leaves used, rejected, expired and void approvals as they are', () => {
    for (const approval of [decided(granted(), consume()), decided(pending(), reject()), decided(pending(), expire()), decided(pending(), voidIt('ToolRemoved'))]) {
      expect(decide(voidIt('Unbound'), approval)).toEqual([]);
    }
  });

  it('refuses deciding or consuming a void approval', () => {
    const voided = decided(pending(), voidIt('ServerRetired'));
    expect(refusal(grant(), voided)).toBe('CONFLICT');
    expect(refusal(reject(), voided)).toBe('CONFLICT');
  });
});

describe('the Approval aggregate on the write path', () => {
  it('replaying the stored events gives the state the commands produced', async () => {
    const store = inMemoryEventStore<StreamEvent>();
    let last: ApprovalAggregate = null;
    for (const command of [open(), grant(alice, before, 'ok'), consume()]) last = (await handleCommand(store, approvalDecider, approvalId, command)).newState;
    const { events } = await store.readStream(approvalId);
    expect(events.map((event) => event.type)).toEqual(['ApprovalOpened', 'ApprovalGranted', 'ApprovalConsumed']);
    expect(foldEvents(approvalDecider, events)).toEqual(last);
    expect(last).toMatchObject({ state: 'Consumed', version: 3 });
  });

  it('a refused command appends nothing, and neither does a repeated one', async () => {
    const store = inMemoryEventStore<StreamEvent>();
    await handleCommand(store, approvalDecider, approvalId, open());
    const { version } = await store.readStream(approvalId);
    await expect(handleCommand(store, approvalDecider, approvalId, grant({ ...alice, principal: 'user:bob@acme.example' }))).rejects.toMatchObject({ code: 'AUTHORIZATION_DENIED' });
    await expect(handleCommand(store, approvalDecider, approvalId, consume())).rejects.toMatchObject({ code: 'CONFLICT' });
    await handleCommand(store, approvalDecider, approvalId, open());
    expect(await store.readStream(approvalId)).toMatchObject({ version, events: [{ type: 'ApprovalOpened' }] });
  });

  it('of racing consumers of a granted approval exactly one wins, the others are refused', async () => {
    const store = inMemoryEventStore<StreamEvent>();
    await handleCommand(store, approvalDecider, approvalId, open());
    await handleCommand(store, approvalDecider, approvalId, grant());
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => handleCommand(store, approvalDecider, approvalId, consume())));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((result) => result.status === 'rejected').map((result) => (result.reason as { code: string }).code)).toEqual(Array(5).fill('CONFLICT'));
    expect((await store.readStream(approvalId)).events.filter((event) => event.type === 'ApprovalConsumed')).toHaveLength(1);
  });
});

describe('event ids', () => {
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
  const step = fc.tuple(fc.integer({ min: 0, max: 4 }), fc.constantFrom(...deciders), fc.constantFrom(hashA, hashB), fc.constantFrom('1.2.0', '1.3.0'), fc.integer({ min: 0, max: 40 * 60_000 }));
  const commandOf = ([kind, decider, hash, version, offsetMs]: [number, DecidingHuman, string, string, number]): ApprovalCommand => {
    const now = new Date(requestedAt.getTime() + offsetMs);
    return [grant(decider, now), reject(decider, now), consume(hash, version, now), expire(now), voidIt()][kind] ?? expire(now);
  };
  const allowed = new Set(['Pending>Granted', 'Pending>Rejected', 'Pending>Expired', 'Pending>Voided', 'Granted>Consumed', 'Granted>Voided']);

  it('moves only along the state machine, consumes at most once, and never records an event type twice', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 12 }), (steps) => {
        let approval: Approval = pending();
        const recorded: string[] = [];
        for (const raw of steps) {
          const command = commandOf(raw);
          let events: StreamEvent[];
          try {
            events = decide(command, approval);
          } catch {
            continue;
          }
          const next = decided(approval, command);
          if (events.length === 0) {
            expect(next).toEqual(approval);
            continue;
          }
          expect(allowed.has(`${approval.state}>${next.state}`)).toBe(true);
          if (command.type === 'GrantApproval' || command.type === 'RejectApproval') expect(command.data.decider.principal).not.toBe(approval.requestedBy);
          if (command.type === 'ConsumeApproval') expect([command.data.requestHash, command.data.toolVersion]).toEqual([hashA, '1.2.0']);
          recorded.push(...events.map((event) => event.type));
          approval = next;
        }
        expect(new Set(recorded).size).toBe(recorded.length);
        expect(recorded.filter((type) => type === 'ApprovalConsumed').length).toBeLessThanOrEqual(1);
      }),
    );
  });
});
