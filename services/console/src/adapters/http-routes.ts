// The console's HTTP face: routing, cookies, CSRF and origin checks, bounded form bodies, the security headers on
// every response, and the live approvals stream (SSE). Every page is rendered by the pure core from what the use
// cases read as the signed-in operator. The service kit serves these routes beside /healthz, /readyz and /metrics.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Uuid } from '@toolplane/contracts';
import type { HttpRouteHandler, Logger } from '@toolplane/service-kit';
import { decide, decidedFlash, listPending, withPreviews } from '../app/approvals.js';
import type { ApprovalsHub, LivePageHandle } from '../app/approvals-hub.js';
import { listCalls, callsRequestOf, showCall, showRun, verifyChain } from '../app/records.js';
import type { ServiceCaller } from '../app/service-caller.js';
import { authenticate, sessionIdOf, signIn, type Operator, type SessionDeps } from '../app/sessions.js';
import { approvalsPage, type DecidedFlash, type PendingItem } from '../core/approvals-page.js';
import { auditPage } from '../core/audit-page.js';
import { callPage } from '../core/call-page.js';
import { callsPage, type CallFilters } from '../core/calls-page.js';
import { parseCookies, serializeCookie } from '../core/cookies.js';
import { consoleOrigins, CSRF_FIELD, csrfToken, csrfValid, sameOrigin, type CsrfPurpose } from '../core/csrf.js';
import { httpStatusOf, securityHeaders } from '../core/http-policy.js';
import { errorPage, sectionUrl, type Viewer } from '../core/layout.js';
import { runPage } from '../core/run-page.js';
import { routeOf } from '../core/routes.js';
import { SESSION_COOKIE } from '../core/session-seal.js';
import { signInPage } from '../core/sign-in-page.js';
import { typedErrorOf, type TypedError } from '../core/typed-error.js';
import type { Assets } from './assets.js';
import type { ConsoleMetrics } from './console-metrics.js';

