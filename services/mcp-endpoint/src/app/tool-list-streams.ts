import { changeCovers, type ToolSetChange } from '../core/tool-set-change.js';
import { changedLists, listDigests, type ListDigests, type McpListKind, type McpLists } from '../core/tool-set-digest.js';
import type { Caller } from './authenticate.js';

// The notification streams (MCP's GET streams) open on this replica, and what each one's client last saw. A change
// of a read model the adapter computes tool sets from names a tenant or workspace; after a short quiet period (a
// binding writes several descriptor versions at once, an operator may flip several switches) every stream of that
// scope asks the adapter for its caller's set again, and a stream is told `notifications/tools/list_changed`,
// `notifications/resources/list_changed` or `notifications/prompts/list_changed` for each of its lists whose digest
// moved. The set is always the adapter's, asked with the stream's own token: the
// endpoint never works out itself what an agent may see. Streams opened with the same token (one client's
// reconnects, one agent's several clients) share one question per change: a token names one workspace and one
// agent, so its answer is theirs alike.

/** Where a stream's notifications go. */
export interface ToolListSink {
  /** Sends `notifications/<kind>/list_changed` on the stream. */
  notify(kind: McpListKind): Promise<void>;
  /** Ends the stream (the client may open another). */
  close(): void;
}

export interface ToolListStreamsOptions {
  /** The caller's effective tools, resources and prompts as MCP lists them (the adapter's answer). */
  readonly list: (caller: Caller, signal: AbortSignal) => Promise<McpLists>;
  /** Open streams this replica serves at most; past it, `open` refuses. */
  readonly maxStreams: number;
  /** How long a scope stays quiet before its streams look again. */
  readonly debounceMs: number;
  readonly onError: (error: unknown, what: string) => void;
  /** Hears each stream opened and ended, and each look at a set again (whether the set had changed). */
  readonly onEvent?: (event: { readonly type: 'opened' | 'ended' | 'looked'; readonly caller: Caller; readonly changed?: boolean; readonly streams: number }) => void;
  readonly now?: () => number;
}

/** An open stream as the registry keeps it. */
interface OpenStream {
  readonly caller: Caller;
  readonly sink: ToolListSink;
  readonly abort: AbortController;
  /** The digests of the lists the client was last told about (or saw when it opened the stream). */
  digest: ListDigests | undefined;
  expiry: NodeJS.Timeout | undefined;
}

/** A look at one token's set under way; `again` asks for one more once it ends (a change is never lost in one). */
interface Look {
  again: boolean;
}

/** The largest delay setTimeout takes (about 24.8 days); a token valid longer is looked at again then. */
const MAX_TIMER_MS = 2_147_483_647;

/** The open notification streams of this replica. */
export class ToolListStreams {
  readonly #options: ToolListStreamsOptions;
  /** Open streams by token (every stream of a token is in that token's workspace). */
  readonly #byToken = new Map<string, Set<OpenStream>>();
  #size = 0;
  readonly #looks = new Map<string, Look>();
  readonly #pending = new Map<string, NodeJS.Timeout>();
  readonly #closing = new AbortController();

  constructor(options: ToolListStreamsOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#size;
  }

  /** Whether another stream may open now. */
  hasRoom(): boolean {
    return !this.#closing.signal.aborted && this.#size < this.#options.maxStreams;
  }

