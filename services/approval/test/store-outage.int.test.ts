// The approval service with its store (a FerretDB of this test's own) stopped: approvals are still opened, shown,
// decided and consumed, and their events published, from the approval stream alone; only list queries fail. Once the
// store is back, the read model catches up with everything decided meanwhile.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApprovalReply,
  ApprovalRequested,
  ApproveApprovalRequest,
  ConsumeApprovalRequest,
  ListApprovalsReply,
  ListApprovalsRequest,
  ShowApprovalRequest,
  commandSubject,
  eventMsgId,
  eventSubject,
  hasErrorCode,
  streams,
  subjectOfEvent,
  type EventType,
  type Scope,
} from '@toolplane/contracts';
import { bearerHeaders, generateSigningKeyPair, issueToken, type SigningKeyPair } from '@toolplane/auth';
import { connectMessaging, publish, request, type Messaging } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { eventually, startPrivateFerretDb, testScope, type PrivateFerretDb } from '@toolplane/testing';
import type { z } from 'zod';
import { approvalService } from '../src/mod.js';

const scope = testScope('approval_outage');
const where: Scope = { tenant: 'acme', workspace: `w_${randomUUID().slice(0, 8)}` };

let key: SigningKeyPair;
let ferret: PrivateFerretDb;
let replicas: RunningService[] = [];
let messaging: Messaging;
let token: string;

beforeAll(async () => {
  key = await generateSigningKeyPair('acme-1');
  ferret = await startPrivateFerretDb('approval-ferretdb-');
  const env = {
    NATS_URL: scope.natsUrl,
    MONGODB_URL: ferret.url,
    MONGODB_DATABASE: scope.dbName,
    // A read of the absent store fails within seconds instead of the driver's 30.
    MONGODB_CONNECT_TIMEOUT_MS: '1500',
    HTTP_PORT: '0',
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ acme: [key.publicJwk] }),
    APPROVAL_SWEEP_INTERVAL_MS: '200',
  };
  replicas = [await startService(approvalService, { ...env, INSTANCE_ID: 'replica-a' }), await startService(approvalService, { ...env, INSTANCE_ID: 'replica-b' })];
  messaging = await connectMessaging({ url: scope.natsUrl, name: 'approval-outage-test' });
  token = await issueToken({ kind: 'human', tenant: where.tenant, workspaces: [where.workspace], principal: 'user:alice@acme.example', roles: ['approver'] }, key.privateKey, { kid: key.kid, expiresIn: '10m' });
}, 120_000);

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await messaging?.drain();
  await ferret?.stop();
});

async function requestApproval(): Promise<string> {
  const event: ApprovalRequested = {
    type: 'ApprovalRequested',
    data: {
      approvalId: randomUUID(),
      requestHash: 'a'.repeat(64),
      sideEffectClass: 'WRITE',
      riskClass: 'MEDIUM',
      summary: 'Create an issue',
      approvers: { roles: ['approver'], principals: [] },
      expiresAt: new Date(Date.now() + 600_000).toISOString(),
    },
    metadata: {
      eventId: randomUUID(),
      ...where,
      principal: 'user:bob@acme.example',
      toolCallId: `call_${randomUUID().slice(0, 8)}`,
      invocationId: randomUUID(),
      attempt: 1,
      sequence: 4,
      toolId: 'github.create_issue',
      toolVersion: '1.0.0',
      correlationId: 'run-1',
      occurredAt: new Date().toISOString(),
    },
  };
  await publish(messaging, { subject: subjectOfEvent(event), schema: ApprovalRequested, message: event, msgId: eventMsgId(event) });
  return event.data.approvalId;
}

function command<Req extends z.ZodType, Res extends z.ZodType>(operation: string, requestSchema: Req, replySchema: Res, body: z.input<Req>): Promise<z.output<Res>> {
  return request(messaging, { subject: commandSubject(where, 'approval', operation), requestSchema, replySchema, body, headers: bearerHeaders(token), timeoutMs: 15_000 });
}

const show = (approvalId: string) => command('show', ShowApprovalRequest, ApprovalReply, { approvalId });
const list = () => command('list', ListApprovalsRequest, ListApprovalsReply, { limit: 50 });

async function eventCount(type: EventType): Promise<number> {
  const subject = eventSubject(where, type);
  const info = await messaging.manager.streams.info(streams.events.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

describe('approval service with its store stopped', () => {
  it('opens, shows, decides and consumes approvals and publishes their events; only list fails; the read model catches up', { timeout: 120_000 }, async () => {
    const before = await requestApproval();
    await eventually('the read model to list the first approval', async () => ((await list()).items.some((item) => item.approvalId === before) ? true : undefined), 20_000);

    await ferret.kill();
    const during = await requestApproval();
    await eventually('the second approval to be opened', async () => ((await show(during).catch(() => undefined))?.approval.state === 'Pending' ? true : undefined), 20_000);
    expect((await command('approve', ApproveApprovalRequest, ApprovalReply, { approvalId: before })).approval.state).toBe('Granted');
    expect((await command('approve', ApproveApprovalRequest, ApprovalReply, { approvalId: during })).approval.state).toBe('Granted');
    const consumed = await command('consume', ConsumeApprovalRequest, ApprovalReply, { approvalId: before, requestHash: 'a'.repeat(64), toolVersion: '1.0.0' });
    expect(consumed.approval).toMatchObject({ state: 'Consumed', version: 3 });
    expect((await show(before)).approval.state).toBe('Consumed');
    await eventually('the events to be published', async () => ((await eventCount('ApprovalGranted')) === 2 && (await eventCount('ApprovalConsumed')) === 1 ? true : undefined), 20_000);
    const listed = await list().then(
      () => 'OK',
      (error: unknown) => (hasErrorCode(error) ? error.code : String(error)),
    );
    expect(['TEMPORARY_UNAVAILABLE', 'TIMEOUT']).toContain(listed);

    await ferret.restart();
    const items = await eventually(
      'the read model to catch up',
      async () => {
        const page = await list().catch(() => undefined);
        const states = Object.fromEntries((page?.items ?? []).map((item) => [item.approvalId, item.state]));
        return states[before] === 'Consumed' && states[during] === 'Granted' ? page?.items : undefined;
      },
      60_000,
      250,
    );
    expect(items).toHaveLength(2);
    expect(await eventCount('ApprovalGranted')).toBe(2);
  });
});
