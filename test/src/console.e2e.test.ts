/// <reference lib="dom" />
// The approval console in a real browser: the five pipeline services as processes over a private NATS and FerretDB,
// the console beside them, and Debian's Chromium driven by playwright-core. An approver signs in by pasting a token,
// sees a gated WRITE call's approval arrive live on the open page and decides it; a reader and the requester see it
// but may not decide it (the approval service says so, word for word as to the CLI); tool output stays text.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page, type Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARGUMENT_REDACTION_MARKER, type Approval, type ApprovalRequested, type InvocationReply, type TenantPolicyInput } from '@toolplane/contracts';
import { runCli, type CliIo } from '@toolplane/cli';
import { FixtureServer, fixtureServerPath } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { startConsole, type HttpProcess } from './http-process.js';
import { agent, e2eTenantPolicy, operator, registerServer, startPlatform, waitFor, waitForTools, type Platform } from './platform-harness.js';

const infra = testScope('console');
const repoRoot = path.resolve(import.meta.dirname, '../..');
const screenshotFile = path.join(repoRoot, 'docs/console-pending-approvals.png');

/** Every page's Content-Security-Policy (design: no inline script or style, nothing from elsewhere). */
const strictCsp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The gated WRITE tool (it counts its executions) and an ungated READ echo, both of one fixture server. */
const gatedTool = 'desk.count_calls';
const echoTool = 'desk.echo';

/** Who signs in: the approver (the harness's operator), a reader without the approver role, the requester holding it. */
const approver = operator;
const reader = { principal: 'user:carol@e2e.example', roles: [] as string[] };
const requester = { principal: agent.principal, roles: ['approver'] };
type Who = { readonly principal: string; readonly roles: readonly string[] };

const policy: TenantPolicyInput = e2eTenantPolicy({
  gateWrites: true,
  // A field only this tenant calls sensitive, redacted beside the well-known credential names.
  sensitiveArgumentFields: ['customerEmail'],
});

let platform: Platform;
let consoleApp: HttpProcess;
let browser: Browser;
const sessions = new Map<string, BrowserContext>();

