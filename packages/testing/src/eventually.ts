/**
 * Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs` naming `what` and the last
 * error the probe threw. For conditions that settle asynchronously (a projection caught up, a state reached):
 * never a fixed sleep.
 */
export async function eventually<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
