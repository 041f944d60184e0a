// The console's routes against a real nats-server, with small responders in place of the approval service, the audit
// projector and the adapter (their real behaviour is theirs to test; the browser run in test/ drives the real ones).
// Checked here: sign-in and its cookie, redirects without a session, CSRF refusals that send nothing, the service's
// typed error shown verbatim, the security headers, and the live stream reacting to ApprovalRequested on the stream.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ZodType } from 'zod';
import { bearerTokenOf, generateSigningKeyPair, issueToken, type SigningKeyPair } from '@toolplane/auth';
import {
  ApprovalRejected,
  ApprovalRequested,
  ToolplaneError,
  adapterCommandSchemas,
  approvalCommandSchemas,
  auditCommandSchemas,
  commandSubject,
  eventMsgId,
  streams,
  subjectOfEvent,
  type ApprovalView,
  type FlowJournalEntry,
  type OperatorClaims,
  type RuntimeToolCallSummary,
} from '@toolplane/contracts';
import { connectMessaging, ensureStream, publish, serve, type Messaging, type ServeHandle } from '@toolplane/messaging';
import { eventually, testScope, uniqueName } from '@toolplane/testing';
import { CONTENT_SECURITY_POLICY, startConsole, type RunningConsole } from '../src/mod.js';
import { pendingApproval } from './approvals.js';

const infra = testScope('console');
const tenant = uniqueName('t_console');
const scope = { tenant, workspace: 'main' };
const sessionKey = randomBytes(32).toString('base64url');

let key: SigningKeyPair;
let messaging: Messaging;
let console_: RunningConsole;
let stopped = false;
const responders: ServeHandle[] = [];
/** Subjects of every command request sent in this file's tenant. */
const sent: string[] = [];
/** The tokens the responders were sent, by operation. */
const tokensSeen = new Map<string, string | undefined>();

/** What the stand-in approval service holds. */
const approvals = new Map<string, ApprovalView>();
/** What the read model still lists although the record moved on (it may lag the approval service by a moment). */
const lagging = new Map<string, ApprovalView>();
/** The listCalls requests the stand-in audit projector was sent. */
const callQueries: unknown[] = [];
/** Approve requests for these ids fail with this error, as the real service would refuse them. */
const refusals = new Map<string, ToolplaneError>();

const alice: OperatorClaims = { kind: 'human', tenant, workspaces: ['main', 'ops'], principal: 'user:alice@acme.example', roles: ['approver'] };

function operatorToken(claims: OperatorClaims = alice, signer: SigningKeyPair = key): Promise<string> {
  return issueToken(claims, signer.privateKey, { kid: key.kid, expiresIn: '10m' });
}

async function respond(service: 'approval' | 'adapter' | 'audit' | 'flows', operation: string, schemas: { readonly request: ZodType; readonly reply: ZodType }, handler: (body: never) => unknown): Promise<void> {
  responders.push(
    await serve(messaging, {
      subject: commandSubject(scope, service, operation),
      queue: `${service}-${operation}`,
      requestSchema: schemas.request,
      replySchema: schemas.reply,
      handler: (body, context) => {
        tokensSeen.set(`${service}.${operation}`, bearerTokenOf(context.headers));
        return Promise.resolve(handler(body as never));
      },
    }),
  );
}

function url(path: string): string {
  return `${console_.url}${path}`;
}

/** The console's samples of a metric, keyed by their labels (all but `service`) as `name=value,…`. */
async function samplesOf(metric: string): Promise<Record<string, number>> {
  const text = await (await fetch(url('/metrics'))).text();
  const samples: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const match = new RegExp(`^${metric}(?:\\{([^}]*)\\})? (\\S+)$`).exec(line);
    if (match === null) continue;
    const labels = [...(match[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)]
      .filter(([, name]) => name !== 'service')
      .map(([, name, value]) => `${name}=${value}`)
      .sort();
    samples[labels.join(',')] = Number(match[2]);
  }
  return samples;
}

