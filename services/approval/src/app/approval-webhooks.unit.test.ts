import { describe, expect, it } from 'vitest';
import { WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, eventSubject, hasErrorCode, isRetryable, type ApprovalRequested } from '@toolplane/contracts';
import type { Logger } from '@toolplane/service-kit';
import type { WebhookPost } from '../adapters/webhook-sender.js';
import type { WebhookResponse } from '../core/approval-webhook.js';
import { WebhookSecret } from '../webhook-settings.js';
import { notifyApprovalRequested, webhookMaxDeliveries, type ApprovalWebhookRuntime, type WebhookDeliveryOutcome } from './approval-webhooks.js';

const secret = 'whsec_0123456789abcdefghijklmnopqrstuvwxyz';
const scope = { tenant: 'acme', workspace: 'support' };

const event: ApprovalRequested = {
  type: 'ApprovalRequested',
  data: {
    approvalId: '0b7c6a34-52d1-4f0e-9d6a-3c1f8e2b9a71',
    requestHash: 'a'.repeat(64),
    sideEffectClass: 'WRITE',
    riskClass: 'MEDIUM',
    summary: 'Create an issue',
    approvers: { roles: ['approver'], principals: [] },
    expiresAt: '2030-01-01T10:10:00.000Z',
  },
  metadata: {
    eventId: '5e0d3f9c-8d4b-4a57-b1a4-0f2f5d3c9e11',
    ...scope,
    principal: 'user:bob@acme.example',
    toolCallId: 'call_1234',
    invocationId: '7f0b6f1e-2a7c-4c1e-8d3f-1b2a3c4d5e6f',
    attempt: 1,
    sequence: 4,
    toolId: 'github.create_issue',
    toolVersion: '1.0.0',
    correlationId: 'corr-42',
    occurredAt: '2030-01-01T10:00:00.000Z',
  },
};

interface Logged {
  readonly level: string;
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

function harness(answers: WebhookResponse[], overrides: Partial<ApprovalWebhookRuntime> = {}) {
  const posts: WebhookPost[] = [];
  const logged: Logged[] = [];
  const outcomes: WebhookDeliveryOutcome[] = [];
  const log = (level: string) => (fields: Record<string, unknown>, message: string) => logged.push({ level, fields, message });
  const logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') } as unknown as Logger;
  let clock = new Date('2030-01-01T10:00:05.000Z');
  const runtime: ApprovalWebhookRuntime = {
    webhooks: { acme: { url: 'https://hooks.acme.example/tp?key=abc', secret: new WebhookSecret(secret), workspaces: ['support'] } },
    consolePublicUrl: undefined,
    timeoutMs: 1_000,
    clock: () => clock,
    logger,
    post: (post) => {
      posts.push(post);
      return Promise.resolve(answers.shift() ?? { status: 200 });
    },
    onDelivery: (outcome) => outcomes.push(outcome),
    ...overrides,
  };
  const deliver = (deliveryCount: number, where = scope) =>
    notifyApprovalRequested(runtime, { ...event, metadata: { ...event.metadata, ...where } }, { subject: eventSubject(where, 'ApprovalRequested'), signal: new AbortController().signal, deliveryCount });
  return { posts, logged, outcomes, deliver, tick: (ms: number) => (clock = new Date(clock.getTime() + ms)) };
}

describe('notifying a tenant of an approval request', () => {
  it('posts the signed body to the tenant’s receiver with the event id, and nothing to other tenants or workspaces', async () => {
    const { posts, outcomes, deliver } = harness([]);
    await deliver(1);
    await deliver(1, { tenant: 'acme', workspace: 'sales' });
    await deliver(1, { tenant: 'globex', workspace: 'support' });
    expect(posts).toHaveLength(1);
    expect(outcomes).toEqual(['delivered', 'skipped', 'skipped']);
    const [post] = posts;
    expect(post?.url).toBe('https://hooks.acme.example/tp?key=abc');
    expect(post?.timeoutMs).toBe(1_000);
    expect(post?.headers[WEBHOOK_ID_HEADER]).toBe(event.metadata.eventId);
    expect(post?.headers[WEBHOOK_SIGNATURE_HEADER]).toMatch(/^t=1893492005,v1=[0-9a-f]{64}$/);
    expect(JSON.parse(post?.body ?? '{}')).toMatchObject({ type: 'approval.requested', approvalId: event.data.approvalId });
  });

  it('asks for a redelivery (a retryable error) while deliveries are left, signing each attempt afresh', async () => {
    const { posts, logged, outcomes, deliver, tick } = harness([{ status: 500 }, { failure: 'request failed: ECONNREFUSED' }]);
    const first = await deliver(1).catch((error: unknown) => error);
    tick(2_000);
    const second = await deliver(2).catch((error: unknown) => error);
    for (const failure of [first, second]) {
      expect(hasErrorCode(failure) && failure.code === 'TEMPORARY_UNAVAILABLE' && isRetryable(failure.code)).toBe(true);
      expect(String((failure as Error).message)).not.toContain(secret);
      expect(String((failure as Error).message)).not.toContain('key=abc');
    }
    expect((first as Error).message).toContain('HTTP 500');
    expect((second as Error).message).toContain('ECONNREFUSED');
    await deliver(3);
    expect(posts.map((post) => post.headers[WEBHOOK_ID_HEADER])).toEqual([event.metadata.eventId, event.metadata.eventId, event.metadata.eventId]);
    expect(posts[1]?.headers[WEBHOOK_SIGNATURE_HEADER]).toMatch(/^t=1893492007,/);
    expect(outcomes).toEqual(['retry', 'retry', 'delivered']);
    expect(logged.filter((line) => line.level === 'warn')).toEqual([]);
  });

  it('gives up on the last delivery with one warning naming tenant, approval and status, never the secret, URL or body', async () => {
    const { logged, outcomes, deliver } = harness([{ status: 503 }]);
    await expect(deliver(webhookMaxDeliveries)).resolves.toBeUndefined();
    expect(outcomes).toEqual(['given_up']);
    const warnings = logged.filter((line) => line.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields).toMatchObject({ tenant: 'acme', approvalId: event.data.approvalId, status: 'HTTP 503' });
    const text = JSON.stringify(warnings);
    for (const absent of [secret, 'hooks.acme.example', 'approval.requested', 'github.create_issue']) expect(text).not.toContain(absent);
  });

  it('sends nothing for an approval that expired before its delivery', async () => {
    const { posts, outcomes, deliver, tick } = harness([]);
    tick(10 * 60_000);
    await deliver(4);
    expect(posts).toEqual([]);
    expect(outcomes).toEqual(['skipped']);
  });
});
