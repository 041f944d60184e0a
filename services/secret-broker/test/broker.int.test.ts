import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { generateSigningKeyPair, issueToken } from '@toolplane/auth';
import { CachedAccessToken, POLICY_ADMIN_ROLE, secretBrokerTokenBucket, type CredentialInput, type Scope, type SecretLease } from '@toolplane/contracts';
import { connectMessaging, openKv, type Messaging } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { connectStore, type Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { leaseIdOf } from '../src/core/aggregate-ids.js';
import { leaseEventStore, streamIdOf } from '../src/event-stores.js';
import { secretBrokerService } from '../src/mod.js';
import {
  brokerEnv,
  brokerKeys,
  call,
  callRaw,
  connectionRecord,
  eventually,
  leaseRequest,
  openLease,
  operatorKey,
  operatorToken,
  recordCounts,
  recordEvents,
  rejection,
  testOperator,
  type EventRecorder,
} from './harness.js';
import { startTokenEndpoint, type TokenEndpoint } from './token-endpoint.js';

// Two replicas of the broker, started in-process, share one NATS queue group, the private stream and one database;
// every request below may land on either of them. The record is the private stream; the collections are read models
// the projector folds it into, so what a test reads from them it awaits.

const scope = testScope('secretbroker');
const keys = brokerKeys();
const main: Scope = { tenant: scope.prefix, workspace: 'main' };
const otherWorkspace: Scope = { tenant: scope.prefix, workspace: 'other' };
const otherTenant: Scope = { tenant: `${scope.prefix}_x`, workspace: 'main' };
const canary = () => `tp-canary-${randomBytes(8).toString('hex')}`;

let replicas: RunningService[] = [];
let m: Messaging;
let store: Store;
let events: EventRecorder;
let tokens: TokenEndpoint;

const leaseDocs = () => store.db.collection<SecretLease>('secret_leases').find({ tenant: main.tenant }).toArray();
const connectionDoc = (name: string, where: Scope = main) => store.db.collection('connections').findOne({ tenant: where.tenant, workspace: where.workspace, name });
/** The read model's document of a connection once it shows `version` (the projector has caught up with it). */
const projectedConnection = (name: string, version: number, where: Scope = main) => eventually(() => connectionDoc(name, where), (doc) => doc?.['version'] === version);
/** The read model's lease once the projector has folded it (and, if given, its end). */
const projectedLease = (leaseId: string, state: SecretLease['state'] = 'Active') =>
  eventually(async () => (await leaseDocs()).find((doc) => doc.leaseId === leaseId), (doc) => doc?.state === state);
const lastSecret = async (name: string) => (await connectionRecord(m, main, name)).at(-1)?.data.connection.secret;

beforeAll(async () => {
  tokens = await startTokenEndpoint(
    { 'long-lived': { secret: 'cs-long', expiresIn: 3600 }, 'short-lived': { secret: 'cs-short', expiresIn: 30 }, 'no-expiry': { secret: 'cs-none' } },
    'tp-canary-access',
  );
  const env = brokerEnv(scope, keys, { SECRET_BROKER_TOKEN_REFRESH_MARGIN_MS: '60000' });
  replicas = [await startService(secretBrokerService, { ...env, INSTANCE_ID: 'a' }), await startService(secretBrokerService, { ...env, INSTANCE_ID: 'b' })];
  m = await connectMessaging({ url: scope.natsUrl, name: 'secret-broker-test' });
  store = await connectStore({ url: scope.mongoUrl, dbName: scope.dbName, appName: 'secret-broker-test' });
  events = await recordEvents(m, main.tenant);
});

afterAll(async () => {
  events.stop();
  await Promise.all(replicas.map((replica) => replica.stop()));
  await m.drain();
  await store.close();
  await tokens.close();
});

describe('connections', () => {
  it('creates a connection whose secret is stored only encrypted and never returned by any read', async () => {
    const secret = canary();
    // The body's actor is ignored: the operator token's principal is recorded.
    const view = await call(m, main, 'createConnection', { name: 'github', allowedTools: ['github.create_issue'], credential: { kind: 'bearer', token: secret }, actor: 'user:mallory' });
    expect(view).toMatchObject({ name: 'github', kind: 'bearer', state: 'Active', secretGeneration: 1, kekId: 'k1', createdBy: testOperator, allowedTools: ['github.create_issue'] });

    // The record holds the credential encrypted only; the read model holds no secret material at all.
    const record = await connectionRecord(m, main, 'github');
    expect(record.map((event) => event.type)).toEqual(['ConnectionCreated']);
    expect(record[0]?.data.connection.secret).toMatchObject({ v: 1, kekId: 'k1' });
    const stored = await projectedConnection('github', 1);
    expect(stored).toMatchObject({ kekId: 'k1', name: 'github' });
    expect(stored).not.toHaveProperty('secret');
    expect(JSON.stringify(stored)).not.toContain(record[0]?.data.connection.secret?.ciphertext ?? 'none');
    for (const raw of [JSON.stringify(record), JSON.stringify(stored)]) {
      for (const form of [secret, Buffer.from(secret).toString('base64'), Buffer.from(secret).toString('base64url')]) expect(raw).not.toContain(form);
    }

    const shown = await call(m, main, 'showConnection', { connectionRef: 'github' });
    const byId = await call(m, main, 'showConnection', { connectionRef: view.connectionId });
    const listed = await eventually(() => call(m, main, 'listConnections', {}), (page) => page.items.some((item) => item.name === 'github'));
    expect(byId).toEqual(shown);
    expect(listed.items.map((item) => item.name)).toContain('github');
    expect(JSON.stringify([shown, listed])).not.toContain(secret);
    expect(JSON.stringify([shown, listed])).not.toContain('ciphertext');
  });

  it('refuses a second connection of the same name (CONFLICT) and keeps the first', async () => {
    await call(m, main, 'createConnection', { name: 'dup', allowedTools: ['a.b'], credential: { kind: 'api-key', apiKey: 'first' } });
    const before = await connectionRecord(m, main, 'dup');
    const error = await rejection(call(m, main, 'createConnection', { name: 'dup', allowedTools: ['a.b'], credential: { kind: 'api-key', apiKey: 'second' } }));
    expect(error.code).toBe('CONFLICT');
    expect(await connectionRecord(m, main, 'dup')).toEqual(before);
  });

  it('refuses a malformed secret with INVALID_ARGUMENT that names the field but never the value, and stores nothing', async () => {
    const secret = `${canary()} has spaces`;
    const cases = [
      { kind: 'bearer', token: secret },
      { kind: 'api-key', apiKey: `${canary()}\r\nX-Injected: 1` },
      { kind: 'basic', username: 'a:b', password: secret },
      { kind: 'oauth2-client-credentials', tokenEndpoint: 'ftp://auth.example.com/token', clientId: 'c', clientSecret: secret, scopes: [] },
      { kind: 'bearer', apiKey: secret },
    ];
    for (const credential of cases) {
      const error = await rejection(callRaw(m, main, 'createConnection', { name: 'malformed', allowedTools: ['a.b'], credential }));
      expect(error.code).toBe('INVALID_ARGUMENT');
      expect(error.message).toMatch(/credential/);
      expect(error.message).not.toContain('tp-canary');
    }
    const httpsOnly = await rejection(
      callRaw(m, main, 'createConnection', { name: 'malformed', allowedTools: ['a.b'], credential: { kind: 'oauth2-client-credentials', tokenEndpoint: 'https://user:pw@auth.example.com/t', clientId: 'c', clientSecret: secret } }),
    );
    expect(httpsOnly).toMatchObject({ code: 'INVALID_ARGUMENT', message: 'credential.tokenEndpoint must not contain credentials' });
    expect(await connectionRecord(m, main, 'malformed')).toEqual([]);
    expect(await connectionDoc('malformed')).toBeNull();
  });

  it('keeps connections of different workspaces and tenants apart', async () => {
    await call(m, otherWorkspace, 'createConnection', { name: 'github', allowedTools: ['github.create_issue'], credential: { kind: 'bearer', token: 'other-ws' } });
    const mine = await call(m, main, 'showConnection', { connectionRef: 'github' });
    const theirs = await call(m, otherWorkspace, 'showConnection', { connectionRef: 'github' });
    expect(theirs.connectionId).not.toBe(mine.connectionId);
    expect((await rejection(call(m, otherTenant, 'showConnection', { connectionRef: mine.connectionId }))).code).toBe('NOT_FOUND');
    expect((await rejection(call(m, otherWorkspace, 'showConnection', { connectionRef: mine.connectionId }))).code).toBe('NOT_FOUND');
  });
});

describe('leases', () => {
  it('seals the secret to the adapter for one invocation, records the lease without the value, and publishes SecretLeased', async () => {
    const secret = canary();
    const created = await call(m, main, 'createConnection', { name: 'lease-basic', allowedTools: ['crm.read'], credential: { kind: 'basic', username: 'svc', password: secret } });
    const request = leaseRequest('lease-basic', 'crm.read', { correlationId: 'corr-lease-1' });
    const reply = await call(m, main, 'leaseSecret', request);
    expect(reply).toMatchObject({ connectionId: created.connectionId, kind: 'basic' });
    expect(JSON.stringify(reply)).not.toContain(secret);
    expect(openLease(keys, reply, request.invocationId)).toEqual({ kind: 'basic', username: 'svc', password: secret });
    // Bound to its invocation: a box replayed for another invocation does not open.
    expect(() => openLease(keys, reply, leaseRequest('x', 'a.b').invocationId)).toThrow(/could not be decrypted/);

    const event = await events.waitFor((e) => e.type === 'SecretLeased' && e.data.invocationId === request.invocationId);
    expect(event).toMatchObject({ data: { leaseId: reply.leaseId, connectionRef: 'lease-basic', toolId: 'crm.read', leasedTo: 'svc:tool-adapter', expiresAt: reply.expiresAt }, metadata: { correlationId: 'corr-lease-1' } });
    const lease = await projectedLease(reply.leaseId);
    expect(lease).toMatchObject({ state: 'Active', invocationId: request.invocationId, toolId: 'crm.read', leasedTo: 'svc:tool-adapter', secretGeneration: 1, version: 1 });
    expect(JSON.stringify(lease)).not.toContain(secret);
  });

  it('refuses a tool not on the allow-list (AUTHORIZATION_DENIED), publishes SecretLeaseDenied, records nothing', async () => {
    const before = await recordCounts(m, main);
    const request = leaseRequest('github', 'github.delete_repo');
    const error = await rejection(call(m, main, 'leaseSecret', request));
    expect(error.code).toBe('AUTHORIZATION_DENIED');
    const event = await events.waitFor((e) => e.type === 'SecretLeaseDenied' && e.data.invocationId === request.invocationId);
    expect(event).toMatchObject({ data: { failure: { code: 'AUTHORIZATION_DENIED' }, toolId: 'github.delete_repo' } });
    expect(await recordCounts(m, main)).toEqual(before);
  });

  it('answers NOT_FOUND to another tenant or workspace, as for a connection that does not exist', async () => {
    const { connectionId } = await call(m, main, 'showConnection', { connectionRef: 'lease-basic' });
    const before = await Promise.all([main, otherWorkspace, otherTenant].map((where) => recordCounts(m, where)));
    const fromOtherTenant = await rejection(call(m, otherTenant, 'leaseSecret', leaseRequest(connectionId, 'crm.read')));
    const fromOtherWorkspace = await rejection(call(m, otherWorkspace, 'leaseSecret', leaseRequest('lease-basic', 'crm.read')));
    const missing = await rejection(call(m, main, 'leaseSecret', leaseRequest('no-such-connection', 'crm.read')));
    expect([fromOtherTenant.code, fromOtherWorkspace.code, missing.code]).toEqual(['NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND']);
    expect(await Promise.all([main, otherWorkspace, otherTenant].map((where) => recordCounts(m, where)))).toEqual(before);
  });

  it('seals only to configured recipients: an unknown recipient key id is refused', async () => {
    const request = leaseRequest('lease-basic', 'crm.read', { recipientKeyId: 'attacker' });
    expect((await rejection(call(m, main, 'leaseSecret', request))).code).toBe('AUTHORIZATION_DENIED');
    await events.waitFor((e) => e.type === 'SecretLeaseDenied' && e.data.invocationId === request.invocationId);
  });

  it('gives two replicas racing on one invocation exactly one lease', async () => {
    const request = leaseRequest('lease-basic', 'crm.read');
    const replies = await Promise.all(Array.from({ length: 8 }, () => call(m, main, 'leaseSecret', request)));
    expect(new Set(replies.map((reply) => reply.leaseId)).size).toBe(1);
    const leaseSubject = Object.entries(await recordCounts(m, main)).filter(([subject]) => subject.endsWith(`.lease.${replies[0]?.leaseId ?? ''}`));
    expect(leaseSubject).toEqual([[expect.any(String), 1]]);
    await projectedLease(replies[0]?.leaseId ?? '');
    const leases = (await leaseDocs()).filter((doc) => doc.invocationId === request.invocationId);
    expect(leases).toHaveLength(1);
    for (const reply of replies) expect(openLease(keys, reply, request.invocationId)).toMatchObject({ kind: 'basic' });
  });

  it('republishes SecretLeased from the record when a request is repeated after a crash between the append and the publish', async () => {
    const request = leaseRequest('lease-basic', 'crm.read');
    const { connectionId } = await call(m, main, 'showConnection', { connectionRef: 'lease-basic' });
    const leaseId = leaseIdOf(main, request.invocationId, connectionId);
    // What a replica that died right after its append left behind: the lease in the record, no event published.
    const granted = new Date();
    const lease: SecretLease = {
      leaseId,
      tenant: main.tenant,
      workspace: main.workspace,
      connectionId,
      connectionRef: 'lease-basic',
      invocationId: request.invocationId,
      toolId: 'crm.read',
      leasedTo: 'svc:tool-adapter',
      recipientKeyId: 'tool-adapter',
      secretGeneration: 1,
      state: 'Active',
      grantedAt: granted.toISOString(),
      expiresAt: new Date(granted.getTime() + 60_000).toISOString(),
      version: 1,
    };
    await leaseEventStore(m).appendToStream(streamIdOf(main, leaseId), [{ type: 'LeaseGranted', data: { lease, connectionVersion: 1 } }], { expectedVersion: 0 });
    expect(events.events.some((e) => e.type === 'SecretLeased' && e.data.invocationId === request.invocationId)).toBe(false);

    const reply = await call(m, main, 'leaseSecret', request);
    expect(reply).toMatchObject({ leaseId, expiresAt: lease.expiresAt });
    const event = await events.waitFor((e) => e.type === 'SecretLeased' && e.data.invocationId === request.invocationId);
    expect(event).toMatchObject({ data: { leaseId }, metadata: { occurredAt: lease.grantedAt } });
  });

  it('expires leases once, whichever replica sweeps, and does not hand an expired lease out again', async () => {
    const request = leaseRequest('lease-basic', 'crm.read', { ttlMs: 300 });
    const reply = await call(m, main, 'leaseSecret', request);
    const lease = await eventually(
      async () => (await leaseDocs()).find((doc) => doc.leaseId === reply.leaseId),
      (doc) => doc?.state === 'Expired',
    );
    expect(lease).toMatchObject({ state: 'Expired', version: 2 });
    expect(lease?.endedAt).toBeDefined();
    expect((await rejection(call(m, main, 'leaseSecret', request))).code).toBe('CONFLICT');
  });
});

describe('rotation and revocation', () => {
  it('rotates the credential: new leases carry the new secret, the old invocation cannot re-lease', async () => {
    const [first, second] = [canary(), canary()];
    await call(m, main, 'createConnection', { name: 'rotating', allowedTools: ['svc.call'], credential: { kind: 'api-key', apiKey: first } });
    const early = leaseRequest('rotating', 'svc.call');
    expect(openLease(keys, await call(m, main, 'leaseSecret', early), early.invocationId)).toEqual({ kind: 'api-key', apiKey: first });
    const before = await lastSecret('rotating');

    const rotated = await call(m, main, 'rotateConnection', { connectionRef: 'rotating', credential: { kind: 'api-key', apiKey: second } });
    expect(rotated).toMatchObject({ secretGeneration: 2, version: 2 });
    const after = await lastSecret('rotating');
    expect(after).toBeDefined();
    expect(after).not.toEqual(before);
    // Only the rotation is left in the record: the first credential's ciphertext is gone.
    expect((await connectionRecord(m, main, 'rotating')).map((event) => event.type)).toEqual(['ConnectionRotated']);
    expect(await projectedConnection('rotating', 2)).toMatchObject({ secretGeneration: 2 });

    const late = leaseRequest('rotating', 'svc.call');
    expect(openLease(keys, await call(m, main, 'leaseSecret', late), late.invocationId)).toEqual({ kind: 'api-key', apiKey: second });
    expect((await rejection(call(m, main, 'leaseSecret', early))).code).toBe('CONFLICT');
  });

  it('refuses a rotation to another kind (INVALID_ARGUMENT) and changes nothing', async () => {
    const before = await connectionRecord(m, main, 'rotating');
    const error = await rejection(call(m, main, 'rotateConnection', { connectionRef: 'rotating', credential: { kind: 'bearer', token: 'x' } }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(await connectionRecord(m, main, 'rotating')).toEqual(before);
  });

  it('revokes: the secret is deleted, outstanding leases are revoked, further leases are denied, and revoking again is harmless', async () => {
    await call(m, main, 'createConnection', { name: 'doomed', allowedTools: ['svc.call'], credential: { kind: 'bearer', token: canary() } });
    const outstanding = await Promise.all([leaseRequest('doomed', 'svc.call'), leaseRequest('doomed', 'svc.call')].map((request) => call(m, main, 'leaseSecret', request)));

    const revoker = await operatorToken(main, { principal: 'user:revoker' });
    const revoked = await call(m, main, 'revokeConnection', { connectionRef: 'doomed', reason: 'leaked', actor: 'user:mallory' }, revoker);
    expect(revoked).toMatchObject({ state: 'Revoked', revokeReason: 'leaked', revokedBy: 'user:revoker' });
    expect(revoked.kekId).toBeUndefined();
    expect(await lastSecret('doomed')).toBeUndefined();
    expect(await projectedConnection('doomed', revoked.version)).not.toHaveProperty('kekId');
    for (const reply of outstanding) expect(await projectedLease(reply.leaseId, 'Revoked')).toMatchObject({ state: 'Revoked', endedAt: revoked.revokedAt });

    const request = leaseRequest('doomed', 'svc.call');
    expect((await rejection(call(m, main, 'leaseSecret', request))).code).toBe('AUTHORIZATION_DENIED');
    await events.waitFor((e) => e.type === 'SecretLeaseDenied' && e.data.invocationId === request.invocationId);
    expect((await rejection(call(m, main, 'rotateConnection', { connectionRef: 'doomed', credential: { kind: 'bearer', token: 'x' } }))).code).toBe('CONFLICT');
    expect(await call(m, main, 'revokeConnection', { connectionRef: 'doomed' })).toMatchObject({ state: 'Revoked', version: revoked.version });
    const revokedList = await eventually(() => call(m, main, 'listConnections', { state: 'Revoked' }), (page) => page.items.length > 0);
    expect(revokedList.items.map((item) => item.name)).toEqual(['doomed']);
    // The record keeps only the revocation, which holds no secret: the credential's ciphertext is gone from the server.
    expect((await connectionRecord(m, main, 'doomed')).map((event) => event.type)).toEqual(['ConnectionRevoked']);
  });
});

describe('oauth2-client-credentials', () => {
  const oauth2 = (clientId: string, clientSecret: string): CredentialInput => ({ kind: 'oauth2-client-credentials', tokenEndpoint: tokens.url, clientId, clientSecret, scopes: ['read', 'write'] });

  it('leases an access token from the token endpoint, never the client secret, and caches it across leases and replicas', async () => {
    await call(m, main, 'createConnection', { name: 'crm-long', allowedTools: ['crm.read'], credential: oauth2('long-lived', 'cs-long') });
    const first = leaseRequest('crm-long', 'crm.read');
    const firstReply = await call(m, main, 'leaseSecret', first);
    const firstToken = openLease(keys, firstReply, first.invocationId);
    expect(tokens.requests('long-lived')).toBe(1);
    expect(firstToken).toMatchObject({ kind: 'oauth2-client-credentials', tokenType: 'Bearer', accessToken: tokens.issued.at(-1), scopes: ['read', 'write'] });
    expect(JSON.stringify(firstToken)).not.toContain('cs-long');

    for (let i = 0; i < 4; i += 1) {
      const next = leaseRequest('crm-long', 'crm.read');
      const token = openLease(keys, await call(m, main, 'leaseSecret', next), next.invocationId);
      expect(token).toMatchObject({ accessToken: firstToken.kind === 'oauth2-client-credentials' ? firstToken.accessToken : '' });
    }
    expect(tokens.requests('long-lived')).toBe(1);
    const bucket = await openKv(m, { name: secretBrokerTokenBucket.name }, CachedAccessToken);
    const cached = await bucket.get(`${main.tenant}.${main.workspace}.${firstReply.connectionId}`);
    expect(cached?.value).toMatchObject({ connectionId: firstReply.connectionId, secretGeneration: 1, token: { kekId: 'k1' } });
    expect(JSON.stringify(cached)).not.toContain(tokens.issued[0] ?? 'none');
  });

  it('refreshes a token before it expires: one with less than the margin left is replaced at the next lease', async () => {
    await call(m, main, 'createConnection', { name: 'crm-short', allowedTools: ['crm.read'], credential: oauth2('short-lived', 'cs-short') });
    const first = leaseRequest('crm-short', 'crm.read');
    const firstReply = await call(m, main, 'leaseSecret', first);
    const firstToken = openLease(keys, firstReply, first.invocationId);
    expect(tokens.requests('short-lived')).toBe(1);
    // 30 s tokens against a 60 s refresh margin: the cached token is still valid, but due for refresh.
    if (firstToken.kind !== 'oauth2-client-credentials') throw new Error('not an oauth2 lease');
    expect(Date.parse(firstToken.expiresAt)).toBeGreaterThan(Date.now());
    expect(Date.parse(firstReply.expiresAt)).toBeLessThanOrEqual(Date.parse(firstToken.expiresAt));

    const second = leaseRequest('crm-short', 'crm.read');
    const secondToken = openLease(keys, await call(m, main, 'leaseSecret', second), second.invocationId);
    expect(tokens.requests('short-lived')).toBe(2);
    expect(secondToken).toMatchObject({ kind: 'oauth2-client-credentials' });
    expect(secondToken.kind === 'oauth2-client-credentials' && secondToken.accessToken).not.toBe(firstToken.accessToken);
  });

  it('fetches a new token with the new client secret after a rotation', async () => {
    tokens.setClient('long-lived', { secret: 'cs-long-2', expiresIn: 3600 });
    await call(m, main, 'rotateConnection', { connectionRef: 'crm-long', credential: oauth2('long-lived', 'cs-long-2') });
    const request = leaseRequest('crm-long', 'crm.read');
    const token = openLease(keys, await call(m, main, 'leaseSecret', request), request.invocationId);
    expect(tokens.requests('long-lived')).toBe(2);
    expect(token).toMatchObject({ accessToken: tokens.issued.at(-1) });
  });

  it('refuses the lease when the token endpoint rejects the client (AUTHENTICATION_FAILED), without repeating the secret', async () => {
    await call(m, main, 'createConnection', { name: 'crm-wrong', allowedTools: ['crm.read'], credential: oauth2('long-lived', 'tp-canary-wrong-secret') });
    const before = await recordCounts(m, main);
    const request = leaseRequest('crm-wrong', 'crm.read');
    const error = await rejection(call(m, main, 'leaseSecret', request));
    expect(error.code).toBe('AUTHENTICATION_FAILED');
    expect(error.message).toContain('invalid_client');
    expect(error.message).not.toContain('tp-canary');
    const denied = await events.waitFor((e) => e.type === 'SecretLeaseDenied' && e.data.invocationId === request.invocationId);
    expect(JSON.stringify(denied)).not.toContain('tp-canary');
    expect(await recordCounts(m, main)).toEqual(before);
  });

  it('does not cache a token whose endpoint gave no expires_in, and leases it for no longer than a lease', async () => {
    await call(m, main, 'createConnection', { name: 'crm-none', allowedTools: ['crm.read'], credential: oauth2('no-expiry', 'cs-none') });
    for (let i = 1; i <= 2; i += 1) {
      const request = leaseRequest('crm-none', 'crm.read');
      const reply = await call(m, main, 'leaseSecret', request);
      const token = openLease(keys, reply, request.invocationId);
      if (token.kind !== 'oauth2-client-credentials') throw new Error('not an oauth2 lease');
      expect(Date.parse(reply.expiresAt)).toBeLessThanOrEqual(Date.parse(token.expiresAt));
      expect(Date.parse(token.expiresAt) - Date.now()).toBeLessThanOrEqual(300_000);
      expect(tokens.requests('no-expiry')).toBe(i);
    }
  });
});

describe('operator tokens', () => {
  const create = { name: 'guarded', allowedTools: ['svc.call'], credential: { kind: 'api-key' as const, apiKey: 'guarded-value' } };
  const commands = (token: string | null) =>
    [
      ['createConnection', () => call(m, main, 'createConnection', { ...create, name: 'intruder' }, token)],
      ['rotateConnection', () => call(m, main, 'rotateConnection', { connectionRef: 'guarded', credential: { kind: 'api-key', apiKey: 'replaced' } }, token)],
      ['revokeConnection', () => call(m, main, 'revokeConnection', { connectionRef: 'guarded' }, token)],
      ['listConnections', () => call(m, main, 'listConnections', {}, token)],
      ['showConnection', () => call(m, main, 'showConnection', { connectionRef: 'guarded' }, token)],
    ] as const;
  const codeOf = (work: () => Promise<unknown>) =>
    work().then(
      () => 'OK',
      (error: unknown) => (error as { code: string }).code,
    );
  // The record of the scope: what a refused command must leave as it was.
  const connections = () => recordCounts(m, main);

  beforeAll(async () => {
    await call(m, main, 'createConnection', create);
  });

  it('without a valid token of the scope every connection command is AUTHENTICATION_FAILED and nothing changes', async () => {
    const before = await connections();
    const forger = await generateSigningKeyPair(operatorKey.kid);
    const tokens = {
      none: null,
      forged: await issueToken({ kind: 'human', tenant: main.tenant, workspaces: [main.workspace], principal: 'user:mallory', roles: [POLICY_ADMIN_ROLE] }, forger.privateKey, {
        kid: forger.kid,
        expiresIn: '5m',
      }),
      'of another workspace': await operatorToken(main, { workspaces: [otherWorkspace.workspace] }),
      'of another tenant': await operatorToken(otherTenant),
    };
    const codes: Record<string, string> = {};
    for (const [kind, token] of Object.entries(tokens)) for (const [operation, work] of commands(token)) codes[`${operation} with ${kind} token`] = await codeOf(work);
    expect(Object.entries(codes).filter(([, code]) => code !== 'AUTHENTICATION_FAILED')).toEqual([]);
    expect(await connections()).toEqual(before);
  });

  it('an operator without the policy-admin role reads connections but cannot change them', async () => {
    const before = await connections();
    const reader = await operatorToken(main, { principal: 'user:reader', roles: ['approver'] });
    const codes = Object.fromEntries(await Promise.all(commands(reader).map(async ([operation, work]) => [operation, await codeOf(work)] as const)));
    expect(codes).toEqual({
      createConnection: 'AUTHORIZATION_DENIED',
      rotateConnection: 'AUTHORIZATION_DENIED',
      revokeConnection: 'AUTHORIZATION_DENIED',
      listConnections: 'OK',
      showConnection: 'OK',
    });
    expect((await rejection(call(m, main, 'createConnection', { ...create, name: 'intruder' }, reader))).message).toBe(`operator user:reader lacks the role ${POLICY_ADMIN_ROLE} this operation needs`);
    expect(await connections()).toEqual(before);
  });

  it("records the token's principal as creator, rotator and revoker, whatever the body's actor says", async () => {
    const alice = await operatorToken(main, { principal: 'user:alice' });
    const created = await call(m, main, 'createConnection', { ...create, name: 'attributed', actor: 'user:mallory' }, alice);
    const rotated = await call(m, main, 'rotateConnection', { connectionRef: 'attributed', credential: { kind: 'api-key', apiKey: 'second' }, actor: 'user:mallory' }, alice);
    const revoked = await call(m, main, 'revokeConnection', { connectionRef: 'attributed', actor: 'user:mallory' }, alice);
    expect([created.createdBy, rotated.rotatedBy, revoked.revokedBy]).toEqual(['user:alice', 'user:alice', 'user:alice']);
    expect(JSON.stringify(await connectionRecord(m, main, 'attributed'))).not.toContain('user:mallory');
    expect(JSON.stringify(await projectedConnection('attributed', revoked.version))).not.toContain('user:mallory');
  });

  it('a lease needs no operator token (the tool adapter sends none; NATS permissions decide)', async () => {
    const request = leaseRequest('guarded', 'svc.call');
    expect(openLease(keys, await call(m, main, 'leaseSecret', request, null), request.invocationId)).toEqual({ kind: 'api-key', apiKey: 'guarded-value' });
  });
});
