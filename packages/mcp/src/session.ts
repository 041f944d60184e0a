import {
  Client,
  StreamableHTTPClientTransport,
  type ClientOptions,
  type DiscoverResult,
  type McpSubscription,
  type PriorDiscovery,
  type RequestOptions,
  type SubscriptionFilter,
} from '@modelcontextprotocol/client';
import { ToolplaneError } from '@toolplane/contracts';
import path from 'node:path';
import { tracedToolCall } from './call-tracing.js';
import { isNonObjectSchemaRoot } from './era-projection.js';
import type {
  JsonRecord,
  McpCompletion,
  McpCompletionRequest,
  McpImplementation,
  McpList,
  McpPrompt,
  McpPromptMessages,
  McpResource,
  McpResourceContents,
  McpResourceTemplate,
  McpServerCapabilities,
  McpTool,
  McpToolResult,
} from './model.js';
import {
  normalizeCompletion,
  normalizePrompt,
  normalizePromptMessages,
  normalizeResource,
  normalizeResourceContents,
  normalizeResourceTemplate,
  normalizeTool,
  normalizeToolResult,
} from './normalize.js';
import { collectPages, type PageLimits } from './pagination.js';
import { createSessionFetch, type SessionFetch } from './session-fetch.js';
import type { StdioSandboxOptions } from './sandbox.js';
import { ChildProcessTransport } from './stdio-transport.js';
import { describeTarget, mcpTargetKey, validateTarget, type McpTarget } from './target.js';
import { NOT_DELIVERED, streamableHttpStatus, translateMcpError } from './translate-error.js';

/** Options of every request: the caller's signal and a deadline. */
export interface McpRequestOptions {
  /** Aborting it ends the request: CANCELLED, or UNKNOWN_OUTCOME for a tool call already sent. */
  readonly signal?: AbortSignal | undefined;
  /** The deadline, in ms from now; the session's default when absent. TIMEOUT, or UNKNOWN_OUTCOME for a tool call already sent. */
  readonly timeoutMs?: number | undefined;
}

/** Options of a paginated listing: a deadline for the whole listing, and bounds on pages and items. */
export type McpListOptions = McpRequestOptions & PageLimits;

/** How to connect, and the limits of the session. */
export interface McpConnectOptions {
  readonly signal?: AbortSignal | undefined;
  /** Deadline of the handshake (default 30 s). */
  readonly timeoutMs?: number | undefined;
  /** Default deadline of requests that name none (default 60 s). */
  readonly requestTimeoutMs?: number | undefined;
  /** How this client introduces itself (default `toolplane`). */
  readonly clientInfo?: McpImplementation | undefined;
  /** The largest message accepted from (or sent to) the server, in bytes (default 4 MiB); a larger one closes the session. */
  readonly maxMessageBytes?: number | undefined;
  /** stdio: how much of the server's stderr is kept (default 64 KiB). */
  readonly maxStderrBytes?: number | undefined;
  /** stdio: how long the server gets to exit after SIGTERM before its process group is killed (default 2 s). */
  readonly killGraceMs?: number | undefined;
  /** stdio: the PATH of the child (default: node's directory, /usr/local/bin, /usr/bin, /bin). */
  readonly stdioPath?: string | undefined;
  /** stdio: receives the server's stderr as it arrives (packages do not log; a service may). */
  readonly onStderr?: ((text: string) => void) | undefined;
  /** stdio: how servers are sandboxed (default: under bubblewrap, with each target's profile). */
  readonly sandbox?: StdioSandboxOptions | undefined;
  /**
   * HTTP: the protocol era an earlier session with the same target and credentials found (its `eraVerdict`), to
   * connect without probing. A modern verdict sends nothing until the first request; a stale one fails there.
   */
  readonly prior?: McpEraVerdict | undefined;
}

