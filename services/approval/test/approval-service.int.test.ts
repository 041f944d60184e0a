// Two replicas of the approval service against real NATS and FerretDB (one database, one events stream, one approval
// stream), driven the way production drives them: the adapter's ApprovalRequested on the stream, humans through the
// CLI, the adapter's consume over request/reply, the registry's events on the stream.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base64url, SignJWT } from 'jose';
import {
  ApprovalReply,
  ApprovalRequested,
  ApprovalStreamEvent,
  ApproveApprovalRequest,
  ConsumeApprovalRequest,
  LifecycleEvent,
  ToolDescriptorRetired,
  McpToolDefinitionChanged,
  commandSubject,
  eventMsgId,
  eventSubject,
  hasErrorCode,
  streams,
  subjectOfEvent,
  approvalStream,
  approvalStreamSubject,
  type Approval,
  type ApprovalOutcomeEvent,
  type EventType,
  type OperatorClaims,
  type Scope,
} from '@toolplane/contracts';
import { bearerHeaders, generateSigningKeyPair, issueToken, type SigningKeyPair } from '@toolplane/auth';
import { runCli } from '@toolplane/cli';
import { connectMessaging, publish, request, type Messaging } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { jetStreamEventStore } from '@toolplane/event-store';
import { connectStore, type Store, type StoreCollection } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { counterDelta, scrapeCounters } from '@toolplane/testing/bench';
import { approvalService } from '../src/mod.js';
import { approvals, type StoredApproval } from '../src/adapters/collections.js';
import { approvalEventId } from '../src/core/event-ids.js';

const scope = testScope('approval');
const deadlineMs = 20_000;

let acmeKey: SigningKeyPair;
let globexKey: SigningKeyPair;
let replicas: RunningService[] = [];
let messaging: Messaging;
let store: Store;
let collection: StoreCollection<StoredApproval>;
let tmp: string;

beforeAll(async () => {
  acmeKey = await generateSigningKeyPair('acme-1');
  globexKey = await generateSigningKeyPair('globex-1');
  tmp = await mkdtemp(path.join(tmpdir(), 'approval-int-'));
  const env = {
    NATS_URL: scope.natsUrl,
    MONGODB_URL: scope.mongoUrl,
    MONGODB_DATABASE: scope.dbName,
    HTTP_PORT: '0',
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ acme: [acmeKey.publicJwk], globex: [globexKey.publicJwk] }),
    APPROVAL_SWEEP_INTERVAL_MS: '150',
  };
  // Two replicas over one database and one stream: every race below is a race between them.
  replicas = [await startService(approvalService, { ...env, INSTANCE_ID: 'replica-a' }), await startService(approvalService, { ...env, INSTANCE_ID: 'replica-b' })];
  messaging = await connectMessaging({ url: scope.natsUrl, name: 'approval-int-test' });
  store = await connectStore({ url: scope.mongoUrl, dbName: scope.dbName, appName: 'approval-int-test' });
  collection = store.collection(approvals);
});

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await messaging?.drain();
  await store?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

// Each test works in a workspace of its own, so event counts per subject are that test's alone.
let workspaces = 0;
function freshScope(tenant = 'acme'): Scope {
  workspaces += 1;
  return { tenant, workspace: `w${workspaces}_${randomUUID().slice(0, 8)}` };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false>): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const hash = (c: string) => c.repeat(64);

interface RequestOptions {
  readonly principal?: string;
  readonly requestHash?: string;
  readonly toolVersion?: string;
  readonly expiresInMs?: number;
  readonly approvers?: { roles: string[]; principals: string[] };
}

