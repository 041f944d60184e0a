// The endpoint's HTTP routes: DNS-rebinding checks, bounded bodies, bearer authentication and per-token limits in
// front of the MCP protocol adapter, plus the protected-resource metadata (RFC 9728). The service kit's server
// serves them beside /healthz, /readyz and /metrics, and drains them at shutdown.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tokenExpiresAtMs, type TokenVerifier } from '@toolplane/auth';
import { MAX_INVOCATION_TIMEOUT_MS, MCP_TIMEOUT_HEADER } from '@toolplane/contracts';
import type { HttpRouteHandler, Logger } from '@toolplane/service-kit';
import { authenticate, type Authentication, type Caller } from '../app/authenticate.js';
import { allowedHosts, isLoopbackBind, originAllowed } from '../core/origin.js';
import { resourceMetadata, resourceMetadataUrl, routeOf, type ToolSurface } from '../core/route.js';
import type { TokenRateLimits } from '../app/token-rate-limits.js';
import type { ToolListStreams } from '../app/tool-list-streams.js';
import type { RequestOutcome } from '../core/request-outcome.js';
import type { EndpointMetrics } from './endpoint-metrics.js';
import { cancellationsOf, isInitialize, isListen, type McpPost, type McpProtocol, type McpProtocolDeps, type McpStream } from './mcp-protocol.js';

/** How the routes are set up. */
export interface EndpointRoutesOptions {
  /** The address the server binds (a loopback bind checks Host headers). */
  readonly host: string;
  readonly allowedOrigins: ReadonlySet<string>;
  readonly authorizationServers: readonly string[];
  readonly maxBodyBytes: number;
  readonly verifier: TokenVerifier;
  readonly protocol: McpProtocol;
  /** The calls in flight, which a `notifications/cancelled` aborts. */
  readonly inFlight: McpProtocolDeps['inFlight'];
  /** Per-token admission on this replica; undefined: no limit. */
  readonly rateLimits: TokenRateLimits | undefined;
  /** The open notification streams (GET), bounded per replica. */
  readonly streams: ToolListStreams;
  /** Aborts when the endpoint begins shutting down: no new notification stream from then on. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  readonly metrics: EndpointMetrics;
}

/** The routes, and how they learn where they are served. */
export interface EndpointRoutes {
  readonly handle: HttpRouteHandler;
  /** Called once the server listens: the bound port and the public base URL built from it. */
  listening(port: number, publicUrl: string): void;
}

const SESSION_ID = /^[!-~]{1,128}$/;

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** A JSON-RPC error outside any request (id null): how the transport answers problems with the HTTP request itself. */
function sendRpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { jsonrpc: '2.0', id: null, error: { code, message } }, headers);
}

