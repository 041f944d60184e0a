// The approval-requested webhook against real NATS and FerretDB and a real HTTP receiver on loopback: the adapter's
// ApprovalRequested on the events stream, the approval service opening the approval and, on its own consumer,
// POSTing the signed notification to the tenant's receiver; a receiver that fails is retried with the same id.
//
// NATS and FerretDB are this file's own: the webhook consumer is one durable consumer for every approval service on a
// server, and services of other test files (with no webhooks configured) would take and ack this file's events.
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApprovalReply,
  ApprovalRequested,
  ApprovalRequestedNotification,
  ShowApprovalRequest,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  commandSubject,
  eventMsgId,
  streams,
  subjectOfEvent,
  webhookSignedText,
  type Scope,
} from '@toolplane/contracts';
import { bearerHeaders, generateSigningKeyPair, issueToken, type SigningKeyPair } from '@toolplane/auth';
import { connectMessaging, consumerProgress, publish, request, type Messaging } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { eventually, startLocalServers, type LocalServers } from '@toolplane/testing';
import { scrapeCounters } from '@toolplane/testing/bench';
import { approvalConsumers, approvalService } from '../src/mod.js';

const acmeSecret = `acme-${randomUUID()}-${randomUUID()}`;
const globexSecret = `globex-${randomUUID()}-${randomUUID()}`;
const consolePublicUrl = 'https://console.acme.example';
const toleranceSeconds = 5 * 60;

/** One request the receiver got, as it arrived. */
interface Received {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly rawBody: string;
}

/** How the receiver answers a request: a status, after an optional wait the test controls. */
type Answer = { readonly status: number; readonly after?: Promise<void> };

let servers: LocalServers;
let receiver: Server;
let receiverUrl: string;
let key: SigningKeyPair;
let replicas: RunningService[] = [];
let messaging: Messaging;
const received: Received[] = [];
// Per approval id, the answers still to give in order; an approval with none left gets 200.
const scripts = new Map<string, Answer[]>();

async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const rawBody = Buffer.concat(chunks).toString('utf8');
  received.push({ path: req.url ?? '', headers: req.headers, rawBody });
  let approvalId = '';
  try {
    approvalId = String((JSON.parse(rawBody) as { approvalId?: unknown }).approvalId);
  } catch {
    // Not JSON: answered 200 below, and the test's checks of the body fail.
  }
  const next = scripts.get(approvalId)?.shift() ?? { status: 200 };
  await next.after;
  res.writeHead(next.status, { 'content-type': 'text/plain' }).end(next.status === 200 ? 'ok' : 'not now');
}

beforeAll(async () => {
  servers = await startLocalServers('approval-webhooks-');
  receiver = createServer((req, res) => void answer(req, res));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  key = await generateSigningKeyPair('acme-1');
  const env = {
    NATS_URL: servers.natsUrl,
    MONGODB_URL: servers.mongoUrl,
    MONGODB_DATABASE: 'approval_webhooks',
    HTTP_PORT: '0',
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ acme: [key.publicJwk] }),
    APPROVAL_WEBHOOKS: JSON.stringify({
      acme: { url: `${receiverUrl}/hooks/acme`, secret: acmeSecret },
      globex: { url: `${receiverUrl}/hooks/globex`, secret: globexSecret, workspaces: ['listed'] },
    }),
    CONSOLE_PUBLIC_URL: `${consolePublicUrl}/`,
    APPROVAL_WEBHOOK_TIMEOUT_MS: '10000',
  };
  // Two replicas: a notification is delivered by one of them, its redeliveries by either.
  replicas = [await startService(approvalService, { ...env, INSTANCE_ID: 'replica-a' }), await startService(approvalService, { ...env, INSTANCE_ID: 'replica-b' })];
  messaging = await connectMessaging({ url: servers.natsUrl, name: 'approval-webhooks-int-test' });
}, 120_000);

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await messaging?.drain();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  await servers?.stop();
});

