import { ToolplaneError } from '@toolplane/contracts';
import { NOT_DELIVERED } from './translate-error.js';

/** The fetch signature the SDK's Streamable HTTP transport accepts. */
export type FetchFunction = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** A fetch for one long-lived session, and the means to end all its requests. */
export interface SessionFetch {
  readonly fetch: FetchFunction;
  /** Aborts every request still running (used when the session closes). */
  abortAll(reason?: unknown): void;
  /** How many requests still have an open response. */
  readonly inFlight: number;
}

/** Options of createSessionFetch. */
export interface SessionFetchOptions {
  /** The largest request body, JSON response body, or single Server-Sent Event, in bytes. */
  readonly maxMessageBytes: number;
  /** Called when a response exceeded the bound; the session then closes. */
  readonly onOversized: (error: ToolplaneError) => void;
  /** The underlying fetch; the global (keep-alive) fetch by default. */
  readonly baseFetch?: FetchFunction | undefined;
}

/**
 * Wraps fetch for the SDK's Streamable HTTP transport so a session can live for millions of requests:
 *
 * - The SDK passes one AbortSignal, shared by the whole session, to every request; Node's fetch adds an abort
 *   listener to it per request that only garbage collection removes, so after about 1,500 requests Node warns
 *   (MaxListenersExceededWarning) and memory grows. Here every request gets its own signal instead; the shared
 *   one gets a single listener that aborts whatever is still running.
 * - Response bodies are bounded: a JSON body, or one Server-Sent Event, larger than `maxMessageBytes` errors the
 *   stream and reports it, instead of being buffered whole.
 *
 * Connections are reused by the global dispatcher's keep-alive pool.
 */
export function createSessionFetch(options: SessionFetchOptions): SessionFetch {
  const baseFetch = options.baseFetch ?? globalThis.fetch;
  const running = new Set<AbortController>();
  const linked = new WeakSet<AbortSignal>();

  const abortAll = (reason?: unknown) => {
    for (const controller of running) controller.abort(reason);
    running.clear();
  };

  const sessionFetch: FetchFunction = async (url, init) => {
    const shared = init?.signal ?? undefined;
    if (shared !== undefined && shared !== null && !linked.has(shared)) {
      linked.add(shared);
      shared.addEventListener('abort', () => abortAll(shared.reason), { once: true });
    }
    if (typeof init?.body === 'string' && Buffer.byteLength(init.body) > options.maxMessageBytes) {
      throw new ToolplaneError('INVALID_ARGUMENT', `the request is larger than ${options.maxMessageBytes} bytes`, {
        details: { providerErrorType: 'RequestTooLarge', [NOT_DELIVERED]: true },
      });
    }
    const controller = new AbortController();
    if (shared?.aborted === true) controller.abort(shared.reason);
    running.add(controller);
    const release = () => running.delete(controller);
    let response: Response;
    try {
      response = await baseFetch(url, { ...init, signal: controller.signal });
    } catch (error) {
      release();
      throw error;
    }
    if (response.body === null) {
      release();
      return response;
    }
    if (NULL_BODY_STATUSES.has(response.status)) {
      // A Response with these statuses cannot be rebuilt with a body; there is nothing in it for MCP anyway.
      release();
      await response.body.cancel().catch(() => undefined);
      return new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
    }
    const eventStream = (response.headers.get('content-type') ?? '').toLowerCase().includes('text/event-stream');
    const body = boundedBody(response.body, options.maxMessageBytes, eventStream, release, options.onOversized);
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  return {
    fetch: sessionFetch,
    abortAll,
    get inFlight() {
      return running.size;
    },
  };
}

const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * Re-streams `source`, counting bytes: all of them for a JSON body, those since the last event boundary (a blank
 * line) for an event stream. Calls `release` exactly once when the stream ends, fails or is cancelled.
 */
function boundedBody(
  source: ReadableStream<Uint8Array>,
  maxBytes: number,
  eventStream: boolean,
  release: () => void,
  onOversized: (error: ToolplaneError) => void,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let count = 0;
  let previous = -1;
  let released = false;
  const done = () => {
    if (released) return;
    released = true;
    release();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        done();
        controller.error(error);
        return;
      }
      if (chunk.done) {
        done();
        controller.close();
        return;
      }
      const bytes = chunk.value;
      if (eventStream) {
        for (const byte of bytes) {
          // An event ends at an empty line: "\n\n" (a "\r" before a "\n" is ignored, so "\r\n\r\n" counts too).
          if (byte === 0x0d) continue;
          if (byte === 0x0a && previous === 0x0a) count = 0;
          else count++;
          previous = byte;
          if (count > maxBytes) break;
        }
      } else {
        count += bytes.length;
      }
      if (count > maxBytes) {
        const error = new ToolplaneError('TEMPORARY_UNAVAILABLE', `the server sent a message larger than ${maxBytes} bytes; it was refused and the session closed`, {
          details: { providerErrorType: 'MessageTooLarge', maxMessageBytes: maxBytes },
        });
        done();
        await reader.cancel(error).catch(() => undefined);
        controller.error(error);
        onOversized(error);
        return;
      }
      controller.enqueue(bytes);
    },
    async cancel(reason) {
      done();
      await reader.cancel(reason).catch(() => undefined);
    },
  });
}
