import { ToolplaneError } from '@toolplane/contracts';
import type { McpCompletion, McpCompletionRequest, McpList, McpPromptMessages, McpResourceContents, McpToolResult } from './model.js';
import { connectMcp, type McpConnectOptions, type McpEraVerdict, type McpRequestOptions, type McpSession } from './session.js';
import { describeTarget, mcpTargetKey, validateTarget, type McpTarget } from './target.js';

/** Options of createMcpPool. */
export interface McpPoolOptions {
  /** How sessions are opened (limits, handshake deadline…); `signal` is the pool's own. */
  readonly connect?: Omit<McpConnectOptions, 'signal'> | undefined;
  /**
   * Closes a session no call has used for this long (none by default). Targets carrying credentials change when a
   * credential is rotated or refreshed, and each credential set has its own session: without this, every old one
   * would stay open (a process, for stdio) until the pool closes.
   */
  readonly idleTimeoutMs?: number | undefined;
  /**
   * How long the protocol era an HTTP target was found to speak is reused by its next sessions, which then connect
   * without probing (default 10 minutes; 0 probes every time). A verdict is kept per target key, so never across
   * credentials, and forgotten when a session of the target breaks: a server may have been upgraded or replaced.
   */
  readonly eraVerdictTtlMs?: number | undefined;
  /** The clock idleness and verdict age are measured with (tests). */
  readonly now?: (() => number) | undefined;
}

/** How long an HTTP target's protocol era verdict is reused by default. */
const ERA_VERDICT_TTL_MS = 10 * 60_000;

/** Sessions shared by target: one open session per target key, reopened when it breaks. */
export interface McpPool {
  /** The open session for `target`, connecting (once, however many callers wait) if there is none. */
  session(target: McpTarget, options?: McpRequestOptions): Promise<McpSession>;
  /**
   * Calls a tool through the pooled session, within one deadline: if it passes while the session is still
   * being opened, the call was never sent (TIMEOUT); afterwards the session's rules apply (UNKNOWN_OUTCOME).
   */
  callTool(target: McpTarget, name: string, args: Record<string, unknown>, options?: McpRequestOptions): Promise<McpToolResult>;
  /** Reads a resource through the pooled session, within one deadline like callTool (a read has no effect to be uncertain of). */
  readResource(target: McpTarget, uri: string, options?: McpRequestOptions): Promise<McpResourceContents>;
  /** Gets a prompt through the pooled session, within one deadline like callTool. */
  getPrompt(target: McpTarget, name: string, args: Record<string, string>, options?: McpRequestOptions): Promise<McpPromptMessages>;
  /** Asks for argument values (completion/complete) through the pooled session, within one deadline like callTool. */
  complete(target: McpTarget, request: McpCompletionRequest, options?: McpRequestOptions): Promise<McpCompletion>;
  /** Listens to the list_changed notifications of `target` (naming the list) across reconnections; returns the unsubscribe function. */
  onListChanged(target: McpTarget, listener: (list: McpList) => void): () => void;
  /** Closes and forgets the session of `target`, if any. */
  evict(target: McpTarget): Promise<void>;
  /** How many sessions are open. */
  readonly size: number;
  /** Closes every session; later calls fail with TEMPORARY_UNAVAILABLE. */
  close(): Promise<void>;
}