/** Publishes the adapter's ApprovalRequested, as the tool adapter does, and returns it with its stream sequence. */
async function requestApproval(where: Scope, approvalId: string = randomUUID()): Promise<{ event: ApprovalRequested; seq: number }> {
  const event: ApprovalRequested = {
    type: 'ApprovalRequested',
    data: {
      approvalId,
      requestHash: 'a'.repeat(64),
      sideEffectClass: 'DESTRUCTIVE',
      riskClass: 'HIGH',
      summary: 'Delete repository acme/old-site with {"confirm": "yes-really"}',
      approvers: { roles: ['approver'], principals: [] },
      expiresAt: new Date(Date.now() + 600_000).toISOString(),
    },
    metadata: {
      eventId: randomUUID(),
      ...where,
      principal: 'user:bob@acme.example',
      agentId: 'agent-support',
      agentRevision: '7',
      toolCallId: `call_${randomUUID().slice(0, 8)}`,
      invocationId: randomUUID(),
      attempt: 1,
      sequence: 4,
      toolId: 'github.delete_repo',
      toolVersion: '1.2.0',
      correlationId: 'run-42',
      occurredAt: new Date().toISOString(),
    },
  };
  const ack = await publish(messaging, { subject: subjectOfEvent(event), schema: ApprovalRequested, message: event, msgId: eventMsgId(event) });
  return { event, seq: ack.seq };
}

function requestsFor(approvalId: string): Received[] {
  return received.filter((r) => r.rawBody.includes(approvalId));
}

/** Verifies a request as a receiver would: HMAC over "<t>.<raw body>", compared in constant time, t within 5 minutes. */
function verifySignature(r: Received, secret: string): void {
  const header = r.headers[WEBHOOK_SIGNATURE_HEADER.toLowerCase()];
  expect(typeof header).toBe('string');
  const fields = new Map(String(header).split(',').map((part) => part.split('=', 2) as [string, string]));
  const t = Number(fields.get('t'));
  const v1 = Buffer.from(fields.get('v1') ?? '', 'hex');
  expect(Number.isInteger(t)).toBe(true);
  expect(Math.abs(Date.now() / 1000 - t)).toBeLessThanOrEqual(toleranceSeconds);
  const expected = createHmac('sha256', secret).update(webhookSignedText(t, r.rawBody)).digest();
  expect(v1.length).toBe(expected.length);
  expect(timingSafeEqual(v1, expected)).toBe(true);
}

async function showApproval(where: Scope, approvalId: string) {
  const token = await issueToken({ kind: 'human', tenant: where.tenant, workspaces: [where.workspace], principal: 'user:alice@acme.example', roles: ['approver'] }, key.privateKey, {
    kid: key.kid,
    expiresIn: '10m',
  });
  return request(messaging, {
    subject: commandSubject(where, 'approval', 'show'),
    requestSchema: ShowApprovalRequest,
    replySchema: ApprovalReply,
    body: { approvalId },
    headers: bearerHeaders(token),
    timeoutMs: 15_000,
  });
}

/** Waits until the webhook consumer has settled every event up to `seq`. */
async function webhooksSettled(seq: number): Promise<void> {
  await eventually(`the webhook consumer to settle #${seq}`, async () => {
    const progress = await consumerProgress(messaging, streams.events.name, approvalConsumers.webhooks);
    return progress.ackFloor >= seq && progress.ackPending === 0 ? true : undefined;
  }, 20_000);
}

/** The webhook deliveries counted by outcome, summed over the replicas. */
async function deliveriesCounted(): Promise<Record<string, number>> {
  const total: Record<string, number> = {};
  for (const replica of replicas) {
    for (const [outcome, count] of await scrapeCounters(`http://127.0.0.1:${replica.port}/metrics`, 'toolplane_approval_webhook_deliveries_total', 'outcome')) total[outcome] = (total[outcome] ?? 0) + count;
  }
  return total;
}

