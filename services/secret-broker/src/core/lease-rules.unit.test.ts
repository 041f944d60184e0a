import { describe, expect, it } from 'vitest';
import { LifecycleEvent, ToolplaneError, type Connection, type SecretLease, type SecretLeaseRequest } from '@toolplane/contracts';
import { planNewConnection } from './connection-rules.js';
import { checkExistingLease, decideLease, deniedEvent, leasedCredential, leasedEvent, leaseExpiry, leaseOutdatedBy, newLease, type LeaseFacts } from './lease-rules.js';

const scope = { tenant: 'acme', workspace: 'main' };
const now = new Date('2026-11-29T17:00:00.000Z');
const connectionId = '5b0d6f38-6f0e-4c43-8e36-2d9a1f0f9a11';
const leaseId = '1f6b9a52-5f3c-4f52-9d3e-0c8f6a7b2e10';
const request: SecretLeaseRequest = {
  invocationId: '7d0c5a9e-1f0b-4c3e-9a57-1c2d3e4f5a6b',
  toolId: 'github.create_issue',
  connectionRef: 'github',
  recipientKeyId: 'tool-adapter',
  correlationId: 'corr-1',
};
const connection: Connection = {
  ...planNewConnection(scope, { name: 'github', allowedTools: ['github.create_issue'], credential: { kind: 'bearer', token: 'tp-canary' } }, { connectionId, now }, { allowHttpTokenEndpoints: false }),
  secret: { v: 1, alg: 'A256GCM-KEK-A256GCM', kekId: 'k1', wrappedKey: 'A'.repeat(80), iv: 'A'.repeat(16), ciphertext: 'AAAA', tag: 'A'.repeat(22) },
};
const facts = (overrides: Partial<LeaseFacts> = {}): LeaseFacts => ({ scope, request, connection, recipientKnown: true, now, maxTtlMs: 300_000, ...overrides });
const denial = (overrides: Partial<LeaseFacts>) => {
  const decision = decideLease(facts(overrides));
  if (decision.granted) throw new Error('granted');
  return decision.error;
};
const lease: SecretLease = newLease({ scope, request, connection }, { leaseId, now, expiresAt: new Date(now.getTime() + 300_000), leasedTo: 'svc:tool-adapter' });

describe('decideLease', () => {
  it('grants an allowed tool of the scope a lease of the maximum length to the recipient service', () => {
    const decision = decideLease(facts());
    expect(decision).toMatchObject({ granted: true, leasedTo: 'svc:tool-adapter', expiresAt: new Date('2026-11-29T17:05:00.000Z') });
  });

  it('grants a shorter lease when asked, never a longer one', () => {
    expect(decideLease(facts({ request: { ...request, ttlMs: 1000 } }))).toMatchObject({ expiresAt: new Date(now.getTime() + 1000) });
    expect(decideLease(facts({ request: { ...request, ttlMs: 3_600_000 } }))).toMatchObject({ expiresAt: new Date(now.getTime() + 300_000) });
  });

  it('refuses a tool not on the allow-list with AUTHORIZATION_DENIED', () => {
    const error = denial({ request: { ...request, toolId: 'github.delete_repo' } });
    expect(error.code).toBe('AUTHORIZATION_DENIED');
    expect(error.message).toContain('github.delete_repo');
  });

  it('answers NOT_FOUND for a missing connection and for one of another tenant or workspace alike', () => {
    const missing = denial({ connection: null });
    const otherTenant = denial({ scope: { tenant: 'globex', workspace: 'main' } });
    const otherWorkspace = denial({ scope: { tenant: 'acme', workspace: 'dev' } });
    for (const error of [missing, otherTenant, otherWorkspace]) expect(error.code).toBe('NOT_FOUND');
    expect(otherTenant.message).toBe(missing.message);
  });

  it('refuses a revoked connection with AUTHORIZATION_DENIED', () => {
    expect(denial({ connection: { ...connection, state: 'Revoked' } }).code).toBe('AUTHORIZATION_DENIED');
  });

  it('refuses an unknown recipient before looking at the connection, so nothing about it is revealed', () => {
    const known = denial({ recipientKnown: false });
    const unknownConnection = denial({ recipientKnown: false, connection: null });
    expect(known.code).toBe('AUTHORIZATION_DENIED');
    expect(unknownConnection).toEqual(known);
  });

  it('refuses an active connection without a stored secret as INTERNAL', () => {
    const { secret: _secret, ...withoutSecret } = connection;
    expect(denial({ connection: withoutSecret }).code).toBe('INTERNAL');
  });
});

