import { createHmac, timingSafeEqual } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ApprovalRequestedNotification, type ApprovalRequested } from '@toolplane/contracts';
import { approvalRequestedNotification, consoleUrlOf, decideWebhookDelivery, expiredBeforeDelivery, webhookRouteFor, webhookSignature } from './approval-webhook.js';

const scope = { tenant: 'acme', workspace: 'support' };

function requested(overrides: Partial<ApprovalRequested['metadata']> = {}): ApprovalRequested {
  return {
    type: 'ApprovalRequested',
    data: {
      approvalId: '0b7c6a34-52d1-4f0e-9d6a-3c1f8e2b9a71',
      requestHash: 'a'.repeat(64),
      sideEffectClass: 'DESTRUCTIVE',
      riskClass: 'HIGH',
      summary: 'Delete repository acme/old-site (token ghp_not_for_webhooks)',
      approvers: { roles: ['approver'], principals: ['user:carol@acme.example'] },
      expiresAt: '2030-01-01T10:10:00.000Z',
    },
    metadata: {
      eventId: '5e0d3f9c-8d4b-4a57-b1a4-0f2f5d3c9e11',
      ...scope,
      principal: 'user:bob@acme.example',
      agentId: 'agent-support',
      agentRevision: '7',
      toolCallId: 'call_1234',
      invocationId: '7f0b6f1e-2a7c-4c1e-8d3f-1b2a3c4d5e6f',
      attempt: 1,
      sequence: 4,
      toolId: 'github.delete_repo',
      toolVersion: '1.2.0',
      flowRunId: 'run-9',
      correlationId: 'corr-42',
      occurredAt: '2030-01-01T10:00:00.000Z',
      ...overrides,
    },
  };
}

describe('the approval-requested notification', () => {
  it('names the call, its scope and where to decide it, and fits the contract', () => {
    const outcome = approvalRequestedNotification(requested(), scope, { consolePublicUrl: 'https://console.acme.example/' });
    expect(outcome.kind).toBe('notify');
    if (outcome.kind !== 'notify') return;
    expect(ApprovalRequestedNotification.parse(outcome.notification)).toEqual(outcome.notification);
    expect(outcome.notification).toEqual({
      type: 'approval.requested',
      id: '5e0d3f9c-8d4b-4a57-b1a4-0f2f5d3c9e11',
      occurredAt: '2030-01-01T10:00:00.000Z',
      tenant: 'acme',
      workspace: 'support',
      approvalId: '0b7c6a34-52d1-4f0e-9d6a-3c1f8e2b9a71',
      toolCallId: 'call_1234',
      toolId: 'github.delete_repo',
      toolVersion: '1.2.0',
      sideEffectClass: 'DESTRUCTIVE',
      riskClass: 'HIGH',
      requestedBy: 'user:bob@acme.example',
      agentId: 'agent-support',
      agentRevision: '7',
      flowRunId: 'run-9',
      expiresAt: '2030-01-01T10:10:00.000Z',
      consoleUrl: 'https://console.acme.example/w/support/approvals#approval-0b7c6a34-52d1-4f0e-9d6a-3c1f8e2b9a71',
    });
  });

  it('never carries the summary, the approvers, the request hash or the correlation', () => {
    const outcome = approvalRequestedNotification(requested(), scope, {});
    if (outcome.kind !== 'notify') throw new Error('expected a notification');
    const text = JSON.stringify(outcome.notification);
    for (const absent of ['ghp_not_for_webhooks', 'Delete repository', 'carol', 'a'.repeat(64), 'corr-42', 'summary', 'arguments']) expect(text).not.toContain(absent);
    expect(outcome.notification).not.toHaveProperty('consoleUrl');
  });

  it('leaves out what the call does not have', () => {
    const event = requested();
    const { agentId: _agent, agentRevision: _revision, flowRunId: _run, ...metadata } = event.metadata;
    const outcome = approvalRequestedNotification({ ...event, metadata }, scope, {});
    if (outcome.kind !== 'notify') throw new Error('expected a notification');
    expect(outcome.notification).not.toHaveProperty('agentId');
    expect(outcome.notification).not.toHaveProperty('agentRevision');
    expect(outcome.notification).not.toHaveProperty('flowRunId');
  });

  it('skips what the approval consumer refuses too: another scope than the subject, no tool version', () => {
    expect(approvalRequestedNotification(requested(), { tenant: 'acme', workspace: 'other' }, {}).kind).toBe('skip');
    expect(approvalRequestedNotification(requested(), { tenant: 'globex', workspace: 'support' }, {}).kind).toBe('skip');
    const { toolVersion: _version, ...unversioned } = requested().metadata;
    expect(approvalRequestedNotification({ ...requested(), metadata: unversioned }, scope, {}).kind).toBe('skip');
  });

  it('links to the approval on the console, whatever the base path', () => {
    expect(consoleUrlOf('https://tp.example/console', 'w-1', 'abc')).toBe('https://tp.example/console/w/w-1/approvals#approval-abc');
    expect(consoleUrlOf('http://127.0.0.1:7108//', 'ws', 'id')).toBe('http://127.0.0.1:7108/w/ws/approvals#approval-id');
  });
});