  /**
   * Registers an opened stream until `expiresAtMs` (the token's expiry), taking the caller's current set (asked
   * for now, in the background) as what the client has seen. Returns the function that unregisters it (when the
   * client went away), or undefined when there is no room (the caller refuses the stream).
   */
  open(caller: Caller, sink: ToolListSink, expiresAtMs: number | undefined): (() => void) | undefined {
    if (!this.hasRoom()) return undefined;
    const stream: OpenStream = { caller, sink, abort: new AbortController(), digest: undefined, expiry: undefined };
    const streams = this.#byToken.get(caller.token) ?? new Set<OpenStream>();
    streams.add(stream);
    this.#byToken.set(caller.token, streams);
    this.#size += 1;
    if (expiresAtMs !== undefined) this.#expireAt(stream, expiresAtMs);
    this.#options.onEvent?.({ type: 'opened', caller, streams: this.#size });
    // Without a first digest the next change notifies (the client may have missed something): not fatal.
    this.#options.list(caller, stream.abort.signal).then(
      (lists) => {
        stream.digest ??= listDigests(lists);
      },
      (error: unknown) => {
        if (!stream.abort.signal.aborted) this.#options.onError(error, 'reading the tool set a stream opened with');
      },
    );
    return () => this.#drop(stream);
  }

  /** A read model changed for `change`'s scope (undefined: possibly for every scope, e.g. after a watch restarted). */
  changed(change: ToolSetChange | undefined): void {
    // No stream open: nobody to tell (a stream opened later starts from the set as it is then).
    if (this.#closing.signal.aborted || this.#size === 0) return;
    const key = change === undefined ? '*' : `${change.tenant}/${change.workspace ?? '*'}`;
    if (this.#pending.has(key)) return;
    const timer = setTimeout(() => {
      this.#pending.delete(key);
      for (const [token, streams] of this.#byToken) {
        const scope = streams.values().next().value?.caller.scope;
        if (scope !== undefined && (change === undefined || changeCovers(change, scope))) this.#look(token);
      }
    }, this.#options.debounceMs);
    timer.unref();
    this.#pending.set(key, timer);
  }

  /** Ends every stream and stops looking (shutdown: the streams must not hold the drain up). */
  closeAll(): void {
    this.#closing.abort(new Error('the endpoint is stopping'));
    for (const timer of this.#pending.values()) clearTimeout(timer);
    this.#pending.clear();
    for (const streams of [...this.#byToken.values()]) {
      for (const stream of [...streams]) {
        this.#drop(stream);
        stream.sink.close();
      }
    }
  }

  #expireAt(stream: OpenStream, expiresAtMs: number): void {
    const now = (this.#options.now ?? Date.now)();
    const delay = Math.max(0, expiresAtMs - now);
    stream.expiry = setTimeout(
      () => {
        if (delay > MAX_TIMER_MS) return this.#expireAt(stream, expiresAtMs);
        // The token no longer authorizes anything: the stream ends, and a reconnect needs a fresh token.
        this.#drop(stream);
        stream.sink.close();
      },
      Math.min(delay, MAX_TIMER_MS),
    );
    stream.expiry.unref();
  }

  #drop(stream: OpenStream): void {
    const streams = this.#byToken.get(stream.caller.token);
    if (streams?.delete(stream) !== true) return;
    if (streams.size === 0) this.#byToken.delete(stream.caller.token);
    this.#size -= 1;
    clearTimeout(stream.expiry);
    stream.abort.abort(new Error('the stream ended'));
    this.#options.onEvent?.({ type: 'ended', caller: stream.caller, streams: this.#size });
  }

  /** Asks for a token's set once and tells each of its streams whose digest it moves. */
  #look(token: string): void {
    const running = this.#looks.get(token);
    if (running !== undefined) {
      running.again = true;
      return;
    }
    const look: Look = { again: false };
    this.#looks.set(token, look);
    void (async () => {
      try {
        do {
          look.again = false;
          const first = this.#byToken.get(token)?.values().next().value;
          if (first === undefined) return;
          const digest = listDigests(await this.#options.list(first.caller, this.#closing.signal));
          for (const stream of [...(this.#byToken.get(token) ?? [])]) {
            const changed = changedLists(stream.digest, digest);
            this.#options.onEvent?.({ type: 'looked', caller: stream.caller, changed: changed.length > 0, streams: this.#size });
            stream.digest = digest;
            for (const kind of changed) await stream.sink.notify(kind).catch((error: unknown) => this.#options.onError(error, 'sending list_changed'));
          }
        } while (look.again);
      } catch (error) {
        if (!this.#closing.signal.aborted) this.#options.onError(error, 'looking at a token’s tool set again');
      } finally {
        this.#looks.delete(token);
      }
    })();
  }
}
