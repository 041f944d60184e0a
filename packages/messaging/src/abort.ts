// Timing helpers of the kit; the abort-to-error mapping lives in @toolplane/contracts (abortError, raceAbort).
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