beforeAll(async () => {
  platform = await startPlatform(infra, 'console');
  await registerServer(platform, 'desk', [process.execPath, fixtureServerPath(FixtureServer.countingEcho)], { COUNT_FILE: platform.countFile('desk') }, [
    { tool: 'echo', flags: ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural'] },
    { tool: 'count_calls', flags: ['--effect', 'write', '--risk', 'medium', '--idempotency', 'none'] },
  ]);
  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: ['desk.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
  await platform.putTenantPolicy(policy);
  await waitForTools(platform, [gatedTool, echoTool]);
  consoleApp = await startConsole(platform);
  // Chromium's sandbox refuses to run as root (CI containers); as any other user it stays on.
  browser = await chromium.launch({ executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium', args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await consoleApp?.stop();
  await platform?.stop();
});

const approvalsPath = () => `/w/${platform.scope.workspace}/approvals`;

/** The console's last log lines, for a failure message. */
const consoleLogs = () => `console stderr:\n${consoleApp.service.stderr()}\nconsole stdout (end):\n${consoleApp.service.stdout().split('\n').slice(-30).join('\n')}`;

/** Waits for a selector, failing with the console's logs. */
async function appear(page: Page, selector: string, timeoutMs = 10_000): Promise<void> {
  try {
    await page.locator(selector).first().waitFor({ state: 'attached', timeout: timeoutMs });
  } catch (error) {
    throw new Error(`${selector} did not appear on ${page.url()} within ${timeoutMs} ms\n${consoleLogs()}`, { cause: error });
  }
}

/** Signs in on the sign-in page by pasting the token into its textarea, as a person would; lands on the approvals page. */
async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(`${consoleApp.url}/sign-in`);
  await page.locator('#sign-in textarea[name="token"]').fill(token);
  try {
    await Promise.all([page.waitForURL((url) => url.pathname === approvalsPath(), { timeout: 10_000 }), page.locator('#sign-in button[type="submit"]').click()]);
  } catch (error) {
    const said = await page.locator('body').textContent({ timeout: 2_000 }).catch(() => null);
    throw new Error(`sign-in did not reach the approvals page (at ${page.url()}: ${said?.trim()})\n${consoleLogs()}`, { cause: error });
  }
}

/** A browser context signed in as `who` (one per principal, kept for the file). */
async function session(who: Who): Promise<BrowserContext> {
  const known = sessions.get(who.principal);
  if (known !== undefined) return known;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await signIn(page, await platform.operatorToken(who));
  await page.close();
  sessions.set(who.principal, context);
  return context;
}

/** Opens the approvals page in `context` and waits until its event stream is open. */
async function openApprovals(context: BrowserContext): Promise<{ page: Page; response: Response }> {
  const page = await context.newPage();
  const response = await page.goto(`${consoleApp.url}${approvalsPath()}`);
  if (response === null) throw new Error('no response to the approvals page');
  expect(new URL(page.url()).pathname).toBe(approvalsPath());
  try {
    await page.locator('#live-status').filter({ hasText: /^\s*live\s*$/ }).waitFor({ timeout: 10_000 });
  } catch (error) {
    throw new Error(`the approvals page never said live\n${consoleLogs()}`, { cause: error });
  }
  return { page, response };
}

interface Parked {
  readonly requested: ApprovalRequested;
  readonly approvalId: string;
  readonly reply: Promise<InvocationReply>;
}

/** Starts a gated WRITE call (not awaited) and waits for its ApprovalRequested event. */
async function parkWrite(key: string, args: Record<string, unknown>): Promise<Parked> {
  const recorder = await platform.recordEvents();
  try {
    const reply = platform.invoke({ toolId: gatedTool, arguments: args, idempotencyKey: key, correlationId: key }, { timeoutMs: 120_000 });
    // Awaited by the test; a test that fails first must not leave an unhandled rejection behind.
    reply.catch(() => undefined);
    const requested = await waitFor('ApprovalRequested', () =>
      recorder.events.find((event): event is ApprovalRequested => event.type === 'ApprovalRequested' && event.metadata.correlationId === key),
    );
    return { requested, approvalId: requested.data.approvalId, reply };
  } finally {
    recorder.stop();
  }
}

/** Waits until the approval service holds the approval (the console reads it from there). */
async function showApproval(approvalId: string): Promise<Approval> {
  return waitFor(`approval ${approvalId}`, async () => {
    const run = await platform.toolplane('--json', 'approvals', 'show', approvalId);
    return run.code === 0 ? (JSON.parse(run.out) as Approval) : undefined;
  });
}

function data(reply: InvocationReply) {
  if (!reply.ok) throw new Error(`the call was refused: ${reply.error.code}: ${reply.error.message}`);
  return reply.data;
}

/** What `toolplane approvals approve ID` prints on stderr for this operator: the refusal the console must show too. */
async function cliRefusal(who: Who, approvalId: string): Promise<string> {
  let out = '';
  let err = '';
  const io: CliIo = {
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    readStdin: () => Promise.resolve(''),
    env: { TOOLPLANE_TOKEN: await platform.operatorToken(who) },
  };
  const { tenant, workspace } = platform.scope;
  const code = await runCli(['--nats', platform.messaging.url, '--tenant', tenant, '--workspace', workspace, '--timeout', '30000', 'approvals', 'approve', approvalId, '--reason', 'by hand'], io);
  expect(code, out).toBe(1);
  return err.trim();
}

interface Posted {
  readonly status: number;
  /** `opaqueredirect` for a 303 (fetch does not follow it here), else `basic`. */
  readonly type: string;
  /** The `[role=alert]` text of the answered page. */
  readonly alert: string | undefined;
}

/**
 * POSTs a decision from inside the page (same origin, the page's own cookie) with fetch, as a script or a forged form
 * on the page would: `csrf` is sent as `_csrf` unless undefined.
 */
async function postDecision(page: Page, approvalId: string, decision: 'approve' | 'reject', csrf: string | undefined): Promise<Posted> {
  return page.evaluate(
    async ({ action, token }) => {
      const body = new URLSearchParams({ reason: 'sent by a script' });
      if (token !== undefined) body.set('_csrf', token);
      const res = await fetch(action, { method: 'POST', body, redirect: 'manual' });
      const text = res.type === 'opaqueredirect' ? '' : await res.text();
      const alert = new DOMParser().parseFromString(text, 'text/html').querySelector('[role="alert"]')?.textContent?.trim();
      return { status: res.status, type: res.type, alert };
    },
    { action: `${approvalsPath()}/${approvalId}/${decision}`, token: csrf },
  );
}

/** The session's CSRF token, from the page's forms (the sign-out form in the header carries it on every page). */
async function csrfOf(page: Page): Promise<string> {
  const token = await page.locator('form input[name="_csrf"]').first().inputValue();
  expect(token).not.toBe('');
  return token;
}

describe('the approval console', () => {
  it('shows a gated call’s approval live on the open page within 1 s, with its details and redacted arguments, and approving it completes the call', { timeout: 120_000 }, async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await context.newPage();
      // A token that is not one is refused on the sign-in page, with the typed code.
      await page.goto(`${consoleApp.url}/sign-in`);
      await page.locator('#sign-in textarea[name="token"]').fill('not-a-token');
      const [refused] = await Promise.all([page.waitForResponse((res) => res.request().method() === 'POST'), page.locator('#sign-in button[type="submit"]').click()]);
      expect(refused.status(), consoleLogs()).toBe(401);
      expect((await page.locator('[role="alert"]').textContent())?.trim()).toMatch(/^AUTHENTICATION_FAILED: /);

      await signIn(page, await platform.operatorToken(approver));
      const cookie = (await context.cookies()).find((candidate) => candidate.name === 'tp_session');
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
      const { page: live, response } = await openApprovals(context);
      await page.close();
      expect(response.headers()['content-security-policy']).toBe(strictCsp);

      // From here on the page must change only by its event stream: no navigation, and the marker set now survives.
      let navigations = 0;
      live.on('framenavigated', (frame) => {
        if (frame === live.mainFrame()) navigations += 1;
      });
      await live.evaluate(() => {
        const seenAt: Record<string, number> = {};
        const marks = window as unknown as { approvalSeenAt: Record<string, number>; pageMarker: string };
        marks.approvalSeenAt = seenAt;
        marks.pageMarker = 'not reloaded';
        const note = () => {
          for (const item of document.querySelectorAll<HTMLElement>('#pending-approvals article.approval')) {
            const id = item.dataset['approvalId'];
            if (id !== undefined && !(id in seenAt)) seenAt[id] = Date.now();
          }
        };
        new MutationObserver(note).observe(document.body, { childList: true, subtree: true });
        note();
      });

      const args = { note: 'rotate the staging database password', password: 'hunter2-never-shown', customerEmail: 'ada@customer.example' };
      const { requested, approvalId, reply } = await parkWrite('console-approve', args);
      const selector = `#approval-${approvalId}`;
      await appear(live, selector, 5_000);
      const seenAt = await live.evaluate((id) => (window as unknown as { approvalSeenAt: Record<string, number> }).approvalSeenAt[id], approvalId);
      expect(seenAt, 'the observer saw the approval arrive').toBeDefined();
      const delayMs = (seenAt as number) - Date.parse(requested.metadata.occurredAt);
      expect(delayMs, `shown ${delayMs} ms after ApprovalRequested`).toBeLessThan(1_000);
      expect(navigations).toBe(0);
      expect(await live.evaluate(() => (window as unknown as { pageMarker?: string }).pageMarker)).toBe('not reloaded');

      const item = live.locator(selector);
      expect(await item.getAttribute('data-approval-id')).toBe(approvalId);
      expect(await item.locator('.tool').textContent()).toContain(`${gatedTool}@${requested.metadata.toolVersion}`);
      expect(await item.locator('.side-effect').textContent()).toContain('WRITE');
      expect(await item.locator('.risk').textContent()).toContain('MEDIUM');
      const requestedBy = await item.locator('.requested-by').textContent();
      expect(requestedBy).toContain(agent.principal);
      expect(requestedBy).toContain(`${agent.agentId}@${agent.agentRevision}`);
      expect(await item.locator('.request-hash').textContent()).toContain(requested.data.requestHash);
      expect(Date.parse((await item.locator('time.expires').getAttribute('datetime')) ?? '')).toBe(Date.parse(requested.data.expiresAt));
      await appear(live, `${selector} pre.arguments`);
      const preview = (await item.locator('pre.arguments').textContent()) ?? '';
      expect(preview).toContain(args.note);
      expect(preview).not.toContain(args.password);
      expect(preview).not.toContain(args.customerEmail);
      expect(preview.split(ARGUMENT_REDACTION_MARKER).length - 1, preview).toBe(2);

      await mkdir(path.dirname(screenshotFile), { recursive: true });
      await live.screenshot({ path: screenshotFile });

      await Promise.all([live.waitForURL((url) => url.searchParams.get('decided') === approvalId), item.locator('button[data-action="approve"]').click()]);
      expect(await live.locator('[role="status"]').textContent()).toMatch(/granted/i);
      const result = data(await reply);
      expect(result.status).toBe('SUCCESS');
      expect(result.receipt).toMatchObject({ state: 'Observed', approvalId });
      expect(await platform.executions('desk', 'count_calls')).toBe(1);
      expect(await showApproval(approvalId)).toMatchObject({ decidedBy: approver.principal });
      // Decided, it leaves the pending list.
      await waitFor('the decided approval to leave the list', async () => (await live.locator(selector).count()) === 0, 5_000);
    } finally {
      await context.close();
    }
  });

  it('rejects with a reason: the call ends Denied with APPROVAL_REJECTED and the reason, and never runs; markup in arguments stays text', { timeout: 120_000 }, async () => {
    const before = await platform.executions('desk', 'count_calls');
    const { page } = await openApprovals(await session(approver));
    try {
      // No double quotes: the preview is JSON, which would escape them.
      const markup = '<img src=x onerror=window.pwned=2>';
      const { approvalId, reply } = await parkWrite('console-reject', { note: markup });
      const selector = `#approval-${approvalId}`;
      await appear(page, `${selector} pre.arguments`);
      const item = page.locator(selector);
      // Arrived over the event stream and inserted into the page: as text, never as an element.
      expect(await item.locator('pre.arguments').textContent()).toContain(markup);
      expect(await page.locator('#pending-approvals img').count()).toBe(0);

      const reason = 'not on a Friday';
      await item.locator('form.decide[action$="/reject"] input[name="reason"]').fill(reason);
      await Promise.all([page.waitForURL((url) => url.searchParams.get('decided') === approvalId), item.locator('button[data-action="reject"]').click()]);
      expect(await page.locator('[role="status"]').textContent()).toMatch(/rejected/i);
      const result = data(await reply);
      expect(result.status).toBe('DENIED');
      expect(result.receipt.failure?.code).toBe('APPROVAL_REJECTED');
      expect(result.receipt.failure?.message).toContain(reason);
      expect(await platform.executions('desk', 'count_calls')).toBe(before);
      expect(await showApproval(approvalId)).toMatchObject({ state: 'Rejected', decidedBy: approver.principal, reason });
    } finally {
      await page.close();
    }
  });

  it('shows a reader the approval without decision forms; the approval service refuses the reader’s forged POST, and a POST without the session’s CSRF token is refused 403', { timeout: 120_000 }, async () => {
    const before = await platform.executions('desk', 'count_calls');
    const { approvalId, reply } = await parkWrite('console-reader', { note: 'a reader looks' });
    await showApproval(approvalId);
    const { page } = await openApprovals(await session(reader));
    const { page: approverPage } = await openApprovals(await session(approver));
    try {
      const selector = `#approval-${approvalId}`;
      await appear(page, selector);
      const item = page.locator(selector);
      expect(await item.locator('form').count()).toBe(0);
      expect(await item.locator('button[data-action]').count()).toBe(0);
      expect(await item.locator('.cannot-decide').textContent()).toMatch(/approver/i);

      // With the reader's own, valid CSRF token the console sends the decision, and the approval service refuses it.
      const readerCsrf = await csrfOf(page);
      const forged = await postDecision(page, approvalId, 'approve', readerCsrf);
      expect(forged.status).toBe(403);
      expect(forged.alert).toBe(await cliRefusal(reader, approvalId));
      expect(forged.alert).toMatch(/^AUTHORIZATION_DENIED: /);

      // Without the CSRF token nothing is sent, even for the approver who could decide; another session's token is no better.
      expect((await postDecision(page, approvalId, 'approve', undefined)).status).toBe(403);
      expect((await postDecision(approverPage, approvalId, 'approve', undefined)).status).toBe(403);
      expect((await postDecision(approverPage, approvalId, 'approve', readerCsrf)).status).toBe(403);
      expect((await postDecision(approverPage, approvalId, 'reject', undefined)).status).toBe(403);
      expect(await showApproval(approvalId)).toMatchObject({ state: 'Pending' });
      expect(await platform.executions('desk', 'count_calls')).toBe(before);

      // The same request with the approver's own token is the one that decides.
      expect(await postDecision(approverPage, approvalId, 'approve', await csrfOf(approverPage))).toMatchObject({ type: 'opaqueredirect' });
      expect(data(await reply).status).toBe('SUCCESS');
      expect(await platform.executions('desk', 'count_calls')).toBe(before + 1);
    } finally {
      await page.close();
      await approverPage.close();
    }
  });

  it('shows a tool result holding a script element as text on the call page, under a strict CSP', { timeout: 120_000 }, async () => {
    const hostile = '<script>window.__pwned=1</script>';
    const result = data(await platform.invoke({ toolId: echoTool, arguments: { text: hostile }, idempotencyKey: 'console-echo' }));
    expect(result.status).toBe('SUCCESS');
    const page = await (await session(approver)).newPage();
    try {
      const url = `${consoleApp.url}/w/${platform.scope.workspace}/calls/${encodeURIComponent(result.receipt.toolCallId)}`;
      // The audit projection may trail the reply by a moment: the page shows the call once the projector has it.
      const response = await waitFor('the call page with its result', async () => {
        const res = await page.goto(url);
        return res?.status() === 200 && (await page.locator('pre#result').count()) === 1 && ((await page.locator('pre#result').textContent()) ?? '').includes('<script>') ? res : undefined;
      }, 20_000).catch((error: unknown) => {
        throw new Error(`the call page never showed the result\n${consoleLogs()}`, { cause: error });
      });
      const headers = response.headers();
      expect(headers['content-security-policy']).toBe(strictCsp);
      expect(headers['x-content-type-options']).toBe('nosniff');
      expect(await page.locator('pre#result').textContent()).toContain(hostile);
      const dom = await page.evaluate(() => ({
        pwned: (window as unknown as { __pwned?: unknown }).__pwned,
        inlineScripts: [...document.scripts].filter((script) => script.src === '').length,
        foreignScripts: [...document.scripts].filter((script) => script.src !== '' && new URL(script.src).origin !== location.origin).length,
        scriptsWithPayload: [...document.scripts].filter((script) => script.textContent?.includes('__pwned')).length,
        resultElements: document.querySelector('pre#result')?.children.length,
      }));
      expect(dom).toEqual({ pwned: undefined, inlineScripts: 0, foreignScripts: 0, scriptsWithPayload: 0, resultElements: 0 });
    } finally {
      await page.close();
    }
  });

  it('refuses self-approval with the typed message the CLI gets, and offers the requester no decision forms', { timeout: 120_000 }, async () => {
    const before = await platform.executions('desk', 'count_calls');
    const { approvalId, reply } = await parkWrite('console-self', { note: 'my own call' });
    await showApproval(approvalId);
    const { page } = await openApprovals(await session(requester));
    try {
      const selector = `#approval-${approvalId}`;
      await appear(page, selector);
      const item = page.locator(selector);
      expect(await item.locator('form').count()).toBe(0);
      expect(await item.locator('.cannot-decide').textContent()).toMatch(/your own|your behalf/i);

      const refused = await postDecision(page, approvalId, 'approve', await csrfOf(page));
      expect(refused.status).toBe(403);
      expect(refused.alert).toBe(await cliRefusal(requester, approvalId));
      expect(refused.alert).toMatch(/^AUTHORIZATION_DENIED: /);
      expect(await showApproval(approvalId)).toMatchObject({ state: 'Pending' });

      expect(await platform.toolplane('approvals', 'reject', approvalId, '--reason', 'not by its requester')).toMatchObject({ code: 0 });
      expect(data(await reply).receipt.failure?.code).toBe('APPROVAL_REJECTED');
      expect(await platform.executions('desk', 'count_calls')).toBe(before);
    } finally {
      await page.close();
    }
  });
});