/** Creates a pool of MCP sessions. */
export function createMcpPool(options: McpPoolOptions = {}): McpPool {
  const sessions = new Map<string, McpSession>();
  const connecting = new Map<string, Promise<McpSession>>();
  const listeners = new Map<string, Set<(list: McpList) => void>>();
  const lifetime = new AbortController();
  const now = options.now ?? performance.now.bind(performance);
  /** When each session was last used, and how many calls are in flight on it (a busy session is never idle). */
  const usage = new Map<string, { lastUsed: number; inFlight: number }>();
  /** The era each HTTP target was last found to speak, and when. */
  const verdicts = new Map<string, { verdict: McpEraVerdict; foundAt: number }>();
  const verdictTtlMs = options.eraVerdictTtlMs ?? ERA_VERDICT_TTL_MS;
  /** Sessions whose list changes reach the pool's listeners (at 2026-07-28 that keeps a stream open: only on demand). */
  const forwarding = new WeakSet<McpSession>();
  let closing: Promise<void> | undefined;

  const priorVerdict = (key: string): McpEraVerdict | undefined => {
    for (const [known, entry] of verdicts) if (now() - entry.foundAt >= verdictTtlMs) verdicts.delete(known);
    return verdicts.get(key)?.verdict;
  };

  const forward = (key: string, session: McpSession): void => {
    if (forwarding.has(session) || (listeners.get(key)?.size ?? 0) === 0) return;
    forwarding.add(session);
    session.onListChanged((list) => {
      for (const listener of [...(listeners.get(key) ?? [])]) listener(list);
    });
  };

  const touch = (key: string, delta: number): void => {
    const entry = usage.get(key) ?? { lastUsed: now(), inFlight: 0 };
    entry.lastUsed = now();
    entry.inFlight += delta;
    usage.set(key, entry);
  };

  const sweepIdle = (): void => {
    const idleMs = options.idleTimeoutMs;
    if (idleMs === undefined) return;
    for (const [key, session] of sessions) {
      const entry = usage.get(key);
      if (entry !== undefined && (entry.inFlight > 0 || now() - entry.lastUsed < idleMs)) continue;
      sessions.delete(key);
      usage.delete(key);
      session.close().catch(() => undefined);
    }
    // Targets that never got a session (a failed connect) are forgotten once idle too.
    for (const [key, entry] of usage) if (!sessions.has(key) && !connecting.has(key) && entry.inFlight === 0 && now() - entry.lastUsed >= idleMs) usage.delete(key);
  };
  const sweeper = options.idleTimeoutMs === undefined ? undefined : setInterval(sweepIdle, Math.max(50, Math.min(options.idleTimeoutMs / 2, 30_000)));
  sweeper?.unref();

  const open = (key: string, target: McpTarget): Promise<McpSession> => {
    const prior = target.transport === 'http' ? priorVerdict(key) : undefined;
    const pending = connectMcp(target, { ...options.connect, prior, signal: lifetime.signal })
      .then(async (session) => {
        if (closing !== undefined) {
          await session.close();
          throw poolClosed();
        }
        sessions.set(key, session);
        const verdict = session.eraVerdict;
        if (prior === undefined && verdict !== undefined && verdictTtlMs > 0) verdicts.set(key, { verdict, foundAt: now() });
        forward(key, session);
        session.onClose((reason) => {
          if (reason !== undefined) verdicts.delete(key);
          if (sessions.get(key) !== session) return;
          sessions.delete(key);
          if (usage.get(key)?.inFlight === 0) usage.delete(key);
        });
        return session;
      })
      .catch((error: unknown) => {
        verdicts.delete(key);
        throw error;
      })
      .finally(() => connecting.delete(key));
    connecting.set(key, pending);
    return pending;
  };

  const session = async (target: McpTarget, requestOptions: McpRequestOptions = {}): Promise<McpSession> => {
    if (closing !== undefined) throw poolClosed();
    validateTarget(target);
    const key = mcpTargetKey(target);
    touch(key, 0);
    const current = sessions.get(key);
    if (current?.isOpen === true) return current;
    if (current !== undefined) sessions.delete(key);
    const pending = connecting.get(key) ?? open(key, target);
    return withinDeadline(pending, requestOptions, `opening a session to ${describeTarget(target)}`);
  };

  // One request through the pooled session, within one deadline that includes opening the session.
  const through = async <T>(target: McpTarget, requestOptions: McpRequestOptions, send: (pooled: McpSession, rest: McpRequestOptions) => Promise<T>): Promise<T> => {
    const started = performance.now();
    const key = mcpTargetKey(validateTarget(target));
    touch(key, 1);
    try {
      const pooled = await session(target, requestOptions);
      const remaining = requestOptions.timeoutMs === undefined ? undefined : Math.max(0, requestOptions.timeoutMs - (performance.now() - started));
      return await send(pooled, { signal: requestOptions.signal, timeoutMs: remaining === undefined ? undefined : Math.floor(remaining) });
    } finally {
      touch(key, -1);
    }
  };

  return {
    session,
    callTool: (target, name, args, requestOptions = {}) => through(target, requestOptions, (pooled, rest) => pooled.callTool(name, args, rest)),
    readResource: (target, uri, requestOptions = {}) => through(target, requestOptions, (pooled, rest) => pooled.readResource(uri, rest)),
    getPrompt: (target, name, args, requestOptions = {}) => through(target, requestOptions, (pooled, rest) => pooled.getPrompt(name, args, rest)),
    complete: (target, request, requestOptions = {}) => through(target, requestOptions, (pooled, rest) => pooled.complete(request, rest)),
    onListChanged(target, listener) {
      const key = mcpTargetKey(target);
      let set = listeners.get(key);
      if (set === undefined) {
        set = new Set();
        listeners.set(key, set);
      }
      set.add(listener);
      const current = sessions.get(key);
      if (current?.isOpen === true) forward(key, current);
      return () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(key) === set) listeners.delete(key);
      };
    },
    async evict(target) {
      const key = mcpTargetKey(target);
      const current = sessions.get(key);
      sessions.delete(key);
      usage.delete(key);
      verdicts.delete(key);
      await current?.close();
    },
    get size() {
      return sessions.size;
    },
    close() {
      closing ??= (async () => {
        if (sweeper !== undefined) clearInterval(sweeper);
        lifetime.abort(poolClosed());
        await Promise.allSettled([...connecting.values()]);
        const open = [...sessions.values()];
        sessions.clear();
        listeners.clear();
        verdicts.clear();
        await Promise.allSettled(open.map((s) => s.close()));
      })();
      return closing;
    },
  };
}

function poolClosed(): ToolplaneError {
  return new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the MCP session pool is closed', { details: { providerErrorType: 'PoolClosed' } });
}

/**
 * Waits for a shared promise within one caller's deadline and signal, without cancelling it for the others.
 * Nothing was sent on the caller's behalf yet, so running out of time is TIMEOUT and an abort is CANCELLED.
 */
function withinDeadline<T>(work: Promise<T>, options: McpRequestOptions, what: string): Promise<T> {
  const { signal, timeoutMs } = options;
  if (signal === undefined && timeoutMs === undefined) return work;
  work.catch(() => undefined);
  return new Promise<T>((resolve, reject) => {
    const finish = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = () => {
      finish();
      reject(new ToolplaneError('CANCELLED', `${what} was cancelled before any request was sent`, { details: { providerErrorType: 'Cancelled' } }));
    };
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            finish();
            reject(new ToolplaneError('TIMEOUT', `${what}: the deadline passed before the request was sent`, { details: { providerErrorType: 'Deadline' } }));
          }, Math.max(0, timeoutMs));
    if (signal?.aborted === true) {
      onAbort();
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        finish();
        resolve(value);
      },
      (error: unknown) => {
        finish();
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