describe('the webhook signature', () => {
  const secret = 's'.repeat(40);
  const body = '{"type":"approval.requested","id":"x"}';
  const now = new Date('2030-01-01T10:00:00.999Z');

  it('is t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">, as a receiver recomputes it', () => {
    const header = webhookSignature(secret, body, now);
    const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
    expect(match).not.toBeNull();
    const [, t, v1] = match ?? [];
    expect(t).toBe('1893492000');
    const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
    expect(timingSafeEqual(Buffer.from(v1 ?? '', 'hex'), expected)).toBe(true);
  });

  it('changes with the body, the time and the secret', () => {
    const header = webhookSignature(secret, body, now);
    expect(webhookSignature(secret, `${body} `, now)).not.toBe(header);
    expect(webhookSignature(secret, body, new Date(now.getTime() + 1000))).not.toBe(header);
    expect(webhookSignature(`${secret}x`, body, now)).not.toBe(header);
  });
});

describe('webhook routing and delivery decisions', () => {
  const routes: Record<string, { url: string; workspaces?: string[] }> = { acme: { url: 'a', workspaces: ['support'] }, globex: { url: 'g' } };

  it('routes by tenant, and by workspace when the tenant lists some', () => {
    expect(webhookRouteFor(routes, scope)?.url).toBe('a');
    expect(webhookRouteFor(routes, { tenant: 'acme', workspace: 'sales' })).toBeUndefined();
    expect(webhookRouteFor(routes, { tenant: 'globex', workspace: 'anything' })?.url).toBe('g');
    expect(webhookRouteFor(routes, { tenant: 'initech', workspace: 'support' })).toBeUndefined();
    expect(webhookRouteFor(routes, { tenant: 'constructor', workspace: 'support' })).toBeUndefined();
  });

  it('delivers on 2xx, retries anything else until the last delivery, then gives up', () => {
    expect(decideWebhookDelivery({ status: 200 }, 1, 3)).toEqual({ kind: 'delivered' });
    expect(decideWebhookDelivery({ status: 204 }, 3, 3)).toEqual({ kind: 'delivered' });
    expect(decideWebhookDelivery({ status: 500 }, 1, 3)).toEqual({ kind: 'retry', outcome: 'HTTP 500' });
    expect(decideWebhookDelivery({ status: 302 }, 2, 3)).toEqual({ kind: 'retry', outcome: 'HTTP 302' });
    expect(decideWebhookDelivery({ failure: 'request failed: ECONNREFUSED' }, 2, 3)).toEqual({ kind: 'retry', outcome: 'request failed: ECONNREFUSED' });
    expect(decideWebhookDelivery({ status: 503 }, 3, 3)).toEqual({ kind: 'give-up', outcome: 'HTTP 503' });
  });

  it('does not notify about an approval that expired before the delivery', () => {
    const outcome = approvalRequestedNotification(requested(), scope, {});
    if (outcome.kind !== 'notify') throw new Error('expected a notification');
    expect(expiredBeforeDelivery(outcome.notification, new Date('2030-01-01T10:09:59.999Z'))).toBe(false);
    expect(expiredBeforeDelivery(outcome.notification, new Date('2030-01-01T10:10:00.000Z'))).toBe(true);
  });
});
