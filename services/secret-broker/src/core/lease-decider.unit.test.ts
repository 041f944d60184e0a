import { describe, expect, it } from 'vitest';
import { LeaseEvent, type Connection, type SecretLeaseRequest } from '@toolplane/contracts';
import { foldEvents, handleCommand, inMemoryEventStore } from '@toolplane/event-store';
import { planNewConnection } from './connection-rules.js';
import { decideLeaseCommand, leaseDecider, type LeaseCommand } from './lease-decider.js';
import type { LeaseFacts } from './lease-rules.js';

const scope = { tenant: 'acme', workspace: 'main' };
const now = new Date('2026-11-29T17:00:00.000Z');
const connectionId = '5b0d6f38-6f0e-4c43-8e36-2d9a1f0f9a11';
const leaseId = '1f6b9a52-5f3c-4f52-9d3e-0c8f6a7b2e10';
const request: SecretLeaseRequest = { invocationId: '7d0c5a9e-1f0b-4c3e-9a57-1c2d3e4f5a6b', toolId: 'github.create_issue', connectionRef: 'github', recipientKeyId: 'tool-adapter' };
const connection: Connection = {
  ...planNewConnection(scope, { name: 'github', allowedTools: ['github.create_issue'], credential: { kind: 'bearer', token: 'tp-canary' } }, { connectionId, now }, { allowHttpTokenEndpoints: false }),
  secret: { v: 1, alg: 'A256GCM-KEK-A256GCM', kekId: 'k1', wrappedKey: 'A'.repeat(80), iv: 'A'.repeat(16), ciphertext: 'AAAA', tag: 'A'.repeat(22) },
};
const facts = (overrides: Partial<LeaseFacts> = {}): LeaseFacts => ({ scope, request, connection, recipientKnown: true, now, maxTtlMs: 300_000, ...overrides });
const grant = (overrides: Partial<LeaseFacts> = {}, tokenExpiresAt?: Date): LeaseCommand => ({ type: 'GrantLease', facts: facts(overrides), leaseId, connectionVersion: 1, ...(tokenExpiresAt === undefined ? {} : { tokenExpiresAt }) });
const at = (ms: number) => new Date(now.getTime() + ms);
const refusal = (work: () => unknown) => {
  try {
    work();
  } catch (error) {
    return error as { code: string };
  }
  throw new Error('expected a refusal');
};
const fold = (events: readonly LeaseEvent[]) => foldEvents(leaseDecider, events);

describe('the lease decider', () => {
  it('grants an allowed tool one lease, recorded without any value, ending no later than its access token', () => {
    const events = decideLeaseCommand(grant({}, at(60_000)), { lease: null });
    expect(events).toHaveLength(1);
    expect(LeaseEvent.parse(events[0])).toEqual(events[0]);
    expect(fold(events).lease).toMatchObject({ leaseId, state: 'Active', toolId: 'github.create_issue', leasedTo: 'svc:tool-adapter', secretGeneration: 1, expiresAt: at(60_000).toISOString(), version: 1 });
    expect(JSON.stringify(events)).not.toContain('tp-canary');
    expect(JSON.stringify(events)).not.toContain('ciphertext');
  });

  it('denies a tool off the allow-list, an unknown recipient and a missing connection, deciding no event', () => {
    expect(refusal(() => decideLeaseCommand(grant({ request: { ...request, toolId: 'github.delete_repo' } }), { lease: null })).code).toBe('AUTHORIZATION_DENIED');
    expect(refusal(() => decideLeaseCommand(grant({ recipientKnown: false }), { lease: null })).code).toBe('AUTHORIZATION_DENIED');
    expect(refusal(() => decideLeaseCommand(grant({ connection: null }), { lease: null })).code).toBe('NOT_FOUND');
  });

  it('leases nothing from a revoked connection, not even to an invocation that held a lease on it', () => {
    const revoked: Connection = { ...connection, state: 'Revoked' };
    expect(refusal(() => decideLeaseCommand(grant({ connection: revoked }), { lease: null })).code).toBe('AUTHORIZATION_DENIED');
    const held = fold(decideLeaseCommand(grant(), { lease: null }));
    expect(refusal(() => decideLeaseCommand(grant({ connection: revoked }), held)).code).toBe('AUTHORIZATION_DENIED');
  });

  it('gives a repeated request with the same invocation the same lease (no new event), and CONFLICT once it ended or changed', () => {
    const held = fold(decideLeaseCommand(grant(), { lease: null }));
    expect(decideLeaseCommand(grant({ now: at(1000) }), held)).toEqual([]);
    expect(refusal(() => decideLeaseCommand(grant({ request: { ...request, toolId: 'github.list_issues' }, connection: { ...connection, allowedTools: ['github.create_issue', 'github.list_issues'] } }), held)).code).toBe('CONFLICT');
    expect(refusal(() => decideLeaseCommand(grant({ connection: { ...connection, secretGeneration: 2 } }), held)).code).toBe('CONFLICT');
    expect(refusal(() => decideLeaseCommand(grant({ now: at(300_000) }), held)).code).toBe('CONFLICT');
  });

  it('expires an active lease once its time is up, once; withdraws an active one once', () => {
    const held = fold(decideLeaseCommand(grant({ request: { ...request, ttlMs: 1000 } }), { lease: null }));
    expect(decideLeaseCommand({ type: 'ExpireLease', now: at(999) }, held)).toEqual([]);
    const expired = decideLeaseCommand({ type: 'ExpireLease', now: at(1000) }, held);
    expect(expired).toEqual([{ type: 'LeaseEnded', data: { leaseId, state: 'Expired', endedAt: at(1000).toISOString() } }]);
    const after = expired.reduce((state, event) => leaseDecider.evolve(state, event), held);
    expect(after.lease).toMatchObject({ state: 'Expired', version: 2, endedAt: at(1000).toISOString() });
    expect(decideLeaseCommand({ type: 'ExpireLease', now: at(5000) }, after)).toEqual([]);
    expect(decideLeaseCommand({ type: 'WithdrawLease', now: at(5000) }, after)).toEqual([]);
    expect(decideLeaseCommand({ type: 'WithdrawLease', now: at(10) }, held)[0]).toMatchObject({ data: { state: 'Revoked' } });
    expect(decideLeaseCommand({ type: 'ExpireLease', now: at(10) }, { lease: null })).toEqual([]);
  });

  it('through the command handler: racing grants store one lease, replaying gives the state, a refusal appends nothing', async () => {
    const store = inMemoryEventStore<LeaseEvent>();
    const results = await Promise.all(Array.from({ length: 5 }, () => handleCommand(store, leaseDecider, leaseId, grant())));
    expect(new Set(results.map((result) => result.newState.lease?.leaseId))).toEqual(new Set([leaseId]));
    await expect(handleCommand(store, leaseDecider, leaseId, grant({ request: { ...request, toolId: 'other.tool' } }))).rejects.toMatchObject({ code: 'AUTHORIZATION_DENIED' });
    const stored = await store.readStream(leaseId);
    expect(stored.events.map((event) => event.type)).toEqual(['LeaseGranted']);
    expect(fold(stored.events)).toEqual(results[0]?.newState);
  });
});