/** What the decisions counter gained since `before`, without the series that did not move. */
async function decisionsSince(before: Record<string, number>): Promise<Record<string, number>> {
  const after = await samplesOf('toolplane_console_decisions_total');
  return Object.fromEntries(Object.entries(after).flatMap(([labels, count]) => (count === (before[labels] ?? 0) ? [] : [[labels, count - (before[labels] ?? 0)]])));
}

/** The cookie pairs a response sets (`name=value`), by name. */
function setCookies(res: Response): Map<string, string> {
  return new Map(res.headers.getSetCookie().map((line) => [line.split('=')[0] ?? '', line] as const));
}

function csrfOf(page: string): string {
  const token = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
  if (token === undefined) throw new Error('no CSRF field on the page');
  return token;
}

/** Signs in through the form as a browser would; returns the session cookie pair. */
async function signIn(token: string): Promise<{ cookie: string; response: Response }> {
  const form = await fetch(url('/sign-in'));
  const nonce = (setCookies(form).get('tp_signin') ?? '').split(';')[0] ?? '';
  const body = new URLSearchParams({ _csrf: csrfOf(await form.text()), token });
  const response = await fetch(url('/sign-in'), { method: 'POST', redirect: 'manual', headers: { cookie: nonce, 'content-type': 'application/x-www-form-urlencoded' }, body });
  const cookie = (setCookies(response).get('tp_session') ?? '').split(';')[0] ?? '';
  return { cookie, response };
}

function post(path: string, cookie: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url(path), { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(fields) });
}