/**
 * Which protocol era an HTTP server speaks, as a probe found it: `modern` (2026-07-28 or later; `discover` is the
 * server's `server/discover` answer) or `legacy` (the 2025 revisions and their `initialize` handshake). It holds for
 * the target and credentials it was found with only, and only for a while: a server may be upgraded.
 */
export type McpEraVerdict = { readonly era: 'legacy' } | { readonly era: 'modern'; readonly discover: JsonRecord };

/** A live connection to one MCP server, after the handshake. */
export interface McpSession {
  /** The pool key of the target (a hash; no secrets). */
  readonly key: string;
  /** The target's transport. */
  readonly transport: McpTarget['transport'];
  /** The server's name and version from the handshake. */
  readonly serverInfo: McpImplementation;
  /** The protocol version both sides agreed on (2026-07-28 with a server that offers it, over HTTP). */
  readonly protocolVersion: string;
  /** HTTP: the era negotiation found, reusable as McpConnectOptions.prior for the same target; undefined for stdio. */
  readonly eraVerdict: McpEraVerdict | undefined;
  /** What the server said it supports. */
  readonly capabilities: McpServerCapabilities;
  /** The server's usage instructions, if it sent any (untrusted text). */
  readonly instructions: string | undefined;
  /** stdio: the server's process id (its process group id too). */
  readonly pid: number | undefined;
  /** False once the session closed, by close() or because it broke. */
  readonly isOpen: boolean;
  /** All tools, following pagination to the end. */
  listTools(options?: McpListOptions): Promise<McpTool[]>;
  /** All resources, following pagination to the end. */
  listResources(options?: McpListOptions): Promise<McpResource[]>;
  /** All resource templates (resources/templates/list), following pagination to the end. */
  listResourceTemplates(options?: McpListOptions): Promise<McpResourceTemplate[]>;
  /** All prompts, following pagination to the end. */
  listPrompts(options?: McpListOptions): Promise<McpPrompt[]>;
  /** A round trip to the server (`ping`; `server/discover` at 2026-07-28, which has no ping). */
  ping(options?: McpRequestOptions): Promise<void>;
  /** Calls a tool; an `isError` result is returned, not thrown. */
  callTool(name: string, args: Record<string, unknown>, options?: McpRequestOptions): Promise<McpToolResult>;
  /** Reads a resource (resources/read); a failure is never UNKNOWN_OUTCOME: a read has no effect. */
  readResource(uri: string, options?: McpRequestOptions): Promise<McpResourceContents>;
  /** Gets a prompt with its arguments (prompts/get). */
  getPrompt(name: string, args: Record<string, string>, options?: McpRequestOptions): Promise<McpPromptMessages>;
  /**
   * Asks for values of a prompt's or resource template's argument (completion/complete). A server that did not declare
   * the `completions` capability is not asked: it has none to offer, so the answer is no values.
   */
  complete(request: McpCompletionRequest, options?: McpRequestOptions): Promise<McpCompletion>;
  /**
   * Calls `listener` on every `notifications/tools|resources|prompts/list_changed`, naming the list; returns the
   * unsubscribe function. At 2026-07-28 the first listener opens the `subscriptions/listen` stream they arrive on.
   */
  onListChanged(listener: (list: McpList) => void): () => void;
  /** Calls `listener` once when the session closes, with the reason if it broke. */
  onClose(listener: (reason: ToolplaneError | undefined) => void): () => void;
  /** Resolves (never rejects) when the session has closed: with the reason if it broke, undefined after close(). */
  closed(): Promise<ToolplaneError | undefined>;
  /** stdio: the most recent stderr of the server (bounded); empty for HTTP. */
  stderrTail(): string;
  /** Ends the session: stdio kills the server's process group; HTTP ends the session on the server and aborts requests. */
  close(): Promise<void>;
}

/** Defaults of McpConnectOptions. */
export const MCP_DEFAULTS = {
  handshakeTimeoutMs: 30_000,
  requestTimeoutMs: 60_000,
  maxMessageBytes: 4 * 1024 * 1024,
  maxStderrBytes: 64 * 1024,
  killGraceMs: 2_000,
  clientInfo: { name: 'toolplane', version: '0.1.0' },
} as const;

