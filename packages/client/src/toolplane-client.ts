import { randomUUID } from 'node:crypto';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  EffectiveToolSet,
  EffectiveToolSetRequest,
  InvocationReply,
  InvocationRequest,
  LookupInvocationReply,
  LookupInvocationRequest,
  ToolplaneError,
  abortError,
  adapterOperations,
  commandSubject,
  fromWireError,
  hasErrorCode,
  invocationReplySubject,
  invocationRequestMsgId,
  invocationRequestSubject,
  raceAbort,
  sleep,
  throwIfAborted,
  type ErrorCode,
  type InvocationCompletion,
  type InvocationResult,
  type JsonObject,
  type Scope,
} from '@toolplane/contracts';
import { connectMessaging, publish, request, type Messaging, type PublishAck } from '@toolplane/messaging';
import { lifecycleEvents, type EventFilter, type EventStream } from './event-stream.js';
import { defaultInboxPrefix } from './inbox-prefix.js';
import { boundedTimeoutMs, prepareInvocation, type InvokeOptions } from './invocation-request.js';
import { defaultRecoveryBackoff, recoveryDelayMs, unsettledError, type RecoveryBackoff } from './reply-recovery.js';

/** Why what a call started stops: it has its answer (one reason for all, which abortError passes on as it is: no DOMException and no error is built per call). */
const callSettled = new ToolplaneError('CANCELLED', 'the call has its answer');

/** The agent's signed context token, or a function that returns a current one (called for every request). */
export type ContextTokenSource = string | (() => Promise<string> | string);

/** Why the client stopped waiting for the direct reply and asked the adapter instead. */
export type ReplyLossReason = 'duplicate_request' | 'reconnected' | 'no_reply_yet';

/** What the client reports for logs and metrics; never arguments, results or tokens. */
export type ClientDiagnostic =
  | { readonly type: 'reply_lost'; readonly idempotencyKey: string; readonly reason: ReplyLossReason }
  | { readonly type: 'recovered'; readonly idempotencyKey: string; readonly lookups: number }
  | { readonly type: 'lookup_failed'; readonly idempotencyKey: string; readonly code: ErrorCode };

interface ClientSettings {
  /** The workspace the runtime acts in; NATS permissions should pin the runtime's credential to it. */
  readonly scope: Scope;
  readonly contextToken: ContextTokenSource;
  /**
   * How long `invoke` (and `await`) waits for an outcome when the call names no timeout; default 60 000 ms, long
   * enough to cover the takeover of a call whose adapter died (its delivery is redelivered to another replica within
   * about ten seconds) and the takeover's own run, so a caller sees the call's one outcome instead of a TIMEOUT.
   */
  readonly defaultTimeoutMs?: number;
  /** Deadline of lookups and effective-tool requests; default 5 000 ms. */
  readonly requestTimeoutMs?: number;
  /** How long `invoke` waits for the direct reply before it also starts looking the call up; default 10 000 ms. */
  readonly recoverAfterMs?: number;
  /**
   * How long after the deadline `invoke` keeps looking the call up: the adapter ends a call at its deadline and
   * records the ending just after, so the outcome of a call cut short is still learnt; default 3 000 ms.
   */
  readonly recoveryGraceMs?: number;
  readonly recoveryBackoff?: RecoveryBackoff;
  readonly onDiagnostic?: (diagnostic: ClientDiagnostic) => void;
  /** Tests only: ignore every direct reply, so each outcome is learnt by lookup (a reply lost on the way). */
  readonly dropRepliesForTesting?: boolean;
}

/** A connection the caller owns (and closes). */
export interface OwnConnectionOptions {
  /**
   * Its replies and acknowledgements arrive under the inbox prefix it was connected with: where the NATS
   * permissions confine the runtime's credential to its own prefix, connect it with
   * `connectMessaging({ …, inboxPrefix: defaultInboxPrefix(scope) })` (or the prefix the permissions name).
   */
  readonly messaging: Messaging;
  readonly natsUrl?: never;
  readonly inboxPrefix?: never;
}