/** The server-sent events of a response, one at a time. */
function eventsOf(res: Response): { next: (within?: number) => Promise<{ event: string; data: string }>; cancel: () => Promise<void> } {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const next = async (within = 5_000): Promise<{ event: string; data: string }> => {
    const deadline = Date.now() + within;
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const lines = block.split('\n');
        const event = lines.find((line) => line.startsWith('event: '))?.slice(7);
        if (event === undefined) continue;
        return { event, data: lines.filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n') };
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no event in time');
      const chunk = await Promise.race([reader.read(), new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no event in time')), left))]);
      if (chunk.done) throw new Error('the stream ended');
      buffer += decoder.decode(chunk.value, { stream: true });
    }
  };
  return { next, cancel: () => reader.cancel() };
}

/** Publishes the adapter's ApprovalRequested for an approval the stand-in service now holds. */
async function requestApproval(approval: ApprovalView, options: { readonly recorded: boolean } = { recorded: true }): Promise<void> {
  if (options.recorded) approvals.set(approval.approvalId, approval);
  const event: ApprovalRequested = {
    type: 'ApprovalRequested',
    data: {
      approvalId: approval.approvalId,
      requestHash: approval.requestHash,
      sideEffectClass: approval.sideEffectClass,
      riskClass: approval.riskClass,
      summary: approval.summary,
      approvers: approval.approvers,
      expiresAt: approval.expiresAt,
    },
    metadata: {
      eventId: randomUUID(),
      tenant,
      workspace: 'main',
      principal: approval.requestedBy,
      toolCallId: approval.toolCallId,
      invocationId: approval.invocationId,
      attempt: 1,
      sequence: 4,
      toolId: approval.toolId,
      toolVersion: approval.toolVersion,
      correlationId: approval.correlationId,
      occurredAt: new Date().toISOString(),
    },
  };
  await publish(messaging, { subject: subjectOfEvent(event), schema: ApprovalRequested, message: event, msgId: eventMsgId(event) });
}

/** Publishes the approval service's ApprovalRejected for an approval the stand-in service now shows rejected. */
async function rejectApproval(approval: ApprovalView): Promise<void> {
  const rejected: ApprovalView = { ...approval, state: 'Rejected', decidedBy: 'user:carol@acme.example', reason: 'not today', version: approval.version + 1 };
  approvals.set(approval.approvalId, rejected);
  const event: ApprovalRejected = {
    type: 'ApprovalRejected',
    data: { approvalId: approval.approvalId, requestHash: approval.requestHash, decidedBy: 'user:carol@acme.example', reason: 'not today' },
    metadata: {
      eventId: randomUUID(),
      tenant,
      workspace: 'main',
      occurredAt: new Date().toISOString(),
      invocationId: approval.invocationId,
      toolCallId: approval.toolCallId,
      toolId: approval.toolId,
      toolVersion: approval.toolVersion,
    },
  };
  await publish(messaging, { subject: subjectOfEvent(event), schema: ApprovalRejected, message: event, msgId: eventMsgId(event) });
}

/** A call as the audit projector lists it. */
function projectedCall(overrides: Partial<RuntimeToolCallSummary>): RuntimeToolCallSummary {
  const at = new Date().toISOString();
  return { tenant, workspace: 'main', toolCallId: 'tc-1', principal: 'user:bob@acme.example', agentId: 'agent-support', toolId: 'desk.echo', invocationId: randomUUID(), attemptCount: 1, state: 'Observed', firstEventAt: at, lastEventAt: at, correlationId: 'run-42', ...overrides };
}

/** A flow run's journal entry of one step's call. */
function journalEntry(flowRunId: string, type: FlowJournalEntry['type']): FlowJournalEntry {
  const occurredAt = new Date().toISOString();
  return {
    tenant,
    workspace: 'main',
    flowRunId,
    type,
    eventType: type,
    eventId: randomUUID(),
    occurredAt,
    toolCallId: 'tc-step-1',
    invocationId: randomUUID(),
    attempt: 1,
    sequence: type === 'ToolCallStarted' ? 5 : 6,
    toolId: 'desk.write',
    toolVersion: '1',
    ...(type === 'ToolCallFailed' ? { failure: { code: 'TIMEOUT', message: 'no answer <i>in time</i>', retryable: true } } : {}),
    orderKey: `${occurredAt}|tc-step-1|1|${type === 'ToolCallStarted' ? 5 : 6}`,
  };
}

beforeAll(async () => {
  key = await generateSigningKeyPair('console-operators-1');
  messaging = await connectMessaging({ url: infra.natsUrl, name: 'console-int-test' });
  await ensureStream(messaging, streams.events);
  const observer = messaging.connection.subscribe(`tp.v1.cmd.${tenant}.>`);
  void (async () => {
    for await (const message of observer) sent.push(message.subject);
  })();

  await respond('approval', 'list', approvalCommandSchemas.list, () => ({ items: [...approvals.values(), ...lagging.values()].filter((a) => a.state === 'Pending'), next: null }));
  await respond('approval', 'show', approvalCommandSchemas.show, (body: { approvalId: string }) => {
    const approval = approvals.get(body.approvalId);
    if (approval === undefined) throw new ToolplaneError('NOT_FOUND', `no approval ${body.approvalId} in ${tenant}/main`);
    return { approval };
  });
  await respond('approval', 'approve', approvalCommandSchemas.approve, (body: { approvalId: string }) => {
    const refusal = refusals.get(body.approvalId);
    if (refusal !== undefined) throw refusal;
    const approval = approvals.get(body.approvalId);
    if (approval === undefined) throw new ToolplaneError('NOT_FOUND', `no approval ${body.approvalId}`);
    const granted: ApprovalView = { ...approval, state: 'Granted', decidedBy: alice.principal, version: approval.version + 1 };
    approvals.set(granted.approvalId, granted);
    return { approval: granted };
  });
  await respond('adapter', 'inspectInvocation', adapterCommandSchemas.inspectInvocation, (body: { toolCallId: string }) => {
    const approval = [...approvals.values()].find((a) => a.toolCallId === body.toolCallId);
    if (approval === undefined) throw new ToolplaneError('NOT_FOUND', `no call ${body.toolCallId}`);
    return {
      toolCallId: body.toolCallId,
      invocationId: approval.invocationId,
      attempt: 1,
      state: 'AwaitingApproval',
      toolId: approval.toolId,
      toolVersion: approval.toolVersion,
      approvalId: approval.approvalId,
      arguments: { text: '{"password":"[REDACTED]","repo":"<b>acme/old-site</b>"}', redacted: ['/password'], truncated: false },
    };
  });
  await respond('audit', 'listCalls', auditCommandSchemas.listCalls, (body: unknown) => {
    callQueries.push(body);
    return { items: [projectedCall({ toolCallId: 'tc-1', toolId: 'desk.echo', state: 'Failed', failure: { code: 'INVALID_ARGUMENT', message: 'the tool said <b>no</b>', retryable: false } })], next: 'page-2' };
  });
  await respond('audit', 'flowJournal', auditCommandSchemas.flowJournal, (body: { flowRunId: string }) => ({
    flowRunId: body.flowRunId,
    entries: [journalEntry(body.flowRunId, 'ToolCallStarted'), journalEntry(body.flowRunId, 'ToolCallFailed')],
    next: null,
  }));
  await respond('audit', 'verifyChain', auditCommandSchemas.verifyChain, () => ({ tenant, ok: true, entries: 3, verifiedThrough: 3, headHash: 'c'.repeat(64) }));
  await messaging.connection.flush();

  console_ = await startConsole({
    NATS_URL: infra.natsUrl,
    HTTP_PORT: '0',
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [tenant]: [key.publicJwk] }),
    CONSOLE_SESSION_KEY: sessionKey,
    CONSOLE_REQUEST_TIMEOUT_MS: '3000',
    CONSOLE_MAX_STREAMS: '2',
    CONSOLE_MAX_BODY_BYTES: '16384',
  });
});

