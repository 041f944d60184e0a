// What the benchmarks learn about calls besides their latency: whether the provisioning is in force yet, and which
// calls have no outcome at all (lost).

/** Calls `attempt` until it succeeds, 200 ms apart; fails after `timeoutMs` with `lastFailure()` in the message. */
export async function firstSuccess(attempt: () => Promise<boolean>, lastFailure: () => string | undefined, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await attempt())) {
    if (Date.now() > until) throw new Error(`no governed call succeeded within ${timeoutMs / 1000} s: ${lastFailure() ?? 'no answer'}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** How a key's call stands when asked: it has an outcome, it has none (yet), or the question itself failed. */
export type OutcomeLookup = 'outcome' | 'none' | 'error';

/**
 * The keys whose call has no outcome: each asked with `lookup` (8 at a time) until it has one or `until` (epoch ms)
 * passed, 250 ms apart (`until` in the past: asked once). A key still without one is lost; one whose last lookup
 * failed is lost too, and counted apart.
 */
export async function countLost(keys: readonly string[], lookup: (key: string) => Promise<OutcomeLookup>, until = 0): Promise<{ lost: number; lookupErrors: number }> {
  let lost = 0;
  let lookupErrors = 0;
  const queue = [...keys];
  const worker = async () => {
    for (let key = queue.pop(); key !== undefined; key = queue.pop()) {
      for (;;) {
        const found = await lookup(key).catch((): OutcomeLookup => 'error');
        if (found === 'outcome') break;
        if (Date.now() >= until) {
          lost += 1;
          if (found === 'error') lookupErrors += 1;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return { lost, lookupErrors };
}
