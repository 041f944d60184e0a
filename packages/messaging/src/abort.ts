import { hasErrorCode, ToolplaneError } from '@toolplane/contracts';

/** The error an aborted operation fails with: the reason's own code if it has one, TIMEOUT for a timeout signal, else CANCELLED. */
export function abortError(what: string, reason: unknown): ToolplaneError {
  if (reason instanceof ToolplaneError) return reason;
  if (hasErrorCode(reason)) return new ToolplaneError(reason.code, reason.message, { cause: reason });
  // AbortSignal.timeout() aborts with a DOMException named TimeoutError.
  if (reason instanceof Error && reason.name === 'TimeoutError') return new ToolplaneError('TIMEOUT', `${what} timed out`, { cause: reason });
  return new ToolplaneError('CANCELLED', `${what} was cancelled`, { cause: reason });
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

/** Waits `ms`, or less if `signal` aborts first; never rejects. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Resolves when all the promises settled or `ms` elapsed, whichever is first; never rejects. */
export async function settledOrElapsed(promises: readonly Promise<unknown>[], ms: number): Promise<void> {
  const timer = new AbortController();
  await Promise.race([Promise.allSettled(promises), pause(ms, timer.signal)]);
  timer.abort();
}