afterAll(async () => {
  if (!stopped) await console_?.stop();
  await Promise.all(responders.map((responder) => responder.stop()));
  await messaging?.drain();
});

describe('signing in', () => {
  it('redirects a page without a session to the sign-in form', async () => {
    for (const path of ['/', '/w/main/approvals', '/w/main/calls', '/w/main/audit']) {
      const res = await fetch(url(path), { redirect: 'manual' });
      expect(res.status, path).toBe(303);
      expect(res.headers.get('location'), path).toBe('/sign-in');
    }
    const forged = await fetch(url('/w/main/approvals'), { redirect: 'manual', headers: { cookie: 'tp_session=v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } });
    expect(forged.headers.get('location')).toBe('/sign-in');
  });

  it('serves the form with the security headers and no inline code', async () => {
    const res = await fetch(url('/sign-in'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const page = await res.text();
    expect(page).toContain('<form id="sign-in" method="post" action="/sign-in">');
    expect(page).toContain('<textarea id="token" name="token"');
    expect(page).toContain('<input type="file" id="token-file"');
    expect(page).not.toMatch(/<script>|<style|\sstyle=|\son[a-z]+=/);
    const script = await fetch(url('/assets/console.js'));
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).toContain('EventSource');
  });

  it('refuses a bad token with 401 and AUTHENTICATION_FAILED, setting no session', async () => {
    const stranger = await generateSigningKeyPair('stranger');
    const { cookie, response } = await signIn(await issueToken(alice, stranger.privateKey, { kid: key.kid, expiresIn: '10m' }));
    expect(response.status).toBe(401);
    expect(cookie).toBe('');
    expect(await response.text()).toMatch(/<p class="alert" role="alert">AUTHENTICATION_FAILED: token refused: the signature does not verify<\/p>/);
  });

  it('refuses a sign-in form without its anti-forgery token', async () => {
    const res = await fetch(url('/sign-in'), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: await operatorToken() }) });
    expect(res.status).toBe(403);
    expect(res.headers.getSetCookie().some((line) => line.startsWith('tp_session='))).toBe(false);
  });

  it('sets a sealed HttpOnly SameSite=Strict cookie that lives no longer than the token, and lands on the approvals', async () => {
    const { response } = await signIn(await operatorToken());
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/w/main/approvals');
    const line = setCookies(response).get('tp_session') ?? '';
    expect(line).toMatch(/^tp_session=v1\.[A-Za-z0-9_-]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict$/);
    expect(Number(/Max-Age=(\d+)/.exec(line)?.[1])).toBeLessThanOrEqual(600);
    expect(line).not.toContain(alice.principal);
  });
});

describe('the approvals page and decisions', () => {
  let token: string;
  let cookie: string;
  beforeAll(async () => {
    token = await operatorToken();
    cookie = (await signIn(token)).cookie;
  });

  it('lists pending approvals with the argument preview, escaped, and the forms for an approver', async () => {
    const approval = pendingApproval({ tenant, summary: 'Delete <script>alert(1)</script>' });
    approvals.set(approval.approvalId, approval);
    const res = await fetch(url('/w/main/approvals'), { headers: { cookie } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    const page = await res.text();
    expect(page).toContain(`id="approval-${approval.approvalId}"`);
    expect(page).toContain('&lt;b&gt;acme/old-site&lt;/b&gt;');
    expect(page).not.toContain('<script>alert');
    expect(page).toContain(`action="/w/main/approvals/${approval.approvalId}/approve"`);
    // Read as the operator: the services authorize the console's requests as they would the CLI's.
    expect(tokensSeen.get('approval.list')).toBe(token);
    expect(tokensSeen.get('adapter.inspectInvocation')).toBe(token);
  });

  it('refuses a decision without its CSRF token with 403, and sends nothing', async () => {
    const approval = pendingApproval({ tenant });
    approvals.set(approval.approvalId, approval);
    await messaging.connection.flush();
    const before = sent.length;
    const counted = await samplesOf('toolplane_console_decisions_total');
    const res = await post(`/w/main/approvals/${approval.approvalId}/approve`, cookie, { reason: 'ok' });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('role="alert">AUTHORIZATION_DENIED: ');
    const page = await (await fetch(url('/w/main/approvals'), { headers: { cookie } })).text();
    const foreign = await post(`/w/main/approvals/${approval.approvalId}/approve`, cookie, { _csrf: csrfOf(page), reason: 'ok' }, { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' });
    expect(foreign.status).toBe(403);
    const otherSession = (await signIn(await operatorToken())).cookie;
    const swapped = await post(`/w/main/approvals/${approval.approvalId}/approve`, otherSession, { _csrf: csrfOf(page), reason: 'ok' });
    expect(swapped.status).toBe(403);
    await messaging.connection.flush();
    expect(sent.slice(before).filter((subject) => subject.endsWith('.approval.approve'))).toEqual([]);
    expect(approvals.get(approval.approvalId)?.state).toBe('Pending');
    // A forged form is no decision: nothing counted.
    expect(await decisionsSince(counted)).toEqual({});
  });

  it('sends a decision with the operator’s token and shows the outcome', async () => {
    const approval = pendingApproval({ tenant });
    approvals.set(approval.approvalId, approval);
    const page = await (await fetch(url('/w/main/approvals'), { headers: { cookie } })).text();
    const counted = await samplesOf('toolplane_console_decisions_total');
    const res = await post(`/w/main/approvals/${approval.approvalId}/approve`, cookie, { _csrf: csrfOf(page), reason: 'looks right' });
    expect(res.status).toBe(303);
    expect(await decisionsSince(counted)).toEqual({ 'decision=approve,outcome=ok': 1 });
    expect(res.headers.get('location')).toBe(`/w/main/approvals?decided=${approval.approvalId}`);
    expect(approvals.get(approval.approvalId)?.state).toBe('Granted');
    expect(tokensSeen.get('approval.approve')).toBe(token);
    const after = await (await fetch(url(res.headers.get('location') ?? ''), { headers: { cookie } })).text();
    expect(after).toContain(`<p class="flash" role="status">Approval ${approval.approvalId} granted.</p>`);
  });

  it('shows the approval service’s typed error verbatim with its status', async () => {
    const approval = pendingApproval({ tenant });
    approvals.set(approval.approvalId, approval);
    refusals.set(approval.approvalId, new ToolplaneError('CONFLICT', `approval ${approval.approvalId} is Granted already (by user:carol@acme.example) & cannot be decided again`));
    const page = await (await fetch(url('/w/main/approvals'), { headers: { cookie } })).text();
    const counted = await samplesOf('toolplane_console_decisions_total');
    const res = await post(`/w/main/approvals/${approval.approvalId}/approve`, cookie, { _csrf: csrfOf(page) });
    expect(res.status).toBe(409);
    expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    expect(await res.text()).toContain(`<p class="alert" role="alert">CONFLICT: approval ${approval.approvalId} is Granted already (by user:carol@acme.example) &amp; cannot be decided again</p>`);
    refusals.set(approval.approvalId, new ToolplaneError('AUTHORIZATION_DENIED', 'user:alice@acme.example may not decide this approval'));
    const denied = await post(`/w/main/approvals/${approval.approvalId}/approve`, cookie, { _csrf: csrfOf(page) });
    expect(denied.status).toBe(403);
    expect(await denied.text()).toContain('role="alert">AUTHORIZATION_DENIED: user:alice@acme.example may not decide this approval</p>');
    // A rejection without its reason is refused by the console itself, before anything is sent.
    const unexplained = await post(`/w/main/approvals/${approval.approvalId}/reject`, cookie, { _csrf: csrfOf(page), reason: ' ' });
    expect(unexplained.status).toBe(400);
    expect(await decisionsSince(counted)).toEqual({ 'decision=approve,outcome=CONFLICT': 1, 'decision=approve,outcome=AUTHORIZATION_DENIED': 1, 'decision=reject,outcome=INVALID_ARGUMENT': 1 });
  });

  it('refuses a form body over the bound with 413', async () => {
    const page = await (await fetch(url('/w/main/approvals'), { headers: { cookie } })).text();
    const res = await post(`/w/main/approvals/${randomUUID()}/approve`, cookie, { _csrf: csrfOf(page), reason: 'x'.repeat(20_000) });
    expect(res.status).toBe(413);
  });

  it('refuses a workspace the token does not cover', async () => {
    const res = await fetch(url('/w/elsewhere/approvals'), { headers: { cookie }, redirect: 'manual' });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('role="alert">AUTHORIZATION_DENIED: your operator token does not cover workspace elsewhere</p>');
  });

  it('lists calls with the page’s filters as the audit projector’s query, escaped, with the next page kept filtered', async () => {
    const res = await fetch(url('/w/main/calls?state=Observed&tool=desk.echo&agent=agent-support&run=run-7'), { headers: { cookie } });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(callQueries.at(-1)).toEqual({ state: 'Observed', toolId: 'desk.echo', agentId: 'agent-support', flowRunId: 'run-7', limit: 50 });
    expect(page).toContain('<table id="calls">');
    expect(page).toContain('<tr data-tool-call-id="tc-1">');
    expect(page).toContain('<a href="/w/main/calls/tc-1">tc-1</a>');
    expect(page).toContain('the tool said &lt;b&gt;no&lt;/b&gt;');
    expect(page).not.toContain('<b>no</b>');
    expect(page).toMatch(/href="\/w\/main\/calls\?[^"]*after=page-2/);
    expect(page).toMatch(/href="\/w\/main\/calls\?[^"]*tool=desk.echo/);
    // A filter the projector would refuse is refused on the page, and nothing is asked.
    const before = callQueries.length;
    const bad = await fetch(url('/w/main/calls?state=Nonsense'), { headers: { cookie } });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/role="alert"[^>]*>[^<]*INVALID_ARGUMENT/);
    expect(callQueries.length).toBe(before);
  });

  it('shows a flow run’s journal, escaped, and says when FlowRunner cannot tell its state', async () => {
    const res = await fetch(url('/w/main/runs/run-7'), { headers: { cookie } });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('<table id="journal">');
    expect(page.match(/<a href="\/w\/main\/calls\/tc-step-1">/g)?.length).toBe(2);
    expect(page).toContain('TIMEOUT: no answer &lt;i&gt;in time&lt;/i&gt;');
    // No FlowRunner answers in this test: the journal stands on its own.
    expect(page).toMatch(/<dd id="run-state">unavailable: [A-Z_]+<\/dd>/);
  });

  it('shows the audit chain’s verdict', async () => {
    const page = await (await fetch(url('/w/main/audit'), { headers: { cookie } })).text();
    expect(page).toContain('<strong id="chain-status" class="intact">intact</strong>');
  });
});

describe('the live pending list', () => {
  let cookie: string;
  beforeAll(async () => {
    cookie = (await signIn(await operatorToken())).cookie;
  });

  it('refuses a stream without a session', async () => {
    const res = await fetch(url('/w/main/approvals/events'));
    expect(res.status).toBe(401);
    await res.body?.cancel();
  });

  it('sends the list on open and a new approval within a second of its ApprovalRequested', async () => {
    const res = await fetch(url('/w/main/approvals/events'), { headers: { cookie, accept: 'text/event-stream' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    const events = eventsOf(res);
    try {
      const first = await events.next();
      expect(first.event).toBe('pending');
      expect(await samplesOf('toolplane_console_live_streams')).toEqual({ '': 1 });

      const approval = pendingApproval({ tenant, requestedAt: new Date().toISOString(), summary: 'Send the newsletter' });
      const started = Date.now();
      await requestApproval(approval);
      const update = await events.next(5_000);
      const elapsed = Date.now() - started;
      expect(update.event).toBe('pending');
      expect(update.data).toContain(`id="approval-${approval.approvalId}"`);
      expect(update.data).toContain('Send the newsletter');
      expect(update.data).toContain('<pre class="arguments">');
      expect(update.data).toContain(`action="/w/main/approvals/${approval.approvalId}/approve"`);
      expect(elapsed).toBeLessThan(1_000);

      // Decided elsewhere: the stream takes it out once the service says so.
      await rejectApproval(approval);
      const removed = await events.next(5_000);
      expect(removed.data).not.toContain(`id="approval-${approval.approvalId}"`);
    } finally {
      await events.cancel();
    }
  });

  it('leaves out of the first list an approval the lagging read model still shows pending but its record shows decided', async () => {
    const decided = pendingApproval({ tenant, requestedAt: new Date().toISOString(), summary: 'Decided a moment ago' });
    approvals.set(decided.approvalId, { ...decided, state: 'Granted', decidedBy: 'user:carol@acme.example', version: 2 });
    lagging.set(decided.approvalId, decided);
    const still = pendingApproval({ tenant, requestedAt: new Date().toISOString(), summary: 'Still waiting' });
    approvals.set(still.approvalId, still);
    const res = await fetch(url('/w/main/approvals/events'), { headers: { cookie } });
    const events = eventsOf(res);
    try {
      const first = await events.next();
      expect(first.data).toContain(`id="approval-${still.approvalId}"`);
      expect(first.data).not.toContain(`id="approval-${decided.approvalId}"`);
    } finally {
      await events.cancel();
      lagging.delete(decided.approvalId);
    }
  });

  it('reads an approval the service records after its event arrives (NOT_FOUND at first)', async () => {
    const res = await fetch(url('/w/main/approvals/events'), { headers: { cookie } });
    const events = eventsOf(res);
    try {
      await events.next();
      const approval = pendingApproval({ tenant, requestedAt: new Date().toISOString() });
      // The event is on the stream before the approval service has recorded the approval.
      await requestApproval(approval, { recorded: false });
      setTimeout(() => approvals.set(approval.approvalId, approval), 400);
      const update = await events.next(5_000);
      expect(update.data).toContain(`id="approval-${approval.approvalId}"`);
    } finally {
      await events.cancel();
    }
  });

  it('answers 503 past its stream bound, and ends open streams when the console stops', async () => {
    const opened = [
      await fetch(url('/w/main/approvals/events'), { headers: { cookie } }),
      await fetch(url('/w/main/approvals/events'), { headers: { cookie } }),
    ];
    const streams = opened.map(eventsOf);
    await Promise.all(streams.map((stream) => stream.next()));
    await eventually('both streams counted', async () => {
      const third = await fetch(url('/w/main/approvals/events'), { headers: { cookie } });
      await third.body?.cancel();
      return third.status === 503 ? true : undefined;
    }, 5_000);
    expect(await samplesOf('toolplane_console_live_streams')).toEqual({ '': 2 });
    stopped = true;
    expect(await console_.stop()).toBe(true);
    for (const stream of streams) await expect(stream.next(2_000)).rejects.toThrow('the stream ended');
  });
});