/** A connection the client opens (and closes on `close()`). */
export interface ClientConnectionOptions {
  readonly natsUrl: string;
  readonly connectionName?: string;
  /**
   * Where replies to its requests and JetStream acknowledgements of its publishes arrive; default
   * `defaultInboxPrefix(scope)`, `_INBOX_<tenant>.<workspace>`: let the runtime's NATS user subscribe to
   * `_INBOX_<tenant>.>` (not `_INBOX.>`). Dot-separated tokens of letters, digits, `_` and `-`; else INVALID_ARGUMENT.
   */
  readonly inboxPrefix?: string;
  readonly messaging?: never;
}

/** How to make a client: over a connection the caller owns, or over one the client opens (and closes). */
export type ToolplaneClientOptions = ClientSettings & (OwnConnectionOptions | ClientConnectionOptions);

/** Options of a lookup or an effective-tool request. */
export interface RequestCallOptions {
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** The context token of this request instead of the client's. */
  readonly contextToken?: string;
}

/** The request a lookup or an `await` means: the tool, the version if one was named, and the arguments. */
export type LookedUpRequest = NonNullable<LookupInvocationRequest['request']>;

/** Options of a lookup: with `request`, a key that holds another request is CONFLICT instead of its result. */
export interface LookupOptions extends RequestCallOptions {
  readonly request?: LookedUpRequest;
}

/** Options of `await`: how long to wait (default: the client's invoke timeout), and the request the caller means. */
export interface AwaitOptions {
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** The request the caller made under the key; when given, a key holding another request is CONFLICT. */
  readonly expect?: LookedUpRequest;
  /** The context token of its lookups instead of the client's. */
  readonly contextToken?: string;
}

/** The argument a completion asks values for, and what has been typed so far. */
export type CompletionArgument = InvocationCompletion['argument'];

/** Options of `complete`: those of any call, the arguments already chosen (MCP's `context.arguments`), and what the id binds. */
export interface CompleteOptions extends Omit<InvokeOptions, 'capability' | 'completion'> {
  readonly context?: Readonly<Record<string, string>>;
  /** A prompt (the default), or a bound resource template whose variables are completed. */
  readonly capability?: 'prompt' | 'resource';
}

/** Options of `readResource`: those of any call, and the variables of a bound resource template (its arguments). */
export interface ReadResourceOptions extends Omit<InvokeOptions, 'capability' | 'completion'> {
  /** A bound resource template's variables, each a string; a resource of one fixed URI takes none. */
  readonly variables?: Readonly<Record<string, string>>;
}

/** What `effectiveTools` asks: the run policy, task scope and risk restrictions to apply, and whether to explain. */
export type EffectiveToolsQuery = Omit<EffectiveToolSetRequest, 'contextToken'>;

/** The agent-runtime SDK: governed tool calls, their recovery, the effective tool set and lifecycle events. */
export interface ToolplaneClient {
  readonly scope: Scope;
  /**
   * Calls a tool through the governed pipeline and returns its result with the signed receipt. A call that ended
   * DENIED, FAILED, UNCERTAIN or CANCELLED is returned too (its receipt is the record; see `requireSuccess`). Throws
   * a ToolplaneError when there is no result: the adapter refused the request itself (AUTHENTICATION_FAILED, CONFLICT
   * for a key used with other arguments, INVALID_ARGUMENT), the signal aborted (CANCELLED), or no outcome came by the
   * deadline (TIMEOUT, UNKNOWN_OUTCOME once the tool was called, APPROVAL_PENDING while a human has not decided:
   * re-attach with `await(key)`). A reply lost on the way is recovered by looking the call up under its idempotency
   * key, never by invoking again, and that lookup names the request, so the same key with another request is
   * CONFLICT whichever way the answer comes. A request over MAX_REQUEST_BYTES is INVALID_ARGUMENT before it is sent;
   * a connection lost and regained on the way is carried through with the same key.
   */
  invoke(toolId: string, args: JsonObject, options?: InvokeOptions): Promise<InvocationResult>;
  /**
   * Reads a bound resource through the governed pipeline (agent permission, tenant policy, the resource's
   * classification against the agent's clearance, credentials, sanitization, events, receipt), like `invoke` with no
   * arguments; a bound resource template with its variables as the arguments (`options.variables`), read at the URI
   * the template expands to. `resourceContents(result)` gives the contents.
   */
  readResource(resourceId: string, options?: ReadResourceOptions): Promise<InvocationResult>;
  /** Fetches a bound prompt with its arguments through the governed pipeline, like `invoke`; `promptMessages(result)` gives the messages. */
  getPrompt(promptId: string, args?: Readonly<Record<string, string>>, options?: InvokeOptions): Promise<InvocationResult>;
  /**
   * Asks for values of a bound prompt's argument (MCP `completion/complete`) through the governed pipeline: the agent
   * must be allowed the prompt as for `getPrompt`, and the call is recorded and receipted like any (always READ, never
   * put to a human: where the policy would ask one, it is DENIED). `argument` is the one to complete with what has been
   * typed so far; `options.context` the arguments already chosen; `options.capability: 'resource'` completes a variable
   * of a bound resource template instead. `completionValues(result)` gives the values.
   */
  complete(promptId: string, argument: CompletionArgument, options?: CompleteOptions): Promise<InvocationResult>;
  /**
   * Re-attaches to the agent's call under `idempotencyKey` and waits for its result: the outcome of a call that ended
   * (or ends before the wait does). NOT_FOUND for a key the adapter has no call of this agent under; at the end of the
   * wait APPROVAL_PENDING while the call still waits for its approval, TIMEOUT or UNKNOWN_OUTCOME otherwise.
   */
  await(idempotencyKey: string, options?: AwaitOptions): Promise<InvocationResult>;
  /**
   * Where the agent's call under `idempotencyKey` is; with its result once ended. NOT_FOUND for unknown keys; with
   * `request`, CONFLICT when the key holds another request.
   */
  lookup(idempotencyKey: string, options?: LookupOptions): Promise<LookupInvocationReply>;
  /** The tools the model may see (with `explain`, also why the others are hidden). */
  effectiveTools(query?: EffectiveToolsQuery, options?: RequestCallOptions): Promise<EffectiveToolSet>;
  /** The workspace's lifecycle events, in stream order, filtered; end it with `break`, `close()` or the filter's signal. */
  events(filter?: EventFilter): EventStream;
  /** Stops watching the connection, and closes it when the client opened it. */
  close(): Promise<void>;
}

