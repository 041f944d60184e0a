import { hasErrorCode, ToolplaneError } from './errors.js';

/** The error an aborted operation fails with: the reason's own code if it has one, TIMEOUT for a timeout signal, else CANCELLED. */
export function abortError(what: string, reason: unknown): ToolplaneError {
  if (reason instanceof ToolplaneError) return reason;
  if (hasErrorCode(reason)) return new ToolplaneError(reason.code, reason.message, { cause: reason });
  // AbortSignal.timeout() aborts with a DOMException named TimeoutError.
  if (reason instanceof Error && reason.name === 'TimeoutError') return new ToolplaneError('TIMEOUT', `${what} timed out`, { cause: reason });
  return new ToolplaneError('CANCELLED', `${what} was cancelled`, { cause: reason });
}

/** Throws abortError when `signal` has already aborted. */
export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw abortError(what, signal.reason);
}

/** A signal that aborts when `signal` does or when `timeoutMs` has passed, whichever comes first. */
export function withDeadline(signal: AbortSignal | undefined, timeoutMs: number): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

/** Settles with `work`, or rejects with abortError as soon as `signal` aborts (the work itself is not undone). */
export function raceAbort<T>(work: Promise<T>, signal: AbortSignal | undefined, what: string): Promise<T> {
  if (!signal) return work;
  // Whichever loses the race, its rejection is expected and must not surface as an unhandled rejection.
  work.catch(() => undefined);
  if (signal.aborted) return Promise.reject(abortError(what, signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(what, signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** Waits `ms`; rejects with abortError if `signal` aborts first. */
export function sleep(ms: number, signal: AbortSignal | undefined, what: string): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError(what, signal.reason));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(what, signal?.reason));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