/** Publishes the adapter's ApprovalRequested and returns it. */
async function requestApproval(where: Scope, options: RequestOptions = {}, msgId?: string): Promise<ApprovalRequested> {
  const event: ApprovalRequested = {
    type: 'ApprovalRequested',
    data: {
      approvalId: randomUUID(),
      requestHash: options.requestHash ?? hash('a'),
      sideEffectClass: 'DESTRUCTIVE',
      riskClass: 'HIGH',
      summary: 'Delete repository acme/old-site',
      approvers: options.approvers ?? { roles: ['approver'], principals: [] },
      expiresAt: new Date(Date.now() + (options.expiresInMs ?? 600_000)).toISOString(),
    },
    metadata: {
      eventId: randomUUID(),
      ...where,
      principal: options.principal ?? 'user:bob@acme.example',
      agentId: 'agent-support',
      agentRevision: '7',
      toolCallId: `call_${randomUUID().slice(0, 8)}`,
      invocationId: randomUUID(),
      attempt: 1,
      sequence: 4,
      toolId: 'github.delete_repo',
      toolVersion: options.toolVersion ?? '1.2.0',
      correlationId: 'run-42',
      occurredAt: new Date().toISOString(),
    },
  };
  await publish(messaging, { subject: subjectOfEvent(event), schema: ApprovalRequested, message: event, msgId: msgId ?? eventMsgId(event) });
  return event;
}

async function stored(approvalId: string): Promise<StoredApproval | null> {
  return collection.raw.findOne({ _id: approvalId });
}

async function appeared(event: ApprovalRequested): Promise<StoredApproval> {
  return waitFor(`approval ${event.data.approvalId}`, () => stored(event.data.approvalId));
}