/** The one value of a header, or undefined when absent or repeated. */
function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** Reads the body up to `limit` bytes; over it, stops reading (undefined). */
async function readBounded(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The `WWW-Authenticate` challenge of a refused request (RFC 6750 §3, RFC 9728 §5.1). */
export function challengeOf(refusal: Extract<Authentication, { ok: false }>, metadataUrl: string): string {
  const parts = [`resource_metadata="${metadataUrl}"`];
  if (refusal.error !== undefined) parts.push(`error="${refusal.error}"`, `error_description="${refusal.description.replaceAll('"', "'").slice(0, 200)}"`);
  return `Bearer ${parts.join(', ')}`;
}

/** The endpoint's routes; requests come only once the server listens, after `listening`. */
export function endpointRoutes(options: EndpointRoutesOptions): EndpointRoutes {
  const log = options.logger;
  const { metrics } = options;
  // A request the HTTP layer refuses before the SDK sees any of its messages has no method to count it under: `other`,
  // with the refusal's code.
  const refuse = (res: ServerResponse, outcome: RequestOutcome, status: number, code: number, message: string, headers: Record<string, string> = {}) => {
    metrics.request('other', outcome);
    sendRpcError(res, status, code, message, headers);
  };
  // Known once the server listens (the port may be the system's choice); requests only come after that.
  const bound: { publicUrl: string; hosts: ReadonlySet<string> | undefined } = { publicUrl: '', hosts: undefined };

  const serveMcp = async (req: IncomingMessage, res: ServerResponse, scope: { tenant: string; workspace: string }, surface: ToolSurface) => {
    // DNS rebinding: a browser page of a foreign origin, or a host name that only resolves here by an attacker's DNS.
    if (!originAllowed(headerOf(req, 'origin'), options.allowedOrigins)) return refuse(res, 'AUTHORIZATION_DENIED', 403, -32000, 'Forbidden: this Origin is not allowed');
    if (bound.hosts !== undefined && !bound.hosts.has(headerOf(req, 'host') ?? '')) return refuse(res, 'AUTHORIZATION_DENIED', 403, -32000, 'Forbidden: this Host is not allowed');
    if (req.method !== 'POST' && req.method !== 'GET') {
      // Stateless: no session to end (DELETE).
      return refuse(res, 'INVALID_ARGUMENT', 405, -32000, 'Method not allowed: this endpoint answers POST and GET', { allow: 'GET, POST' });
    }

    const metadataUrl = resourceMetadataUrl(bound.publicUrl, scope);
    const authenticated = await authenticate(options.verifier, headerOf(req, 'authorization'), scope);
    const auth = authenticated.ok ? { ...authenticated, caller: { ...authenticated.caller, surface } } : authenticated;
    if (!auth.ok) {
      log.info({ tenant: scope.tenant, workspace: scope.workspace, status: auth.status, reason: auth.description }, 'request refused');
      metrics.request('other', auth.status === 403 ? 'AUTHORIZATION_DENIED' : 'AUTHENTICATION_FAILED');
      return sendJson(res, auth.status, { error: auth.error ?? 'unauthorized', error_description: auth.description }, { 'www-authenticate': challengeOf(auth, metadataUrl) });
    }
    // After authentication (an unauthenticated flood is refused above, cheaply) and before anything reaches NATS.
    const admission = options.rateLimits?.admit(auth.caller.token);
    if (admission?.admitted === false) {
      const seconds = Math.ceil(admission.retryAfterMs / 1_000);
      log.info({ tenant: scope.tenant, workspace: scope.workspace, agentId: auth.caller.claims.agentId, retryAfterSeconds: seconds }, 'token over its rate limit');
      metrics.rateLimited();
      return refuse(res, 'RATE_LIMITED', 429, -32000, `Too many requests: this token's limit on this endpoint is reached; retry after ${seconds} s`, { 'retry-after': String(seconds) });
    }
    if (req.method === 'GET') return serveStream(req, res, auth.caller);

    const declared = Number(headerOf(req, 'content-length') ?? '0');
    if (declared > options.maxBodyBytes) {
      res.setHeader('connection', 'close');
      return refuse(res, 'INVALID_ARGUMENT', 413, -32000, `Payload too large: the limit is ${options.maxBodyBytes} bytes`);
    }
    const raw = await readBounded(req, options.maxBodyBytes);
    if (raw === undefined) {
      res.setHeader('connection', 'close');
      return refuse(res, 'INVALID_ARGUMENT', 413, -32000, `Payload too large: the limit is ${options.maxBodyBytes} bytes`);
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return refuse(res, 'INVALID_ARGUMENT', 400, -32700, 'Parse error: the body is not JSON');
    }

    const timeoutHeader = headerOf(req, MCP_TIMEOUT_HEADER);
    const headerTimeoutMs = timeoutHeader === undefined ? undefined : Number(timeoutHeader);
    if (headerTimeoutMs !== undefined && (!Number.isInteger(headerTimeoutMs) || headerTimeoutMs <= 0 || headerTimeoutMs > MAX_INVOCATION_TIMEOUT_MS)) {
      return refuse(res, 'INVALID_ARGUMENT', 400, -32602, `Invalid ${MCP_TIMEOUT_HEADER}: a whole number of milliseconds from 1 to ${MAX_INVOCATION_TIMEOUT_MS}`);
    }

    // A session id without server state: it only scopes the keys derived from JSON-RPC ids, which every client
    // starts over with. Any replica accepts any session id; a client choosing its own only affects its own calls.
    let session = headerOf(req, 'mcp-session-id');
    if (session !== undefined && !SESSION_ID.test(session)) return refuse(res, 'INVALID_ARGUMENT', 400, -32000, 'Bad Request: malformed Mcp-Session-Id');
    if (isInitialize(body)) {
      session = randomUUID();
      res.setHeader('mcp-session-id', session);
    }
    for (const cancelled of cancellationsOf(body)) options.inFlight.cancel(auth.caller, session, cancelled.requestId, cancelled.reason);

    const post: McpPost = { req, res, body, caller: auth.caller, session, headerTimeoutMs, url: new URL(req.url ?? '/', bound.publicUrl).href };
    if (isListen(body)) return serveListen(post);
    await options.protocol.answerPost(post);
  };

  /** Whether this replica may open one more notification stream; answers 503 when not. */
  const streamRoom = (res: ServerResponse): boolean => {
    if (!options.signal.aborted && options.streams.hasRoom()) return true;
    refuse(res, 'TEMPORARY_UNAVAILABLE', 503, -32000, 'Service unavailable: this replica serves no more notification streams', { 'retry-after': '5' });
    return false;
  };

  /** Keeps a stream registered for its caller's list changes until it ends, the token expires or the endpoint stops. */
  const keep = (caller: Caller, stream: McpStream) => {
    const unregister = options.streams.open(caller, { notify: (kind) => stream.notifyListChanged(kind), close: () => stream.close() }, tokenExpiresAtMs(caller.token));
    if (unregister === undefined) return stream.close();
    void stream.ended.then(unregister);
  };

  // A 2026-07-28 client's `subscriptions/listen`: the same streams as GET, the SDK's listen protocol on the wire.
  const serveListen = async (post: McpPost) => {
    if (!streamRoom(post.res)) return;
    metrics.request('subscriptions/listen', 'ok');
    keep(post.caller, await options.protocol.openListen(post));
  };

  // The GET stream: kept open for server notifications (the lists' list_changed) until the client leaves, the token
  // expires or the endpoint stops. Bounded per replica: past the bound, 503 (another replica may have room).
  const serveStream = async (req: IncomingMessage, res: ServerResponse, caller: Caller) => {
    if (!streamRoom(res)) return;
    // The SDK would answer this too, but only after the stream was counted and its tool set asked for.
    if (!(headerOf(req, 'accept') ?? '').includes('text/event-stream')) return refuse(res, 'INVALID_ARGUMENT', 406, -32000, 'Not Acceptable: Client must accept text/event-stream');
    keep(caller, await options.protocol.openLegacyStream(req, res));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const pathname = new URL(req.url ?? '/', 'http://endpoint').pathname;
    const route = routeOf(pathname);
    switch (route.kind) {
      case 'mcp':
        return serveMcp(req, res, route.scope, route.surface);
      case 'resource-metadata':
        if (req.method !== 'GET' && req.method !== 'HEAD') return sendJson(res, 405, { error: 'method not allowed' }, { allow: 'GET' });
        return sendJson(res, 200, resourceMetadata(bound.publicUrl, route.scope, options.authorizationServers));
      case 'not-found':
        return sendJson(res, 404, { error: 'not found' });
    }
  };

  return {
    handle: (req, res) =>
      handle(req, res).catch((error: unknown) => {
        log.error({ err: error }, 'request failed');
        sendRpcError(res, 500, -32603, 'Internal error');
      }),
    listening: (port, publicUrl) => {
      bound.publicUrl = publicUrl;
      bound.hosts = isLoopbackBind(options.host) ? allowedHosts(port, publicUrl) : undefined;
    },
  };
}