/**
 * Makes a client; with `natsUrl` it connects first, with its inbox prefix (TEMPORARY_UNAVAILABLE when NATS cannot be
 * reached, INVALID_ARGUMENT for a malformed URL, prefix or scope).
 */
export async function createToolplaneClient(options: ToolplaneClientOptions): Promise<ToolplaneClient> {
  if (options.messaging !== undefined) return new Client(options.messaging, false, options);
  const inboxPrefix = options.inboxPrefix ?? defaultInboxPrefix(options.scope);
  const messaging = await connectMessaging({ url: options.natsUrl, name: options.connectionName ?? 'toolplane-client', inboxPrefix });
  return new Client(messaging, true, options);
}

class Client implements ToolplaneClient {
  readonly scope: Scope;
  readonly #messaging: Messaging;
  readonly #owned: boolean;
  readonly #settings: ClientSettings;
  readonly #defaultTimeoutMs: number;
  readonly #requestTimeoutMs: number;
  readonly #reconnectListeners = new Set<() => void>();
  readonly #statuses: AsyncIterable<{ type: string }>;

  constructor(messaging: Messaging, owned: boolean, settings: ClientSettings) {
    this.scope = { tenant: settings.scope.tenant, workspace: settings.scope.workspace };
    this.#messaging = messaging;
    this.#owned = owned;
    this.#settings = settings;
    this.#defaultTimeoutMs = boundedTimeoutMs(settings.defaultTimeoutMs ?? 60_000);
    this.#requestTimeoutMs = boundedTimeoutMs(settings.requestTimeoutMs ?? 5_000);
    this.#statuses = messaging.connection.status();
    void this.#watchReconnects();
  }