/** The cookie holding the sign-in form's nonce (the pre-session double submit). */
export const SIGN_IN_COOKIE = 'tp_signin';
const SIGN_IN_SECONDS = 60 * 60;
/** The most a timer may wait in Node (a longer delay fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/** How the routes are set up. */
export interface ConsoleRoutesOptions {
  readonly sessions: SessionDeps;
  readonly call: ServiceCaller;
  readonly hub: ApprovalsHub;
  readonly assets: Assets;
  readonly publicUrl: string | undefined;
  readonly maxBodyBytes: number;
  readonly auditTimeoutMs: number;
  /** How often an idle event stream sends a comment, so proxies keep it open. */
  readonly keepAliveMs: number;
  /** Aborts when the console begins shutting down. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  readonly metrics: ConsoleMetrics;
}

type Form = URLSearchParams;

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string | string[]> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { ...securityHeaders, 'content-type': 'text/html; charset=utf-8', ...headers });
  res.end(body);
}

function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
  res.writeHead(303, { ...securityHeaders, location, 'content-type': 'text/plain; charset=utf-8', ...(cookies.length === 0 ? {} : { 'set-cookie': cookies }) });
  res.end(`See ${location}\n`);
}

/** The event-stream framing of one event: one `data:` line per line of the payload. */
export function sseEvent(name: string, data: string): string {
  return `event: ${name}\n${data
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}\n`)
    .join('')}\n`;
}

function viewerOf(operator: Operator): Viewer {
  return { principal: operator.claims.principal, roles: operator.claims.roles, workspace: operator.scope.workspace, workspaces: operator.claims.workspaces, csrf: operator.csrf };
}

/** A form body, bounded: the form, or the status that refuses it. */
async function readForm(req: IncomingMessage, limit: number): Promise<{ readonly ok: true; readonly form: Form } | { readonly ok: false; readonly status: 413 | 415; readonly message: string }> {
  const type = (headerOf(req, 'content-type') ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return { ok: false, status: 415, message: 'forms are sent as application/x-www-form-urlencoded' };
  const tooLarge = { ok: false, status: 413, message: `the form is larger than ${limit} bytes` } as const;
  if (Number(headerOf(req, 'content-length') ?? '0') > limit) return tooLarge;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return tooLarge;
    chunks.push(chunk);
  }
  return { ok: true, form: new URLSearchParams(Buffer.concat(chunks).toString('utf8')) };
}

/** The one value of a form field; undefined when absent or given more than once. */
function fieldOf(form: Form, name: string): string | undefined {
  const values = form.getAll(name);
  return values.length === 1 ? values[0] : undefined;
}

/** The console's routes. */
export function consoleRoutes(options: ConsoleRoutesOptions): HttpRouteHandler {
  const { sessions, call, hub, assets, logger: log } = options;
  const secure = options.publicUrl?.startsWith('https://') === true;
  const sessionCookie = (value: string, maxAgeSeconds: number) => serializeCookie(SESSION_COOKIE, value, { path: '/', maxAgeSeconds, secure });
  const clearSession = () => sessionCookie('', 0);
  const signInCookie = (value: string, maxAgeSeconds: number) => serializeCookie(SIGN_IN_COOKIE, value, { path: '/sign-in', maxAgeSeconds, secure });

  /** Whether a POST's token and origin check out; answers 403 itself when not. */
  const checkForm = (req: IncomingMessage, res: ServerResponse, form: Form, purpose: CsrfPurpose, bound: string | undefined, viewer?: Viewer): boolean => {
    const origin = { fetchSite: headerOf(req, 'sec-fetch-site'), origin: headerOf(req, 'origin') };
    const fromHere = sameOrigin(origin, consoleOrigins(options.publicUrl, headerOf(req, 'host')));
    if (fromHere && bound !== undefined && csrfValid(sessions.key, purpose, bound, fieldOf(form, CSRF_FIELD))) return true;
    log.info({ path: req.url, reason: fromHere ? 'csrf token missing or wrong' : 'cross-origin request' }, 'form refused');
    send(
      res,
      403,
      errorPage({
        title: 'Forbidden',
        ...(viewer === undefined ? {} : { viewer }),
        error: {
          code: 'AUTHORIZATION_DENIED',
          message: fromHere ? 'this form’s anti-forgery token is missing or does not match your session; reload the page and try again' : 'this form was not sent from the console’s own pages',
        },
        back: purpose === 'sign-in' ? { href: '/sign-in', label: 'Sign in' } : { href: '/', label: 'Back to the console' },
      }),
    );
    return false;
  };

  const refuseForm = (res: ServerResponse, refusal: { status: number; message: string }) =>
    send(res, refusal.status, errorPage({ title: refusal.status === 413 ? 'Form too large' : 'Unsupported form', error: { code: 'INVALID_ARGUMENT', message: refusal.message } }), refusal.status === 413 ? { connection: 'close' } : {});

  /** The operator of a workspace page; answers the request itself (redirect, 403) when there is none. */
  const operatorFor = async (req: IncomingMessage, res: ServerResponse, workspace: string): Promise<Operator | undefined> => {
    const auth = await authenticate(sessions, parseCookies(headerOf(req, 'cookie')).get(SESSION_COOKIE), workspace);
    if (auth.ok) return auth.operator;
    if (auth.reason === 'not-covered') {
      const home = auth.claims.workspaces[0] ?? workspace;
      const viewer: Viewer = { principal: auth.claims.principal, roles: auth.claims.roles, workspace: home, workspaces: auth.claims.workspaces, csrf: csrfToken(sessions.key, 'session', auth.sessionId) };
      send(res, 403, errorPage({ title: 'Not your workspace', viewer, error: auth.error, back: { href: sectionUrl(home, 'approvals'), label: `Approvals of ${home}` } }));
      return undefined;
    }
    if (auth.reason === 'refused') log.info({ code: auth.error.code, reason: auth.error.message }, 'session token refused');
    redirect(res, '/sign-in', auth.reason === 'refused' ? [clearSession()] : []);
    return undefined;
  };

  const failurePage = (res: ServerResponse, viewer: Viewer, title: string, error: TypedError, back?: { href: string; label: string }) =>
    send(res, httpStatusOf(error.code), errorPage({ title, viewer, error, ...(back === undefined ? {} : { back }) }));

  const serveSignInForm = (res: ServerResponse, status = 200, error?: TypedError, nonce?: string) => {
    const fresh = nonce ?? Buffer.from(sessions.randomBytes(18)).toString('base64url');
    send(res, status, signInPage({ csrf: csrfToken(sessions.key, 'sign-in', fresh), ...(error === undefined ? {} : { error }) }), { 'set-cookie': [signInCookie(fresh, SIGN_IN_SECONDS)] });
  };

  const serveSignIn = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readForm(req, options.maxBodyBytes);
    if (!body.ok) return refuseForm(res, body);
    const nonce = parseCookies(headerOf(req, 'cookie')).get(SIGN_IN_COOKIE);
    if (!checkForm(req, res, body.form, 'sign-in', nonce)) return;
    const outcome = await signIn(sessions, fieldOf(body.form, 'token') ?? '');
    if (!outcome.ok) {
      log.info({ code: outcome.error.code, reason: outcome.error.message }, 'sign-in refused');
      return serveSignInForm(res, httpStatusOf(outcome.error.code), outcome.error, nonce);
    }
    redirect(res, sectionUrl(outcome.workspace, 'approvals'), [sessionCookie(outcome.cookie, outcome.maxAgeSeconds), signInCookie('', 0)]);
  };

  const serveSignOut = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readForm(req, options.maxBodyBytes);
    if (!body.ok) return refuseForm(res, body);
    const sessionId = sessionIdOf(sessions, parseCookies(headerOf(req, 'cookie')).get(SESSION_COOKIE));
    if (sessionId === undefined) return redirect(res, '/sign-in', [clearSession()]);
    if (!checkForm(req, res, body.form, 'session', sessionId)) return;
    redirect(res, '/sign-in', [clearSession()]);
  };

  const serveHome = async (req: IncomingMessage, res: ServerResponse) => {
    const auth = await authenticate(sessions, parseCookies(headerOf(req, 'cookie')).get(SESSION_COOKIE), undefined);
    if (auth.ok) return redirect(res, sectionUrl(auth.operator.scope.workspace, 'approvals'));
    redirect(res, '/sign-in', auth.reason === 'refused' ? [clearSession()] : []);
  };

  const serveApprovals = async (req: IncomingMessage, res: ServerResponse, workspace: string, url: URL, signal: AbortSignal) => {
    const operator = await operatorFor(req, res, workspace);
    if (operator === undefined) return;
    const decided = url.searchParams.get('decided');
    const [flash, listed] = await Promise.all([
      decided !== null && Uuid.safeParse(decided).success ? decidedFlash(call, operator, decided, signal) : Promise.resolve(undefined as DecidedFlash | undefined),
      (async (): Promise<{ items: PendingItem[] } | { error: TypedError }> => {
        try {
          return { items: await withPreviews(call, operator, await listPending(call, operator, signal), signal) };
        } catch (error) {
          return { error: typedErrorOf(error) };
        }
      })(),
    ]);
    const viewer = viewerOf(operator);
    const items = 'items' in listed ? listed.items : [];
    const page = approvalsPage({ viewer, items, ...(flash === undefined ? {} : { flash }), ...('error' in listed ? { listError: listed.error } : {}) });
    send(res, 'error' in listed ? httpStatusOf(listed.error.code) : 200, page);
  };

  const serveDecision = async (req: IncomingMessage, res: ServerResponse, workspace: string, approvalId: string, decision: 'approve' | 'reject', signal: AbortSignal) => {
    const body = await readForm(req, options.maxBodyBytes);
    if (!body.ok) return refuseForm(res, body);
    const cookie = parseCookies(headerOf(req, 'cookie')).get(SESSION_COOKIE);
    const sessionId = sessionIdOf(sessions, cookie);
    if (sessionId === undefined) return redirect(res, '/sign-in');
    // Before anything is verified or sent: a forged form gets a 403 and nothing reaches a service.
    if (!checkForm(req, res, body.form, 'session', sessionId)) return;
    const operator = await operatorFor(req, res, workspace);
    if (operator === undefined) return;
    const viewer = viewerOf(operator);
    const back = { href: sectionUrl(workspace, 'approvals'), label: 'Back to pending approvals' };
    const given = fieldOf(body.form, 'reason')?.trim();
    const reason = given === undefined || given === '' ? undefined : given;
    if (decision === 'reject' && reason === undefined) {
      options.metrics.decided(decision, 'INVALID_ARGUMENT');
      return failurePage(res, viewer, 'Rejection not sent', { code: 'INVALID_ARGUMENT', message: 'a rejection needs a reason: the requester is told why' }, back);
    }
    const outcome = await decide(call, operator, approvalId, decision, reason, signal);
    options.metrics.decided(decision, outcome.ok ? 'ok' : outcome.error.code);
    if (outcome.ok) {
      log.info({ approvalId, decision, principal: operator.claims.principal, state: outcome.approval.state }, 'decision sent');
      return redirect(res, `${sectionUrl(workspace, 'approvals')}?decided=${encodeURIComponent(approvalId)}`);
    }
    log.info({ approvalId, decision, code: outcome.error.code }, 'decision refused');
    failurePage(res, viewer, decision === 'approve' ? 'Approval not granted' : 'Approval not rejected', outcome.error, back);
  };

  // The live pending list: `pending` events carrying the section's HTML, until the browser leaves, the token
  // expires (the browser reconnects and is asked to sign in again) or the console shuts down.
  const serveApprovalEvents = async (req: IncomingMessage, res: ServerResponse, workspace: string) => {
    const auth = await authenticate(sessions, parseCookies(headerOf(req, 'cookie')).get(SESSION_COOKIE), workspace);
    if (!auth.ok) {
      res.writeHead(auth.reason === 'not-covered' ? 403 : 401, { ...securityHeaders, 'content-type': 'text/plain; charset=utf-8' });
      res.end(auth.reason === 'no-session' ? 'sign in first\n' : `${auth.error.code}: ${auth.error.message}\n`);
      return;
    }
    if (options.signal.aborted || !hub.hasRoom()) {
      res.writeHead(503, { ...securityHeaders, 'content-type': 'text/plain; charset=utf-8', 'retry-after': '5' });
      res.end('TEMPORARY_UNAVAILABLE: this console serves no more live streams; retry shortly\n');
      return;
    }
    const operator = auth.operator;
    res.writeHead(200, { ...securityHeaders, 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    res.write('retry: 3000\n\n');
    let ended = false;
    let handle: LivePageHandle | undefined;
    const timers: NodeJS.Timeout[] = [];
    const end = () => {
      if (ended) return;
      ended = true;
      for (const timer of timers) clearTimeout(timer);
      res.end();
    };
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), options.keepAliveMs);
    timers.push(keepAlive);
    if (operator.expiresAtMs !== undefined) timers.push(setTimeout(end, Math.min(MAX_TIMER_MS, Math.max(0, operator.expiresAtMs - Date.now()))));
    res.on('close', () => {
      end();
      void handle?.close();
    });
    try {
      handle = await hub.open({ operator, send: (fragment) => !ended && res.write(sseEvent('pending', fragment)), end });
    } catch (error) {
      log.warn({ err: error, workspace }, 'live approvals stream could not start');
      return end();
    }
    if (handle === undefined || ended) {
      await handle?.close();
      return end();
    }
    log.debug({ workspace, principal: operator.claims.principal, streams: hub.size }, 'live approvals stream opened');
  };

  const serveCalls = async (req: IncomingMessage, res: ServerResponse, workspace: string, url: URL, signal: AbortSignal) => {
    const operator = await operatorFor(req, res, workspace);
    if (operator === undefined) return;
    const param = (name: string) => url.searchParams.get(name) ?? undefined;
    const filters: CallFilters = Object.fromEntries(
      (['state', 'tool', 'agent', 'run', 'after'] as const).flatMap((name) => (param(name) === undefined ? [] : [[name, param(name)]])),
    );
    const viewer = viewerOf(operator);
    const request = callsRequestOf(filters);
    if (!request.ok) return send(res, 400, callsPage({ viewer, filters, calls: [], next: null, error: request.error }));
    const listed = await listCalls(call, operator, request.request, signal);
    if (!listed.ok) return send(res, httpStatusOf(listed.error.code), callsPage({ viewer, filters, calls: [], next: null, error: listed.error }));
    send(res, 200, callsPage({ viewer, filters, calls: listed.value.items, next: listed.value.next }));
  };

  const serveCall = async (req: IncomingMessage, res: ServerResponse, workspace: string, toolCallId: string, signal: AbortSignal) => {
    const operator = await operatorFor(req, res, workspace);
    if (operator === undefined) return;
    const shown = await showCall(call, operator, toolCallId, signal);
    if (!shown.ok) return failurePage(res, viewerOf(operator), `Call ${toolCallId}`, shown.error, { href: sectionUrl(workspace, 'calls'), label: 'All calls' });
    send(res, 200, callPage({ viewer: viewerOf(operator), call: shown.value.call, inspection: shown.value.inspection }));
  };

  const serveRun = async (req: IncomingMessage, res: ServerResponse, workspace: string, flowRunId: string, signal: AbortSignal) => {
    const operator = await operatorFor(req, res, workspace);
    if (operator === undefined) return;
    const { journal, run } = await showRun(call, operator, flowRunId, signal);
    const page = runPage({ viewer: viewerOf(operator), flowRunId, entries: journal.ok ? journal.value.entries : [], ...(journal.ok ? {} : { journalError: journal.error }), run });
    send(res, journal.ok ? 200 : httpStatusOf(journal.error.code), page);
  };

  const serveAudit = async (req: IncomingMessage, res: ServerResponse, workspace: string, signal: AbortSignal) => {
    const operator = await operatorFor(req, res, workspace);
    if (operator === undefined) return;
    const walked = await verifyChain(call, operator, options.auditTimeoutMs, signal);
    const result = walked.ok ? { ok: true as const, reply: walked.value } : { ok: false as const, code: walked.error.code, message: walked.error.message };
    send(res, walked.ok ? 200 : httpStatusOf(walked.error.code), auditPage({ viewer: viewerOf(operator), result }));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, signal: AbortSignal) => {
    const url = new URL(req.url ?? '/', 'http://console');
    const route = routeOf(req.method ?? 'GET', url.pathname);
    switch (route.kind) {
      case 'home':
        return serveHome(req, res);
      case 'sign-in-form':
        return serveSignInForm(res);
      case 'sign-in':
        return serveSignIn(req, res);
      case 'sign-out':
        return serveSignOut(req, res);
      case 'asset': {
        const asset = assets[route.name];
        res.writeHead(200, { ...securityHeaders, 'content-type': asset.contentType, 'content-length': String(asset.body.length) });
        return void res.end(asset.body);
      }
      case 'no-icon':
        res.writeHead(204, securityHeaders);
        return void res.end();
      case 'approvals':
        return serveApprovals(req, res, route.workspace, url, signal);
      case 'approval-events':
        return serveApprovalEvents(req, res, route.workspace);
      case 'decide':
        return serveDecision(req, res, route.workspace, route.approvalId, route.decision, signal);
      case 'calls':
        return serveCalls(req, res, route.workspace, url, signal);
      case 'call':
        return serveCall(req, res, route.workspace, route.toolCallId, signal);
      case 'run':
        return serveRun(req, res, route.workspace, route.flowRunId, signal);
      case 'audit':
        return serveAudit(req, res, route.workspace, signal);
      case 'method-not-allowed':
        return send(res, 405, errorPage({ title: 'Method not allowed', error: { code: 'INVALID_ARGUMENT', message: `this address answers ${route.allow}` } }), { allow: route.allow });
      case 'not-found':
        return send(res, 404, errorPage({ title: 'Not found', error: { code: 'NOT_FOUND', message: 'the console has no page at this address' }, back: { href: '/', label: 'Back to the console' } }));
    }
  };

  return async (req, res) => {
    // A request's reads stop when its browser goes away or the console shuts down.
    const closed = new AbortController();
    res.on('close', () => closed.abort());
    const signal = AbortSignal.any([closed.signal, options.signal]);
    try {
      await handle(req, res, signal);
    } catch (error) {
      log.error({ err: error, path: new URL(req.url ?? '/', 'http://console').pathname }, 'request failed');
      send(res, 500, errorPage({ title: 'Something went wrong', error: { code: 'INTERNAL', message: 'an unexpected failure in the console' } }));
    }
  };
}