describe('leases', () => {
  it('end no later than the access token they carry', () => {
    const lease = new Date('2026-11-29T17:05:00.000Z');
    expect(leaseExpiry(lease, new Date('2026-11-29T17:01:00.000Z'))).toEqual(new Date('2026-11-29T17:01:00.000Z'));
    expect(leaseExpiry(lease, new Date('2026-11-29T18:00:00.000Z'))).toEqual(lease);
    expect(leaseExpiry(lease, undefined)).toEqual(lease);
  });

  it('record who, what, when and until when, but no value', () => {
    expect(lease).toMatchObject({ leaseId, connectionId, connectionRef: 'github', invocationId: request.invocationId, toolId: request.toolId, leasedTo: 'svc:tool-adapter', state: 'Active', secretGeneration: 1, version: 1 });
    expect(JSON.stringify(lease)).not.toContain('tp-canary');
  });

  it('may be handed out again to the same invocation, tool and recipient while active', () => {
    expect(checkExistingLease(lease, request, connection, now)).toBeUndefined();
  });

  it.each([
    ['expired', { ...lease, state: 'Expired' as const }, connection, now],
    ['past its expiry but not yet swept', lease, connection, new Date(now.getTime() + 300_000)],
    ['for another tool', { ...lease, toolId: 'github.other' }, connection, now],
    ['for another recipient', { ...lease, recipientKeyId: 'audit' }, connection, now],
    ['of an older credential', lease, { ...connection, secretGeneration: 2 }, now],
  ])('are not handed out again when %s (CONFLICT)', (_label, existing, current, at) => {
    expect(checkExistingLease(existing, request, current, at)?.code).toBe('CONFLICT');
  });

  it('are withdrawn when the connection was revoked or rotated while they were granted', () => {
    expect(leaseOutdatedBy(lease, connection)).toBeUndefined();
    expect(leaseOutdatedBy(lease, { ...connection, state: 'Revoked' })?.code).toBe('AUTHORIZATION_DENIED');
    expect(leaseOutdatedBy(lease, null)?.code).toBe('AUTHORIZATION_DENIED');
    expect(leaseOutdatedBy(lease, { ...connection, secretGeneration: 2 })?.code).toBe('CONFLICT');
  });
});

describe('leasedCredential', () => {
  it('hands over the credential of each kind, and for oauth2 the access token instead of the client secret', () => {
    expect(leasedCredential({ kind: 'api-key', apiKey: 'k' })).toEqual({ kind: 'api-key', apiKey: 'k' });
    expect(leasedCredential({ kind: 'basic', username: 'u', password: 'p' })).toEqual({ kind: 'basic', username: 'u', password: 'p' });
    const credential = { kind: 'oauth2-client-credentials' as const, tokenEndpoint: 'https://a.example/t', clientId: 'c', clientSecret: 'tp-canary-cs', scopes: [] };
    const leased = leasedCredential(credential, { accessToken: 'at', expiresAt: now, scopes: ['read'] });
    expect(leased).toEqual({ kind: 'oauth2-client-credentials', accessToken: 'at', tokenType: 'Bearer', expiresAt: now.toISOString(), scopes: ['read'] });
    expect(JSON.stringify(leased)).not.toContain('tp-canary-cs');
    expect(() => leasedCredential(credential)).toThrow(ToolplaneError);
  });
});

describe('events', () => {
  it('SecretLeased carries ids and times only and satisfies its contract', () => {
    const event = leasedEvent(lease, '0b7e3f0a-5a8f-4d7e-8c11-9f0e1d2c3b4a', now);
    expect(LifecycleEvent.parse(event)).toEqual(event);
    expect(event.metadata).toMatchObject({ tenant: 'acme', workspace: 'main', actor: 'svc:tool-adapter', correlationId: 'corr-1' });
  });

  it('SecretLeaseDenied keeps the failure code and message and satisfies its contract', () => {
    const event = deniedEvent(scope, request, new ToolplaneError('AUTHORIZATION_DENIED', 'no'), '0b7e3f0a-5a8f-4d7e-8c11-9f0e1d2c3b4a', now);
    expect(LifecycleEvent.parse(event)).toEqual(event);
    expect(event.data.failure).toEqual({ code: 'AUTHORIZATION_DENIED', message: 'no', retryable: false });
    const unexpected = deniedEvent(scope, request, new Error('tp-canary inside an unexpected error'), '0b7e3f0a-5a8f-4d7e-8c11-9f0e1d2c3b4a', now);
    expect(unexpected.data.failure).toEqual({ code: 'INTERNAL', message: 'internal error', retryable: false });
  });
});