  invoke(toolId: string, args: JsonObject, options: InvokeOptions = {}): Promise<InvocationResult> {
    // One CLIENT span per governed call: the request's headers carry it, so the adapter's spans join its trace. Its
    // attributes name the call (tool, scope, ids, how it ended), never its arguments, result or token.
    const attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': toolId,
      'toolplane.tenant': this.scope.tenant,
      'toolplane.workspace': this.scope.workspace,
    };
    return trace.getTracer('@toolplane/client').startActiveSpan(`toolplane.invoke ${toolId}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      try {
        const result = await this.#invoke(toolId, args, options);
        const { receipt } = result;
        span.setAttribute('toolplane.tool_call_id', receipt.toolCallId);
        if (receipt.sideEffectClass !== undefined) span.setAttribute('toolplane.side_effect_class', receipt.sideEffectClass);
        if (receipt.failure !== undefined) {
          span.setAttributes({ 'error.type': receipt.failure.code, 'toolplane.error_code': receipt.failure.code });
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        return result;
      } catch (error) {
        const code = hasErrorCode(error) ? error.code : 'INTERNAL';
        span.setAttributes({ 'error.type': code, 'toolplane.error_code': code });
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    });
  }

  readResource(resourceId: string, options: ReadResourceOptions = {}): Promise<InvocationResult> {
    const { variables, ...rest } = options;
    return this.invoke(resourceId, { ...variables }, { ...rest, capability: 'resource' });
  }

  getPrompt(promptId: string, args: Readonly<Record<string, string>> = {}, options: InvokeOptions = {}): Promise<InvocationResult> {
    return this.invoke(promptId, { ...args }, { ...options, capability: 'prompt' });
  }

  complete(promptId: string, argument: CompletionArgument, options: CompleteOptions = {}): Promise<InvocationResult> {
    const { context, capability, ...rest } = options;
    return this.invoke(promptId, { ...context }, { ...rest, capability: capability ?? 'prompt', completion: { argument: { name: argument.name, value: argument.value } } });
  }

  async #invoke(toolId: string, args: JsonObject, options: InvokeOptions): Promise<InvocationResult> {
    const what = `invoking ${toolId}`;
    throwIfAborted(options.signal, what);
    const timeoutMs = boundedTimeoutMs(options.timeoutMs ?? this.#defaultTimeoutMs);
    const deadline = Date.now() + timeoutMs;
    const contextToken = await raceAbort(this.#token(options.contextToken), options.signal, what);
    const replyInbox = `inbox_${randomUUID().replaceAll('-', '')}`;
    const prepared = prepareInvocation(toolId, args, options, { contextToken, replyInbox, timeoutMs, newId: randomUUID });
    const key = prepared.idempotencyKey;
    const meant: LookedUpRequest = {
      toolId: prepared.request.toolId,
      ...(prepared.request.toolVersion === undefined ? {} : { toolVersion: prepared.request.toolVersion }),
      arguments: prepared.request.arguments,
      ...(prepared.request.completion === undefined ? {} : { completion: prepared.request.completion }),
    };

    // Everything this call started stops once it has an answer (or the caller gives up).
    const settled = new AbortController();
    const work = options.signal ? AbortSignal.any([options.signal, settled.signal]) : settled.signal;
    let lost: (reason: ReplyLossReason) => void = () => undefined;
    const replyLost = new Promise<ReplyLossReason>((resolve) => (lost = resolve));
    const onReconnect = () => lost('reconnected');
    let timer: NodeJS.Timeout | undefined;
    let subscription: { unsubscribe(): void } | undefined;

    const reply = new Promise<InvocationResult>((resolve, reject) => {
      subscription = this.#messaging.connection.subscribe(invocationReplySubject(this.scope, replyInbox), {
        callback: (error, message) => {
          if (error !== null) return reject(new ToolplaneError('TEMPORARY_UNAVAILABLE', `cannot listen for the reply to ${toolId}: ${error.message}`, { cause: error }));
          if (this.#settings.dropRepliesForTesting === true) return;
          let parsed: ReturnType<typeof InvocationReply.safeParse>;
          try {
            parsed = InvocationReply.safeParse(JSON.parse(message.string()));
          } catch {
            return reject(new ToolplaneError('INTERNAL', `the reply to ${toolId} is not JSON`));
          }
          if (!parsed.success) return reject(new ToolplaneError('INTERNAL', `the reply to ${toolId} breaks its contract`));
          if (parsed.data.ok) resolve(parsed.data.data);
          else reject(fromWireError(parsed.data.error));
        },
      });
    });
    const recovery = replyLost.then((reason) => {
      this.#settings.onDiagnostic?.({ type: 'reply_lost', idempotencyKey: key, reason });
      // The adapter ends a call at its deadline and records the ending just after: the grace learns that ending.
      const endAt = deadline + (this.#settings.recoveryGraceMs ?? 3_000);
      return this.#follow(key, { endAt, timeoutMs, signal: work, what, request: meant, unknownKey: 'wait', contextToken: options.contextToken });
    });
    // Whichever loses the race settles unobserved; its rejection is expected.
    reply.catch(() => undefined);
    recovery.catch(() => undefined);
    try {
      // The server knows the inbox before the request can be answered: it reads a connection's SUB before the PUB
      // that follows it, and the reply can only come after the request was stored. A flush (a round trip per call)
      // adds nothing to that ordering; it is needed only to wait out a connection that is down right now.
      if (!this.#messaging.isConnected()) await this.#listening({ deadline, signal: work, what, key });
      this.#reconnectListeners.add(onReconnect);
      const ack = await this.#publish(prepared.request, { deadline, signal: work, what, key });
      // A duplicate was published before (a retry of the same call): its reply went to that call's inbox.
      if (ack.duplicate) lost('duplicate_request');
      const recoverAfterMs = Math.min(this.#settings.recoverAfterMs ?? 10_000, Math.max(0, deadline - Date.now()));
      timer = setTimeout(() => lost('no_reply_yet'), recoverAfterMs);
      return await raceAbort(Promise.race([reply, recovery]), options.signal, what);
    } finally {
      settled.abort(callSettled);
      clearTimeout(timer);
      this.#reconnectListeners.delete(onReconnect);
      subscription?.unsubscribe();
    }
  }

  async await(idempotencyKey: string, options: AwaitOptions = {}): Promise<InvocationResult> {
    const what = `awaiting the call under ${idempotencyKey}`;
    throwIfAborted(options.signal, what);
    const timeoutMs = boundedTimeoutMs(options.timeoutMs ?? this.#defaultTimeoutMs);
    const signal = options.signal ?? new AbortController().signal;
    return this.#follow(idempotencyKey, { endAt: Date.now() + timeoutMs, timeoutMs, signal, what, request: options.expect, unknownKey: 'refuse', contextToken: options.contextToken });
  }

  async lookup(idempotencyKey: string, options: LookupOptions = {}): Promise<LookupInvocationReply> {
    const contextToken = await raceAbort(this.#token(options.contextToken), options.signal, 'looking up an invocation');
    return request(this.#messaging, {
      subject: commandSubject(this.scope, 'adapter', adapterOperations.lookupInvocation),
      requestSchema: LookupInvocationRequest,
      replySchema: LookupInvocationReply,
      body: { contextToken, idempotencyKey, ...(options.request === undefined ? {} : { request: options.request }) },
      timeoutMs: options.timeoutMs ?? this.#requestTimeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  async effectiveTools(query: EffectiveToolsQuery = {}, options: RequestCallOptions = {}): Promise<EffectiveToolSet> {
    const contextToken = await raceAbort(this.#token(options.contextToken), options.signal, 'asking for the effective tools');
    return request(this.#messaging, {
      subject: commandSubject(this.scope, 'adapter', adapterOperations.effectiveTools),
      requestSchema: EffectiveToolSetRequest,
      replySchema: EffectiveToolSet,
      body: { ...query, contextToken },
      timeoutMs: options.timeoutMs ?? this.#requestTimeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  events(filter: EventFilter = {}): EventStream {
    return lifecycleEvents(this.#messaging, this.scope, filter);
  }

  async close(): Promise<void> {
    this.#reconnectListeners.clear();
    const statuses = this.#statuses as { stop?: () => void };
    if (typeof statuses.stop === 'function') statuses.stop();
    if (this.#owned) await this.#messaging.drain();
  }

  /** The token a request goes with: the one given for it, else the client's. */
  async #token(override?: string): Promise<string> {
    if (override !== undefined) return override;
    const source = this.#settings.contextToken;
    return typeof source === 'string' ? source : await source();
  }

  /** Publishes the request, retrying what may be retried until the deadline: the Nats-Msg-Id makes a retry harmless. */
  async #publish(message: InvocationRequest, call: { deadline: number; signal: AbortSignal; what: string; key: string }): Promise<PublishAck> {
    const msgId = invocationRequestMsgId(this.scope, message);
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await publish(this.#messaging, {
          subject: invocationRequestSubject(this.scope),
          schema: InvocationRequest,
          message,
          msgId,
          timeoutMs: Math.max(1, Math.min(this.#requestTimeoutMs, call.deadline - Date.now())),
          signal: call.signal,
        });
      } catch (error) {
        if (call.signal.aborted || !hasErrorCode(error) || !error.retryable || Date.now() >= call.deadline) {
          if (hasErrorCode(error) && error.code !== 'CANCELLED') {
            throw new ToolplaneError(error.code, `${call.what}: the request could not be published (${error.message}); invoking again with the same key is safe`, {
              retryable: error.retryable,
              details: { idempotencyKey: call.key },
              cause: error,
            });
          }
          throw error;
        }
        await sleep(Math.min(recoveryDelayMs(attempt, this.#backoff()), Math.max(0, call.deadline - Date.now())), call.signal, call.what);
      }
    }
  }

  /**
   * Waits until the server knows the reply inbox's subscription. A flush cut by a lost connection is tried again
   * after the reconnect (the client resubscribes by itself) until the deadline; a closed connection ends the wait.
   */
  async #listening(call: { deadline: number; signal: AbortSignal; what: string; key: string }): Promise<void> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await raceAbort(this.#messaging.connection.flush(), call.signal, call.what);
        return;
      } catch (error) {
        if (call.signal.aborted) throw abortError(call.what, call.signal.reason);
        if (this.#messaging.connection.isClosed() || Date.now() >= call.deadline) {
          throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `${call.what}: NATS is not reachable, nothing was sent; invoking again with the same key is safe`, {
            details: { idempotencyKey: call.key },
            cause: error,
          });
        }
        await sleep(Math.min(recoveryDelayMs(attempt, this.#backoff()), Math.max(0, call.deadline - Date.now())), call.signal, call.what);
      }
    }
  }

  /**
   * Looks the call up until it has ended or `endAt` has passed: the one loop behind a lost reply's recovery and
   * `await`. The lookup names the request the caller means (when known), so a key holding another request ends the
   * loop with CONFLICT. A key not found yet is waited for (`wait`: the request may still be queued) or refused
   * (`refuse`: re-attaching to a call the adapter never recorded).
   */
  async #follow(
    key: string,
    call: {
      endAt: number;
      timeoutMs: number;
      signal: AbortSignal;
      what: string;
      request: LookedUpRequest | undefined;
      unknownKey: 'wait' | 'refuse';
      contextToken: string | undefined;
    },
  ): Promise<InvocationResult> {
    let lastSeen: LookupInvocationReply | undefined;
    let lookups = 0;
    for (let attempt = 0; ; attempt += 1) {
      if (call.signal.aborted) throw abortError(call.what, call.signal.reason);
      const remaining = call.endAt - Date.now();
      if (remaining <= 0) throw unsettledError(key, lastSeen, call.timeoutMs);
      try {
        lookups += 1;
        const timeoutMs = Math.max(1, Math.min(this.#requestTimeoutMs, remaining));
        const found = await this.lookup(key, {
          timeoutMs,
          signal: call.signal,
          ...(call.request === undefined ? {} : { request: call.request }),
          ...(call.contextToken === undefined ? {} : { contextToken: call.contextToken }),
        });
        if (found.result !== undefined) {
          this.#settings.onDiagnostic?.({ type: 'recovered', idempotencyKey: key, lookups });
          return found.result;
        }
        lastSeen = found;
      } catch (error) {
        if (call.signal.aborted) throw abortError(call.what, call.signal.reason);
        // CONFLICT: the key holds another request, which no wait changes.
        if (hasErrorCode(error) && (error.code === 'CONFLICT' || (error.code === 'NOT_FOUND' && call.unknownKey === 'refuse'))) throw error;
        // NOT_FOUND: not recorded yet (still queued); anything else (the adapter away, a token that just expired) may
        // pass. Both are retried until the end; the last thing seen decides the error.
        const code = hasErrorCode(error) ? error.code : 'INTERNAL';
        if (code !== 'NOT_FOUND') this.#settings.onDiagnostic?.({ type: 'lookup_failed', idempotencyKey: key, code });
      }
      await sleep(Math.min(recoveryDelayMs(attempt, this.#backoff()), Math.max(0, call.endAt - Date.now())), call.signal, call.what);
    }
  }

  #backoff(): RecoveryBackoff {
    return this.#settings.recoveryBackoff ?? defaultRecoveryBackoff;
  }

  async #watchReconnects(): Promise<void> {
    try {
      for await (const status of this.#statuses) {
        if (status.type === 'reconnect') for (const listener of this.#reconnectListeners) listener();
      }
    } catch {
      // The status iterator ends with the connection; nothing is left to watch.
    }
  }
}