describe('the approval-requested webhook', () => {
  it('POSTs the signed notification, with no summary or arguments, to the tenant’s receiver', async () => {
    const where = { tenant: 'acme', workspace: `w_${randomUUID().slice(0, 8)}` };
    const { event } = await requestApproval(where);
    const [delivery] = await eventually('the webhook', () => {
      const got = requestsFor(event.data.approvalId);
      return got.length > 0 ? got : undefined;
    }, 20_000);
    if (delivery === undefined) throw new Error('no webhook');

    expect(delivery.path).toBe('/hooks/acme');
    expect(delivery.headers['content-type']).toBe('application/json');
    expect(delivery.headers[WEBHOOK_ID_HEADER.toLowerCase()]).toBe(event.metadata.eventId);
    verifySignature(delivery, acmeSecret);
    // Signed with another tenant's secret it would not verify: the check above can fail.
    expect(() => verifySignature(delivery, globexSecret)).toThrow();

    const notification = ApprovalRequestedNotification.parse(JSON.parse(delivery.rawBody));
    expect(notification).toMatchObject({
      type: 'approval.requested',
      id: event.metadata.eventId,
      tenant: 'acme',
      workspace: where.workspace,
      approvalId: event.data.approvalId,
      toolCallId: event.metadata.toolCallId,
      toolId: 'github.delete_repo',
      toolVersion: '1.2.0',
      sideEffectClass: 'DESTRUCTIVE',
      riskClass: 'HIGH',
      requestedBy: 'user:bob@acme.example',
      expiresAt: event.data.expiresAt,
      consoleUrl: `${consolePublicUrl}/w/${where.workspace}/approvals#approval-${event.data.approvalId}`,
    });
    for (const absent of ['summary', 'arguments', 'yes-really', 'Delete repository', 'requestHash', 'a'.repeat(64)]) expect(delivery.rawBody).not.toContain(absent);
  });

  it('retries a receiver answering 500 twice with the same webhook id, while the approval is already open', async () => {
    const where = { tenant: 'acme', workspace: `w_${randomUUID().slice(0, 8)}` };
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const approvalId = randomUUID();
    // The first answer waits for the test: the approval must be open while the receiver has not answered yet.
    scripts.set(approvalId, [{ status: 500, after: held }, { status: 500 }, { status: 200 }]);
    const { event, seq } = await requestApproval(where, approvalId);

    await eventually('the first delivery', () => (requestsFor(approvalId).length === 1 ? true : undefined), 20_000);
    const shown = await eventually('the approval', () => showApproval(where, approvalId), 20_000);
    expect(shown.approval.state).toBe('Pending');
    expect(requestsFor(approvalId)).toHaveLength(1);
    release();

    const deliveries = await eventually('three deliveries', () => {
      const got = requestsFor(approvalId);
      return got.length >= 3 ? got : undefined;
    }, 20_000);
    await webhooksSettled(seq);
    expect(requestsFor(approvalId)).toHaveLength(3);
    expect(deliveries.map((r) => r.headers[WEBHOOK_ID_HEADER.toLowerCase()])).toEqual([event.metadata.eventId, event.metadata.eventId, event.metadata.eventId]);
    for (const delivery of deliveries) verifySignature(delivery, acmeSecret);
    expect(new Set(deliveries.map((r) => r.rawBody)).size).toBe(1);
  });

  it('sends nothing for a tenant without a webhook, nor for a workspace its tenant does not list', async () => {
    // The test before waited for its deliveries to settle: nothing else is counted meanwhile.
    const before = await deliveriesCounted();
    const unhooked = await requestApproval({ tenant: 'initech', workspace: `w_${randomUUID().slice(0, 8)}` });
    const unlisted = await requestApproval({ tenant: 'globex', workspace: `w_${randomUUID().slice(0, 8)}` });
    const listed = await requestApproval({ tenant: 'globex', workspace: 'listed' });
    await webhooksSettled(Math.max(unhooked.seq, unlisted.seq, listed.seq));
    expect(requestsFor(unhooked.event.data.approvalId)).toEqual([]);
    expect(requestsFor(unlisted.event.data.approvalId)).toEqual([]);
    // The same run does deliver the listed workspace's, to globex's receiver with globex's secret.
    const [delivery] = requestsFor(listed.event.data.approvalId);
    expect(delivery?.path).toBe('/hooks/globex');
    if (delivery) verifySignature(delivery, globexSecret);
    const after = await deliveriesCounted();
    const moved = Object.fromEntries(Object.entries(after).flatMap(([outcome, count]) => (count === (before[outcome] ?? 0) ? [] : [[outcome, count - (before[outcome] ?? 0)]])));
    expect(moved).toEqual({ skipped: 2, delivered: 1 });
  });
});