/** How many events of a type the stream holds for a scope (stored messages, so JetStream-deduplicated). */
async function eventCount(where: Scope, type: EventType): Promise<number> {
  const subject = eventSubject(where, type);
  const info = await messaging.manager.streams.info(streams.events.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

/** The last event of a type stored for a scope. */
async function lastEvent(where: Scope, type: EventType): Promise<LifecycleEvent> {
  const message = await messaging.manager.streams.getMessage(streams.events.name, { last_by_subj: eventSubject(where, type) });
  if (message === null) throw new Error(`no ${type} on the stream`);
  return LifecycleEvent.parse(message.json());
}

/** Whether a consumer of the approval stream has handled everything appended so far. */
async function drained(consumer: string): Promise<boolean> {
  const info = await messaging.manager.consumers.info(approvalStream.name, consumer);
  return info.num_pending === 0 && info.num_ack_pending === 0;
}

/** Waits until the read model shows an approval in a state and the relay has published every event appended. */
async function settled(approvalId: string, state: Approval['state']): Promise<StoredApproval> {
  return waitFor(`approval ${approvalId} ${state} with its events published`, async () => {
    const document = await stored(approvalId);
    return document !== null && document.state === state && (await drained('approval-events')) ? document : undefined;
  });
}

/** How many appends the approval's own stream holds. */
async function appends(approvalId: string): Promise<number> {
  const subject = approvalStreamSubject(approvalId);
  const info = await messaging.manager.streams.info(approvalStream.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

function operatorClaims(where: Scope, overrides: Partial<OperatorClaims> = {}): OperatorClaims {
  return { kind: 'human', tenant: where.tenant, workspaces: [where.workspace], principal: 'user:alice@acme.example', roles: ['approver'], ...overrides };
}

async function operatorToken(where: Scope, overrides: Partial<OperatorClaims> = {}, key: SigningKeyPair = acmeKey): Promise<string> {
  return issueToken(operatorClaims(where, overrides), key.privateKey, { kid: key.kid, expiresIn: '10m' });
}

interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

async function cli(where: Scope, args: readonly string[], env: Record<string, string> = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    readStdin: () => Promise.resolve(''),
    env: { TOOLPLANE_NATS_URL: scope.natsUrl, TOOLPLANE_TENANT: where.tenant, TOOLPLANE_WORKSPACE: where.workspace, ...env },
  });
  return { code, stdout, stderr };
}

async function consume(where: Scope, body: ConsumeApprovalRequest): Promise<ApprovalReply> {
  return request(messaging, { subject: commandSubject(where, 'approval', 'consume'), requestSchema: ConsumeApprovalRequest, replySchema: ApprovalReply, body, timeoutMs: 15_000 });
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (hasErrorCode(error)) return error.code;
    throw error;
  }
  return 'OK';
}

/** A metric of every replica's /metrics, summed over the replicas by the value of `label`. */
async function acrossReplicas(metric: string, label: string): Promise<Map<string, number>> {
  const total = new Map<string, number>();
  for (const replica of replicas) {
    for (const [value, count] of await scrapeCounters(`http://127.0.0.1:${replica.port}/metrics`, metric, label)) total.set(value, (total.get(value) ?? 0) + count);
  }
  return total;
}

/** The pending-approvals gauge as each replica reports it. */
async function pendingGauges(): Promise<(number | undefined)[]> {
  return Promise.all(replicas.map(async (replica) => (await scrapeCounters(`http://127.0.0.1:${replica.port}/metrics`, 'toolplane_approvals_pending', 'service')).get('approval')));
}

const pendingInReadModel = () => collection.raw.countDocuments({ state: 'Pending' });

const decisionsCounted = () => acrossReplicas('toolplane_approval_decision_seconds_count', 'outcome');

/** What the time-to-decision histogram counted since `before`, by outcome, without the outcomes that did not move. */
async function decisionsSince(before: Map<string, number>): Promise<Record<string, number>> {
  return Object.fromEntries([...counterDelta(before, await decisionsCounted())].filter(([, count]) => count !== 0));
}

/** Grants an approval through the CLI and waits until ApprovalGranted is out. */
async function grant(where: Scope, event: ApprovalRequested): Promise<void> {
  await appeared(event);
  const run = await cli(where, ['approvals', 'approve', event.data.approvalId], { TOOLPLANE_TOKEN: await operatorToken(where) });
  expect(run.code, run.stderr).toBe(0);
  await settled(event.data.approvalId, 'Granted');
}

describe('approval service, two replicas', () => {
  it('creates an approval from ApprovalRequested, once even when the event is delivered again', async () => {
    const where = freshScope();
    const event = await requestApproval(where);
    const created = await appeared(event);
    expect(created).toMatchObject({ state: 'Pending', version: 1, tenant: where.tenant, workspace: where.workspace, requestHash: hash('a'), toolVersion: '1.2.0', requestedBy: 'user:bob@acme.example' });
    // The adapter republishing after the dedupe window (another Nats-Msg-Id) changes nothing.
    await publish(messaging, { subject: subjectOfEvent(event), schema: ApprovalRequested, message: event, msgId: `${eventMsgId(event)}-again` });
    await waitFor('the approval consumer to catch up', async () => {
      const info = await messaging.manager.consumers.info(streams.events.name, 'approval');
      return info.num_pending === 0 && info.num_ack_pending === 0;
    });
    expect(await collection.raw.countDocuments({ approvalId: event.data.approvalId })).toBe(1);
    expect((await stored(event.data.approvalId))?.version).toBe(1);
    expect(await appends(event.data.approvalId)).toBe(1);

    const token = await operatorToken(where, { roles: [] });
    const listed = await cli(where, ['--json', 'approvals', 'list', '--state', 'pending'], { TOOLPLANE_TOKEN: token });
    expect(listed.code, listed.stderr).toBe(0);
    const page = JSON.parse(listed.stdout) as { items: Approval[]; next: string | null };
    expect(page.items.map((item) => item.approvalId)).toEqual([event.data.approvalId]);
    expect(page.items[0]).not.toHaveProperty('outbox');
    const shown = await cli(where, ['approvals', 'show', event.data.approvalId], { TOOLPLANE_TOKEN: token });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/state:\s+Pending/);
    expect(shown.stdout).toContain('Delete repository acme/old-site');
    expect(`${listed.stdout}${shown.stdout}${shown.stderr}`).not.toContain(token);
    const granted = await cli(where, ['--json', 'approvals', 'list', '--state', 'granted'], { TOOLPLANE_TOKEN: token });
    expect((JSON.parse(granted.stdout) as { items: unknown[] }).items).toEqual([]);
  });

  it('approves through the CLI: the approval is Granted and ApprovalGranted is on the stream, once', async () => {
    const where = freshScope();
    const event = await requestApproval(where);
    await appeared(event);
    const token = await operatorToken(where);
    const run = await cli(where, ['approvals', 'approve', event.data.approvalId, '--reason', 'checked with the owner'], { TOOLPLANE_TOKEN: token });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/state:\s+Granted/);
    expect(run.stdout + run.stderr).not.toContain(token);

    const document = await settled(event.data.approvalId, 'Granted');
    expect(document).toMatchObject({ decidedBy: 'user:alice@acme.example', reason: 'checked with the owner', version: 2 });
    expect(await eventCount(where, 'ApprovalGranted')).toBe(1);
    const granted = await lastEvent(where, 'ApprovalGranted');
    expect(granted).toMatchObject({
      type: 'ApprovalGranted',
      data: { approvalId: event.data.approvalId, requestHash: hash('a'), decidedBy: 'user:alice@acme.example', reason: 'checked with the owner' },
      metadata: { eventId: approvalEventId(event.data.approvalId, 'ApprovalGranted'), tenant: where.tenant, workspace: where.workspace, toolVersion: '1.2.0', actor: 'user:alice@acme.example' },
    });

    // The same human approving again (a retried command) is told it is done, and nothing is emitted again.
    const again = await cli(where, ['approvals', 'approve', event.data.approvalId], { TOOLPLANE_TOKEN: token });
    expect(again.code, again.stderr).toBe(0);
    expect(await appends(event.data.approvalId)).toBe(2);
    expect((await stored(event.data.approvalId))?.version).toBe(2);
    expect(await eventCount(where, 'ApprovalGranted')).toBe(1);
  });

  it('rejects through the CLI with a reason from a token file, and requires that reason', async () => {
    const where = freshScope();
    const event = await requestApproval(where);
    await appeared(event);
    const tokenFile = path.join(tmp, `token-${where.workspace}`);
    await writeFile(tokenFile, `${await operatorToken(where)}\n`);
    const withoutReason = await cli(where, ['approvals', 'reject', event.data.approvalId, '--token-file', tokenFile]);
    expect(withoutReason.code).not.toBe(0);
    expect(withoutReason.stderr).toMatch(/--reason/);
    const run = await cli(where, ['approvals', 'reject', event.data.approvalId, '--reason', 'not during the freeze', '--token-file', tokenFile]);
    expect(run.code, run.stderr).toBe(0);
    await settled(event.data.approvalId, 'Rejected');
    expect(await lastEvent(where, 'ApprovalRejected')).toMatchObject({ data: { reason: 'not during the freeze', decidedBy: 'user:alice@acme.example' } });
    expect(await codeOf(consume(where, { approvalId: event.data.approvalId, requestHash: hash('a'), toolVersion: '1.2.0' }))).toBe('APPROVAL_REJECTED');
  });

  it('lets exactly one of racing consumers use a granted approval; the others get CONFLICT', async () => {
    const where = freshScope();
    const events = await Promise.all([0, 1, 2, 3].map(() => requestApproval(where)));
    for (const event of events) await grant(where, event);

    const outcomes = await Promise.all(
      events.map((event) =>
        Promise.all([0, 1, 2].map(() => codeOf(consume(where, { approvalId: event.data.approvalId, requestHash: hash('a'), toolVersion: '1.2.0', invocationId: event.metadata.invocationId })))),
      ),
    );
    for (const codes of outcomes) expect([...codes].sort()).toEqual(['CONFLICT', 'CONFLICT', 'OK']);
    for (const event of events) {
      const document = await settled(event.data.approvalId, 'Consumed');
      expect(document.consumedAt).toBeDefined();
    }
    expect(await eventCount(where, 'ApprovalConsumed')).toBe(events.length);
  });

  it('refuses to consume with another request hash or tool version, and changes nothing', async () => {
    const where = freshScope();
    const event = await requestApproval(where);
    await grant(where, event);
    const before = await stored(event.data.approvalId);
    expect(await codeOf(consume(where, { approvalId: event.data.approvalId, requestHash: hash('b'), toolVersion: '1.2.0' }))).toBe('CONFLICT');
    expect(await codeOf(consume(where, { approvalId: event.data.approvalId, requestHash: hash('a'), toolVersion: '1.3.0' }))).toBe('CONFLICT');
    expect(await codeOf(consume(where, { approvalId: randomUUID(), requestHash: hash('a'), toolVersion: '1.2.0' }))).toBe('NOT_FOUND');
    // Another workspace of the same tenant cannot reach it.
    expect(await codeOf(consume(freshScope(), { approvalId: event.data.approvalId, requestHash: hash('a'), toolVersion: '1.2.0' }))).toBe('NOT_FOUND');
    expect(await stored(event.data.approvalId)).toEqual(before);
    expect(await eventCount(where, 'ApprovalConsumed')).toBe(0);
    // The right pair still works afterwards.
    expect(await codeOf(consume(where, { approvalId: event.data.approvalId, requestHash: hash('a'), toolVersion: '1.2.0' }))).toBe('OK');
  });

  it('expires undecided approvals with both sweepers running: exactly one ApprovalExpired each', async () => {
    const where = freshScope();
    const counted = await decisionsCounted();
    const events = await Promise.all([0, 1, 2].map(() => requestApproval(where, { expiresInMs: 1_500 })));
    for (const event of events) {
      const document = await settled(event.data.approvalId, 'Expired');
      expect(document.version).toBe(2);
      expect(await appends(event.data.approvalId)).toBe(2);
    }
    expect(await eventCount(where, 'ApprovalExpired')).toBe(events.length);
    // Two sweepers raced for each: the one append that won is the one decision timed.
    expect(await decisionsSince(counted)).toEqual({ expired: 3 });
    const expired = await lastEvent(where, 'ApprovalExpired');
    expect(events.map((event) => approvalEventId(event.data.approvalId, 'ApprovalExpired'))).toContain(expired.metadata.eventId);

    // Deciding an expired approval is refused and changes nothing.
    const target = events[0]?.data.approvalId ?? '';
    const before = await stored(target);
    const run = await cli(where, ['approvals', 'approve', target], { TOOLPLANE_TOKEN: await operatorToken(where) });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^APPROVAL_EXPIRED: /);
    expect(await stored(target)).toEqual(before);
    expect(await eventCount(where, 'ApprovalGranted')).toBe(0);
    expect(await codeOf(consume(where, { approvalId: target, requestHash: hash('a'), toolVersion: '1.2.0' }))).toBe('APPROVAL_EXPIRED');
  });

  it('refuses bad deciders and bad tokens with typed errors, changing nothing and emitting nothing', async () => {
    const where = freshScope();
    const event = await requestApproval(where);
    const approvalId = event.data.approvalId;
    const before = await appeared(event);
    const claims = operatorClaims(where);
    const now = Math.floor(Date.now() / 1000);
    const unsigned = `${base64url.encode(JSON.stringify({ alg: 'none', kid: 'acme-1' }))}.${base64url.encode(
      JSON.stringify({ kind: 'human', tenant: claims.tenant, workspaces: claims.workspaces, roles: claims.roles, sub: claims.principal, aud: 'toolplane', iat: now, exp: now + 600 }),
    )}.`;
    const forger = await generateSigningKeyPair('acme-1');
    const hmac = await new SignJWT({ kind: 'human', tenant: claims.tenant, workspaces: claims.workspaces, roles: claims.roles })
      .setProtectedHeader({ alg: 'HS256', kid: 'acme-1' })
      .setSubject(claims.principal)
      .setAudience('toolplane')
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(new TextEncoder().encode('a shared secret that nobody configured'));

    const cases: { name: string; args: string[]; token?: string; expected: RegExp }[] = [
      { name: 'unknown approval', args: ['approvals', 'approve', randomUUID()], token: await operatorToken(where), expected: /^NOT_FOUND: / },
      { name: 'self-approval by the requesting principal', args: ['approvals', 'approve', approvalId], token: await operatorToken(where, { principal: 'user:bob@acme.example' }), expected: /^AUTHORIZATION_DENIED: / },
      { name: 'self-rejection by the requesting agent', args: ['approvals', 'reject', approvalId, '--reason', 'mine'], token: await operatorToken(where, { principal: 'agent-support' }), expected: /^AUTHORIZATION_DENIED: / },
      { name: 'a human without an approver role', args: ['approvals', 'approve', approvalId], token: await operatorToken(where, { principal: 'user:dave@acme.example', roles: ['viewer'] }), expected: /^AUTHORIZATION_DENIED: / },
      { name: 'a decider of another tenant (its own key)', args: ['approvals', 'approve', approvalId], token: await operatorToken({ tenant: 'globex', workspace: where.workspace }, {}, globexKey), expected: /^AUTHENTICATION_FAILED: / },
      { name: 'another tenant’s claims under this tenant’s kid', args: ['approvals', 'approve', approvalId], token: await operatorToken({ tenant: 'globex', workspace: where.workspace }, {}, acmeKey), expected: /^AUTHENTICATION_FAILED: / },
      { name: 'a token for another workspace', args: ['approvals', 'approve', approvalId], token: await operatorToken({ ...where, workspace: 'elsewhere' }), expected: /^AUTHENTICATION_FAILED: / },
      { name: 'a forged signature', args: ['approvals', 'approve', approvalId], token: await operatorToken(where, {}, forger), expected: /^AUTHENTICATION_FAILED: / },
      {
        name: 'an expired token',
        args: ['approvals', 'approve', approvalId],
        token: await issueToken(claims, acmeKey.privateKey, { kid: 'acme-1', expiresIn: 60, now: new Date(Date.now() - 3_600_000) }),
        expected: /^AUTHENTICATION_FAILED: .*expired/,
      },
      { name: 'an unsigned token', args: ['approvals', 'approve', approvalId], token: unsigned, expected: /^AUTHENTICATION_FAILED: .*unsigned/ },
      { name: 'an HMAC token', args: ['approvals', 'approve', approvalId], token: hmac, expected: /^AUTHENTICATION_FAILED: .*HS256/ },
      { name: 'garbage', args: ['approvals', 'reject', approvalId, '--reason', 'x'], token: 'not-a-token', expected: /^AUTHENTICATION_FAILED: / },
      { name: 'no token at all', args: ['approvals', 'approve', approvalId], expected: /^AUTHENTICATION_FAILED: no operator token/ },
      { name: 'listing with a forged token', args: ['approvals', 'list'], token: await operatorToken(where, {}, forger), expected: /^AUTHENTICATION_FAILED: / },
    ];
    for (const testCase of cases) {
      const run = await cli(where, testCase.args, testCase.token === undefined ? {} : { TOOLPLANE_TOKEN: testCase.token });
      expect(run.code, testCase.name).toBe(1);
      expect(run.stderr, testCase.name).toMatch(testCase.expected);
      if (testCase.token !== undefined) expect(run.stdout + run.stderr, testCase.name).not.toContain(testCase.token);
    }
    // Deciding another tenant's approval from one's own tenant finds nothing there.
    const globex = { tenant: 'globex', workspace: where.workspace };
    const crossTenant = await cli(globex, ['approvals', 'approve', approvalId], { TOOLPLANE_TOKEN: await operatorToken(globex, {}, globexKey) });
    expect(crossTenant.stderr).toMatch(/^NOT_FOUND: /);

    expect(await stored(approvalId)).toEqual(before);
    for (const type of ['ApprovalGranted', 'ApprovalRejected', 'ApprovalConsumed'] as const) expect(await eventCount(where, type)).toBe(0);

    // After all that, a legitimate approver still can.
    const run = await cli(where, ['approvals', 'approve', approvalId], { TOOLPLANE_TOKEN: await operatorToken(where, { principal: 'user:erin@acme.example', roles: ['approver', 'viewer'] }) });
    expect(run.code, run.stderr).toBe(0);
  });

  it('voids pending and granted approvals when the registry suspends or retires their tool version', async () => {
    const where = freshScope();
    const counted = await decisionsCounted();
    const pendingOne = await requestApproval(where, { toolVersion: '1.2.0' });
    const grantedOne = await requestApproval(where, { toolVersion: '1.2.0' });
    const otherVersion = await requestApproval(where, { toolVersion: '1.1.0' });
    const suspended = await requestApproval(where, { toolVersion: '2.0.0' });
    await appeared(pendingOne);
    await appeared(otherVersion);
    await appeared(suspended);
    await grant(where, grantedOne);

    const retired: ToolDescriptorRetired = {
      type: 'ToolDescriptorRetired',
      data: { toolId: 'github.delete_repo', toolVersion: '1.2.0', reason: 'Superseded' },
      metadata: { eventId: randomUUID(), ...where, occurredAt: new Date().toISOString(), actor: 'user:ops@acme.example' },
    };
    await publish(messaging, { subject: subjectOfEvent(retired), schema: ToolDescriptorRetired, message: retired, msgId: retired.metadata.eventId });
    const changed: McpToolDefinitionChanged = {
      type: 'McpToolDefinitionChanged',
      data: { serverId: randomUUID(), toolName: 'delete_repo', change: 'Changed', previousDefinitionHash: hash('c'), definitionHash: hash('d'), toolId: 'github.delete_repo', toolVersion: '2.0.0' },
      metadata: { eventId: randomUUID(), ...where, occurredAt: new Date().toISOString() },
    };
    await publish(messaging, { subject: subjectOfEvent(changed), schema: McpToolDefinitionChanged, message: changed, msgId: changed.metadata.eventId });

    expect(await settled(pendingOne.data.approvalId, 'Voided')).toMatchObject({ voidReason: 'Superseded' });
    expect(await settled(grantedOne.data.approvalId, 'Voided')).toMatchObject({ voidReason: 'Superseded' });
    expect(await settled(suspended.data.approvalId, 'Voided')).toMatchObject({ voidReason: 'DefinitionChanged' });
    expect(await eventCount(where, 'ApprovalVoided')).toBe(3);
    // Voiding the granted one is no second decision: two voided from Pending, one granted.
    expect(await decisionsSince(counted)).toEqual({ granted: 1, voided: 2 });
    const voided = (await lastEvent(where, 'ApprovalVoided')) as Extract<ApprovalOutcomeEvent, { type: 'ApprovalVoided' }>;
    expect([retired.metadata.eventId, changed.metadata.eventId]).toContain(voided.metadata.causationId);

    expect(await codeOf(consume(where, { approvalId: grantedOne.data.approvalId, requestHash: hash('a'), toolVersion: '1.2.0' }))).toBe('CONFLICT');
    const decide = await cli(where, ['approvals', 'approve', pendingOne.data.approvalId], { TOOLPLANE_TOKEN: await operatorToken(where) });
    expect(decide.stderr).toMatch(/^CONFLICT: .*void/);
    expect((await stored(otherVersion.data.approvalId))?.state).toBe('Pending');
  });

  it('lets exactly one of humans deciding the same approval at once on both replicas win', async () => {
    const where = freshScope();
    const events = await Promise.all([0, 1, 2].map(() => requestApproval(where)));
    const deciders = ['user:alice@acme.example', 'user:erin@acme.example', 'user:frank@acme.example', 'user:gina@acme.example'];
    const tokens = await Promise.all(deciders.map((principal) => operatorToken(where, { principal })));
    for (const event of events) await appeared(event);
    const outcomes = await Promise.all(
      events.map((event) =>
        Promise.all(
          tokens.map((token) =>
            codeOf(
              request(messaging, {
                subject: commandSubject(where, 'approval', 'approve'),
                requestSchema: ApproveApprovalRequest,
                replySchema: ApprovalReply,
                body: { approvalId: event.data.approvalId },
                headers: bearerHeaders(token),
                timeoutMs: 15_000,
              }),
            ),
          ),
        ),
      ),
    );
    for (const codes of outcomes) expect([...codes].sort()).toEqual(['CONFLICT', 'CONFLICT', 'CONFLICT', 'OK']);
    for (const event of events) {
      await settled(event.data.approvalId, 'Granted');
      expect(await appends(event.data.approvalId)).toBe(2);
    }
    expect(await eventCount(where, 'ApprovalGranted')).toBe(events.length);
  });

  it('shows an approval from its stream at once after a command, before the read model has it', async () => {
    const where = freshScope();
    const event = await requestApproval(where);
    await appeared(event);
    const token = await operatorToken(where);
    const approved = await cli(where, ['approvals', 'approve', event.data.approvalId], { TOOLPLANE_TOKEN: token });
    expect(approved.code, approved.stderr).toBe(0);
    // No wait for the projector: show reads the record.
    const shown = await cli(where, ['--json', 'approvals', 'show', event.data.approvalId], { TOOLPLANE_TOKEN: token });
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ state: 'Granted', decidedBy: 'user:alice@acme.example', version: 2 });
  });

  it('times each decision once (whichever replica made it), counts pending approvals from the read model on every replica alike, and counts skipped webhooks', async () => {
    const where = freshScope();
    const decisionsBefore = await decisionsCounted();
    const webhooksBefore = await acrossReplicas('toolplane_approval_webhook_deliveries_total', 'outcome');
    const pendingBefore = await pendingInReadModel();
    const toGrant = await requestApproval(where);
    const toReject = await requestApproval(where);
    await appeared(toGrant);
    await appeared(toReject);
    expect(await pendingGauges()).toEqual([pendingBefore + 2, pendingBefore + 2]);

    await grant(where, toGrant);
    const run = await cli(where, ['approvals', 'reject', toReject.data.approvalId, '--reason', 'not now'], { TOOLPLANE_TOKEN: await operatorToken(where) });
    expect(run.code, run.stderr).toBe(0);
    await settled(toReject.data.approvalId, 'Rejected');
    // Deciding again (the same human, a retried request) appends nothing and is not a second decision.
    expect((await cli(where, ['approvals', 'approve', toGrant.data.approvalId], { TOOLPLANE_TOKEN: await operatorToken(where) })).code).toBe(0);
    expect(await consume(where, { approvalId: toGrant.data.approvalId, requestHash: hash('a'), toolVersion: '1.2.0' })).toMatchObject({ approval: { state: 'Consumed' } });

    expect(await decisionsSince(decisionsBefore)).toEqual({ granted: 1, rejected: 1 });
    expect(await pendingGauges()).toEqual([pendingBefore, pendingBefore]);
    // No tenant has a webhook here: each request is skipped once, on whichever replica took it.
    const webhooks = await waitFor('both webhook deliveries skipped', async () => {
      const delta = counterDelta(webhooksBefore, await acrossReplicas('toolplane_approval_webhook_deliveries_total', 'outcome'));
      return (delta.get('skipped') ?? 0) >= 2 ? delta : undefined;
    });
    expect(Object.fromEntries([...webhooks].filter(([, count]) => count !== 0))).toEqual({ skipped: 2 });
  });

  it('publishes what a writer appended even when it died right after the append, once however often it is relayed', async () => {
    const where = freshScope();
    const event = await requestApproval(where);
    const document = await appeared(event);
    // What a replica leaves behind when it dies right after its append: Granted on the approval stream, nothing else.
    const store = jetStreamEventStore(messaging, { stream: approvalStream.name, subjectOf: approvalStreamSubject, schema: ApprovalStreamEvent });
    const { version } = await store.readStream(document.approvalId);
    const decidedAt = new Date().toISOString();
    const orphan: ApprovalOutcomeEvent = {
      type: 'ApprovalGranted',
      data: { approvalId: document.approvalId, requestHash: document.requestHash, decidedBy: 'user:alice@acme.example' },
      metadata: {
        eventId: approvalEventId(document.approvalId, 'ApprovalGranted'),
        ...where,
        occurredAt: decidedAt,
        correlationId: document.correlationId,
        actor: 'user:alice@acme.example',
        invocationId: document.invocationId,
        toolCallId: document.toolCallId,
        toolId: document.toolId,
        toolVersion: document.toolVersion,
      },
    };
    await store.appendToStream(document.approvalId, [orphan], { expectedVersion: version });
    expect(await settled(document.approvalId, 'Granted')).toMatchObject({ decidedBy: 'user:alice@acme.example', decidedAt, version: 2 });
    expect(await eventCount(where, 'ApprovalGranted')).toBe(1);
    expect((await lastEvent(where, 'ApprovalGranted')).metadata.eventId).toBe(orphan.metadata.eventId);
    // A relay redelivered after it had published (its ack lost) sends the same id again: the copy is dropped.
    await publish(messaging, { subject: subjectOfEvent(orphan), schema: LifecycleEvent, message: orphan, msgId: eventMsgId(orphan) });
    expect(await eventCount(where, 'ApprovalGranted')).toBe(1);
  });
});