// The SDK applies its own timeout to every request (60 s by default); ours must always fire first so the
// failure is classified by our deadline, hence the SDK gets a longer one.
const SDK_TIMEOUT_SLACK_MS = 5_000;
// How long close() waits for an HTTP server to acknowledge the end of the session.
const TERMINATE_SESSION_MS = 2_000;

/** The minimal PATH a stdio server gets unless told otherwise: where node is, and the system directories. */
export function minimalPath(): string {
  return [...new Set([path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'])].join(':');
}

/**
 * Connects to an MCP server and completes the handshake (protocol version negotiation, capabilities). Failures
 * are ToolplaneErrors: a missing stdio command is NOT_FOUND, a refused connection TEMPORARY_UNAVAILABLE, HTTP
 * 401/403/404/429 AUTHENTICATION_FAILED/AUTHORIZATION_DENIED/NOT_FOUND/RATE_LIMITED, a passed deadline TIMEOUT.
 * Nothing is left running when it fails.
 */
export async function connectMcp(target: McpTarget, options: McpConnectOptions = {}): Promise<McpSession> {
  validateTarget(target);
  const maxMessageBytes = options.maxMessageBytes ?? MCP_DEFAULTS.maxMessageBytes;
  const description = describeTarget(target);
  const timeoutMs = options.timeoutMs ?? MCP_DEFAULTS.handshakeTimeoutMs;
  const signal = options.signal;
  const failBeforeStart = (aborted: 'deadline' | 'cancelled') =>
    translateMcpError(undefined, { method: 'initialize', target: description, dispatched: false, aborted, timeoutMs });
  if (signal?.aborted === true) throw failBeforeStart(abortKind(signal.reason));
  if (!(timeoutMs > 0)) throw failBeforeStart('deadline');

  let broken: (error: ToolplaneError) => void = () => undefined;
  let stdio: ChildProcessTransport | undefined;
  let http: { transport: StreamableHTTPClientTransport; fetch: SessionFetch } | undefined;
  if (target.transport === 'stdio') {
    stdio = new ChildProcessTransport(target, {
      maxMessageBytes,
      maxStderrBytes: options.maxStderrBytes ?? MCP_DEFAULTS.maxStderrBytes,
      killGraceMs: options.killGraceMs ?? MCP_DEFAULTS.killGraceMs,
      path: options.stdioPath ?? minimalPath(),
      onStderr: options.onStderr,
      sandbox: options.sandbox,
    });
  } else {
    const sessionFetch = createSessionFetch({ maxMessageBytes, onOversized: (error) => broken(error) });
    const transport = new StreamableHTTPClientTransport(new URL(target.url), {
      fetch: sessionFetch.fetch,
      requestInit: { headers: { ...target.headers } },
      // A long-lived standalone event stream is reopened a few times, not forever.
      reconnectionOptions: { initialReconnectionDelay: 1_000, maxReconnectionDelay: 30_000, reconnectionDelayGrowFactor: 1.5, maxRetries: 2 },
    });
    http = { transport, fetch: sessionFetch };
  }
  const transport = stdio ?? http!.transport;
  const client = new Client({ ...(options.clientInfo ?? MCP_DEFAULTS.clientInfo) }, clientOptions(target));
  const session = new ClientSession({
    key: mcpTargetKey(target),
    target,
    description,
    client,
    stdio,
    http,
    requestTimeoutMs: options.requestTimeoutMs ?? MCP_DEFAULTS.requestTimeoutMs,
  });
  broken = (error) => session.breakWith(error);

  const controller = new AbortController();
  let aborted: 'deadline' | 'cancelled' | undefined;
  const stop = (kind: 'deadline' | 'cancelled', reason: unknown) => {
    aborted ??= kind;
    controller.abort(reason);
    // The handshake's last step (the `initialized` notification) takes no signal: closing the transport ends it.
    void transport.close();
  };
  const timer = setTimeout(() => stop('deadline', new ToolplaneError('TIMEOUT', 'handshake deadline')), timeoutMs);
  const onAbort = () => stop(abortKind(signal?.reason), signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const prior = target.transport === 'http' ? priorDiscovery(options.prior) : undefined;
    const connectOptions = { signal: controller.signal, timeout: timeoutMs + SDK_TIMEOUT_SLACK_MS };
    await client.connect(transport, prior === undefined ? connectOptions : { ...connectOptions, prior });
    session.completeHandshake();
    return session;
  } catch (error) {
    await session.close();
    const failure = translateMcpError(error, {
      method: 'initialize',
      target: description,
      dispatched: true,
      aborted,
      timeoutMs,
      transportFailure: session.failureReason ?? stdio?.failureReason,
      transportClosed: true,
    });
    throw withStderrTail(failure, stdio?.stderrTail() ?? '');
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The SDK client for a target. It declares no capabilities, so a 2026-07-28 server's request for interactive input
 * (`input_required`) fails the request instead of being answered.
 *
 * Over HTTP the era is negotiated (`server/discover`, then `initialize` if the server does not know it): a 2026-07-28
 * server is spoken to at 2026-07-28, a 2025 one as before, for the price of one round trip, which a pool saves with
 * a cached verdict. Over stdio the 2025 `initialize` handshake is kept. The probe would run in place on the one
 * server process (the SDK spawns a disposable sibling only for its own stdio transport): servers that answer an
 * unknown method at once (the 1.x SDK's, server-everything) cost nothing measurable, but one that ignores requests
 * before `initialize` stalls the connection for the whole probe timeout (10 s of a 10 s probe, measured) and one that
 * exits on them (as servers built on the Rust SDK do) fails the connection outright.
 */
function clientOptions(target: McpTarget): ClientOptions {
  return {
    capabilities: {},
    inputRequired: { autoFulfill: false },
    ...(target.transport === 'http' ? { versionNegotiation: { mode: 'auto' } } : {}),
  };
}

/** A verdict as the SDK takes it. */
function priorDiscovery(verdict: McpEraVerdict | undefined): PriorDiscovery | undefined {
  if (verdict === undefined) return undefined;
  return verdict.era === 'modern' ? { kind: 'modern', discover: verdict.discover as DiscoverResult } : { kind: 'legacy' };
}

/** How much of a stdio server's stderr a failed handshake's message quotes (its end: where the reason usually is). */
const HANDSHAKE_STDERR_QUOTE_BYTES = 2048;

/**
 * The handshake failure with the end of the server's stderr quoted (one line, JSON-escaped): a server that dies at
 * start says why there (a missing module, a bad flag), and the caller otherwise sees only an exit code.
 */
function withStderrTail(failure: ToolplaneError, stderr: string): ToolplaneError {
  const bytes = Buffer.from(stderr.trimEnd(), 'utf8');
  if (bytes.length === 0) return failure;
  const tail = bytes.subarray(Math.max(0, bytes.length - HANDSHAKE_STDERR_QUOTE_BYTES)).toString('utf8');
  const quoted = JSON.stringify(bytes.length > HANDSHAKE_STDERR_QUOTE_BYTES ? `…${tail}` : tail);
  return new ToolplaneError(failure.code, `${failure.message}; server stderr: ${quoted}`, {
    cause: failure.cause,
    retryable: failure.retryable,
    ...(failure.details === undefined ? {} : { details: failure.details }),
  });
}

/** Whether an abort reason means a deadline (AbortSignal.timeout, a TIMEOUT error) or a cancellation. */
function abortKind(reason: unknown): 'deadline' | 'cancelled' {
  if (typeof reason === 'object' && reason !== null) {
    const { name, code } = reason as { name?: unknown; code?: unknown };
    if (name === 'TimeoutError' || code === 'TIMEOUT') return 'deadline';
  }
  return 'cancelled';
}

interface SessionParts {
  readonly key: string;
  readonly target: McpTarget;
  readonly description: string;
  readonly client: Client;
  readonly stdio: ChildProcessTransport | undefined;
  readonly http: { transport: StreamableHTTPClientTransport; fetch: SessionFetch } | undefined;
  readonly requestTimeoutMs: number;
}

/** The lists a server says it announces changes of, as a `subscriptions/listen` filter; undefined when none. */
function listChangedFilter(capabilities: McpServerCapabilities): SubscriptionFilter | undefined {
  const filter: SubscriptionFilter = {
    ...(capabilities.tools?.listChanged === true ? { toolsListChanged: true } : {}),
    ...(capabilities.resources?.listChanged === true ? { resourcesListChanged: true } : {}),
    ...(capabilities.prompts?.listChanged === true ? { promptsListChanged: true } : {}),
  };
  return Object.keys(filter).length === 0 ? undefined : filter;
}

// How long a dropped subscriptions/listen stream waits before it is reopened.
const RELISTEN_DELAY_MS = 1_000;

// Failures after which an HTTP session is not worth keeping: the pool then opens a fresh one (a restarted
// server no longer knows the session id; an oversized or garbled stream cannot be resynchronised).
const SESSION_BREAKING = /^(SessionExpired|Network\(|HttpStatus\((400|404)\)|MalformedReply|MessageTooLarge|UnexpectedContentType|ConnectionClosed)/;

class ClientSession implements McpSession {
  readonly key: string;
  readonly transport: McpTarget['transport'];
  private readonly parts: SessionParts;
  private info: McpImplementation = { name: '', version: '' };
  private version = '';
  private serverCapabilities: McpServerCapabilities = {};
  private serverInstructions: string | undefined;
  private readonly listChangedListeners = new Set<(list: McpList) => void>();
  /** Tools whose output schema was wrapped as `{ result }` (see era-projection.ts), so their results are too. */
  private readonly wrappedOutputs = new Set<string>();
  /** 2026-07-28: the `subscriptions/listen` stream list changes arrive on, once a listener asked for them. */
  private subscription: Promise<McpSubscription | undefined> | undefined;
  private readonly closeListeners = new Set<(reason: ToolplaneError | undefined) => void>();
  private failure: ToolplaneError | undefined;
  private closing: Promise<void> | undefined;
  private ended = false;
  private resolveClosed: (reason: ToolplaneError | undefined) => void = () => undefined;
  private readonly closedPromise: Promise<ToolplaneError | undefined>;

  constructor(parts: SessionParts) {
    this.parts = parts;
    this.key = parts.key;
    this.transport = parts.target.transport;
    this.closedPromise = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
    const announce = (list: McpList) => {
      for (const listener of [...this.listChangedListeners]) {
        try {
          listener(list);
        } catch {
          // A listener's failure is its own business; the others still hear about the change.
        }
      }
    };
    parts.client.setNotificationHandler('notifications/tools/list_changed', () => announce('tools'));
    parts.client.setNotificationHandler('notifications/resources/list_changed', () => announce('resources'));
    parts.client.setNotificationHandler('notifications/prompts/list_changed', () => announce('prompts'));
    // The SDK calls onclose when the transport ends, whoever ended it.
    parts.client.onclose = () => {
      if (this.closing === undefined) this.closing = this.finish(this.parts.stdio?.failureReason);
    };
    // Transport-level errors (a dropped event stream, an unparsable event) are reported per request where they
    // matter; here they are only absorbed so the SDK does not rethrow them.
    parts.client.onerror = () => undefined;
  }

  get serverInfo(): McpImplementation {
    return this.info;
  }

  get protocolVersion(): string {
    return this.version;
  }

  get eraVerdict(): McpEraVerdict | undefined {
    if (this.parts.http === undefined || this.version === '') return undefined;
    const discover = this.parts.client.getDiscoverResult();
    return discover === undefined ? { era: 'legacy' } : { era: 'modern', discover };
  }

  get capabilities(): McpServerCapabilities {
    return this.serverCapabilities;
  }

  get instructions(): string | undefined {
    return this.serverInstructions;
  }

  get pid(): number | undefined {
    return this.parts.stdio?.pid;
  }

  get isOpen(): boolean {
    return this.closing === undefined;
  }

  /** Why the session broke, if it did. */
  get failureReason(): ToolplaneError | undefined {
    return this.failure ?? this.parts.stdio?.failureReason;
  }

  /** Records what the handshake established. */
  completeHandshake(): void {
    const { client } = this.parts;
    const server = client.getServerVersion();
    this.info = { name: server?.name ?? '', version: server?.version ?? '', ...(server?.title === undefined ? {} : { title: server.title }) };
    this.serverCapabilities = client.getServerCapabilities() ?? {};
    this.serverInstructions = client.getInstructions();
    this.version = client.getNegotiatedProtocolVersion() ?? '';
  }

  /** Closes the session because it can no longer be trusted (oversized or garbled traffic). */
  breakWith(error: ToolplaneError): void {
    this.failure ??= error;
    void this.close();
  }

  listTools(options: McpListOptions = {}): Promise<McpTool[]> {
    return this.run('tools/list', options, undefined, (sdk) =>
      collectPages('tools', options, async (cursor) => {
        const page = await this.parts.client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, sdk);
        for (const tool of page.tools) {
          if (tool.outputSchema !== undefined && isNonObjectSchemaRoot(tool.outputSchema)) this.wrappedOutputs.add(tool.name);
          else this.wrappedOutputs.delete(tool.name);
        }
        return { items: page.tools.map(normalizeTool), nextCursor: page.nextCursor };
      }),
    );
  }

  listResources(options: McpListOptions = {}): Promise<McpResource[]> {
    return this.run('resources/list', options, undefined, (sdk) =>
      collectPages('resources', options, async (cursor) => {
        const page = await this.parts.client.request({ method: 'resources/list', params: cursor === undefined ? {} : { cursor } }, sdk);
        return { items: page.resources.map(normalizeResource), nextCursor: page.nextCursor };
      }),
    );
  }

  listResourceTemplates(options: McpListOptions = {}): Promise<McpResourceTemplate[]> {
    return this.run('resources/templates/list', options, undefined, (sdk) =>
      collectPages('resource templates', options, async (cursor) => {
        const page = await this.parts.client.request({ method: 'resources/templates/list', params: cursor === undefined ? {} : { cursor } }, sdk);
        return { items: page.resourceTemplates.map(normalizeResourceTemplate), nextCursor: page.nextCursor };
      }),
    );
  }

  listPrompts(options: McpListOptions = {}): Promise<McpPrompt[]> {
    return this.run('prompts/list', options, undefined, (sdk) =>
      collectPages('prompts', options, async (cursor) => {
        const page = await this.parts.client.request({ method: 'prompts/list', params: cursor === undefined ? {} : { cursor } }, sdk);
        return { items: page.prompts.map(normalizePrompt), nextCursor: page.nextCursor };
      }),
    );
  }

  async ping(options: McpRequestOptions = {}): Promise<void> {
    const { client } = this.parts;
    // 2026-07-28 has no ping; server/discover is its cheapest round trip.
    if (client.getProtocolEra() === 'modern') await this.run('server/discover', options, undefined, (sdk) => client.discover(sdk));
    else await this.run('ping', options, undefined, (sdk) => client.request({ method: 'ping' }, sdk));
  }

  callTool(name: string, args: Record<string, unknown>, options: McpRequestOptions = {}): Promise<McpToolResult> {
    // The SDK's Client.callTool would also check structuredContent against the outputSchema it cached from
    // tools/list, and throw after the tool ran; validation against the bound schema is the caller's job.
    const traced = { transport: this.transport, sessionId: this.parts.http?.transport.sessionId, protocolVersion: this.version };
    return tracedToolCall(name, traced, (meta) =>
      this.run('tools/call', options, name, async (sdk) => {
        const params = meta === undefined ? { name, arguments: args } : { name, arguments: args, _meta: meta };
        return normalizeToolResult(await this.parts.client.request({ method: 'tools/call', params }, sdk), this.wrappedOutputs.has(name));
      }),
    );
  }

  readResource(uri: string, options: McpRequestOptions = {}): Promise<McpResourceContents> {
    return this.run('resources/read', options, undefined, async (sdk) =>
      normalizeResourceContents(await this.parts.client.request({ method: 'resources/read', params: { uri } }, sdk)),
    );
  }

  getPrompt(name: string, args: Record<string, string>, options: McpRequestOptions = {}): Promise<McpPromptMessages> {
    return this.run('prompts/get', options, undefined, async (sdk) =>
      normalizePromptMessages(await this.parts.client.request({ method: 'prompts/get', params: { name, arguments: args } }, sdk)),
    );
  }

  async complete(request: McpCompletionRequest, options: McpRequestOptions = {}): Promise<McpCompletion> {
    if (this.serverCapabilities.completions === undefined) return { values: [] };
    const { ref, argument, context } = request;
    const params = { ref: { ...ref }, argument: { ...argument }, ...(context === undefined ? {} : { context: { arguments: { ...context } } }) };
    return this.run('completion/complete', options, undefined, async (sdk) => normalizeCompletion(await this.parts.client.complete(params, sdk)));
  }

  onListChanged(listener: (list: McpList) => void): () => void {
    this.listChangedListeners.add(listener);
    this.listenForChanges();
    return () => this.listChangedListeners.delete(listener);
  }

  /**
   * 2026-07-28 sends list changes only on a `subscriptions/listen` stream the client opens: opened for the lists
   * the server says change, kept open while the session is, and reopened (after a pause) when the server drops it.
   * A stream that cannot be reopened for a passing reason (the server is unreachable, no answer in time) breaks the
   * session, so its owner reconnects instead of missing changes.
   */
  private listenForChanges(): void {
    if (this.subscription !== undefined || !this.isOpen || this.parts.client.getProtocolEra() !== 'modern') return;
    const filter = listChangedFilter(this.serverCapabilities);
    if (filter === undefined) return;
    this.subscription = this.parts.client.listen(filter, { timeout: this.parts.requestTimeoutMs }).then(
      (subscription) => {
        void subscription.closed.then((how) => {
          if (how === 'local' || !this.isOpen) return;
          this.subscription = undefined;
          setTimeout(() => this.listenForChanges(), RELISTEN_DELAY_MS).unref();
        });
        return subscription;
      },
      (error: unknown) => {
        if (!this.isOpen) return undefined;
        const failure = translateMcpError(error, {
          method: 'subscriptions/listen',
          target: this.parts.description,
          dispatched: true,
          transportFailure: this.failureReason,
        });
        // A server that refuses the stream outright is not asked again (nor is the session broken over it).
        if (failure.retryable) this.breakWith(failure);
        return undefined;
      },
    );
  }

  onClose(listener: (reason: ToolplaneError | undefined) => void): () => void {
    if (this.ended) {
      listener(this.failure);
      return () => undefined;
    }
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  closed(): Promise<ToolplaneError | undefined> {
    return this.closedPromise;
  }

  stderrTail(): string {
    return this.parts.stdio?.stderrTail() ?? '';
  }

  close(): Promise<void> {
    this.closing ??= this.finish(undefined);
    return this.closing;
  }

  private async finish(reason: ToolplaneError | undefined): Promise<void> {
    this.failure ??= reason;
    const { client, http } = this.parts;
    if (http !== undefined && this.version !== '' && this.failure === undefined) {
      // Tell the server the session is over; a server that does not answer in time is not waited for.
      const timer = setTimeout(() => http.fetch.abortAll(new Error('session termination timed out')), TERMINATE_SESSION_MS);
      await http.transport.terminateSession().catch(() => undefined);
      clearTimeout(timer);
    }
    await client.close().catch(() => undefined);
    http?.fetch.abortAll(new Error('session closed'));
    this.ended = true;
    this.listChangedListeners.clear();
    for (const listener of [...this.closeListeners]) {
      try {
        listener(this.failure);
      } catch {
        // As for list-changed listeners.
      }
    }
    this.closeListeners.clear();
    this.resolveClosed(this.failure);
  }

  /**
   * After a 2025-era handshake, HTTP 404 (or 400, which some servers answer instead) means the server no longer knows
   * the session, typically because it restarted: the request was not processed, and a new session will do. At
   * 2026-07-28 there are no sessions, and the statuses mean what they say.
   */
  private sessionExpired(error: unknown): ToolplaneError | undefined {
    const status = streamableHttpStatus(error);
    if (this.parts.http === undefined || this.version === '' || (status !== 404 && status !== 400)) return undefined;
    if (this.parts.client.getProtocolEra() === 'modern') return undefined;
    return new ToolplaneError('TEMPORARY_UNAVAILABLE', `the server no longer knows this session (HTTP ${status}); a new session is needed`, {
      cause: error,
      details: { providerErrorType: 'SessionExpired', httpStatus: status, [NOT_DELIVERED]: true },
    });
  }

  private async run<T>(method: string, options: McpRequestOptions, toolName: string | undefined, send: (sdk: RequestOptions) => Promise<T>): Promise<T> {
    const timeoutMs = options.timeoutMs ?? this.parts.requestTimeoutMs;
    const { signal } = options;
    const context = (dispatched: boolean, aborted: 'deadline' | 'cancelled' | undefined) => ({
      method,
      target: this.parts.description,
      dispatched,
      aborted,
      timeoutMs,
      toolName,
      transportFailure: this.failureReason,
      transportClosed: !this.isOpen || this.parts.stdio?.isClosed === true,
    });
    if (signal?.aborted === true) throw translateMcpError(signal.reason, context(false, abortKind(signal.reason)));
    if (!(timeoutMs > 0)) throw translateMcpError(undefined, context(false, 'deadline'));
    if (!this.isOpen) {
      const reason = this.failure === undefined ? 'the session is closed' : `the session broke: ${this.failure.message}`;
      throw translateMcpError(new ToolplaneError('TEMPORARY_UNAVAILABLE', reason, { details: { providerErrorType: 'SessionClosed', [NOT_DELIVERED]: true } }), context(false, undefined));
    }
    // A signal per request: the SDK adds an abort listener to the signal it is given and never removes it, so a
    // long-lived caller signal must not be handed to it directly.
    const controller = new AbortController();
    let aborted: 'deadline' | 'cancelled' | undefined;
    const timer = setTimeout(() => {
      aborted ??= 'deadline';
      controller.abort(new ToolplaneError('TIMEOUT', `${method} deadline`));
    }, timeoutMs);
    const onAbort = () => {
      aborted ??= abortKind(signal?.reason);
      controller.abort(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    let dispatched = false;
    try {
      // The SDK hands the request to the transport synchronously inside request(); from here on the server may
      // have received it.
      const pending = send({ signal: controller.signal, timeout: timeoutMs + SDK_TIMEOUT_SLACK_MS });
      dispatched = true;
      return await pending;
    } catch (error) {
      const translated = translateMcpError(this.sessionExpired(error) ?? error, context(dispatched, aborted));
      const providerErrorType = translated.details?.['providerErrorType'];
      if (this.parts.http !== undefined && typeof providerErrorType === 'string' && SESSION_BREAKING.test(providerErrorType)) this.breakWith(translated);
      throw translated;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
