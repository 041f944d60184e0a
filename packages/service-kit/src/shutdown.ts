import type { Logger } from 'pino';

/** One step of an orderly shutdown: close a resource, drain a consumer. */
interface ShutdownStep {
  readonly name: string;
  readonly run: () => Promise<void>;
}

/**
 * Closes what a service opened, last-opened first, each step bounded so that one stuck resource cannot
 * keep the process alive past the deadline.
 */
export class ShutdownStack {
  readonly #steps: ShutdownStep[] = [];
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger.child({ component: 'shutdown' });
  }

  /** Registers a step; steps run in reverse order of registration. */
  push(name: string, run: () => Promise<void>): void {
    this.#steps.push({ name, run });
  }

  /** Runs every step in reverse order; resolves true when all finished cleanly within the deadline. */
  async run(deadlineMs: number): Promise<boolean> {
    const deadline = Date.now() + deadlineMs;
    let clean = true;
    for (const step of this.#steps.splice(0).reverse()) {
      // A step after a slow one still gets a short grace, so a late MongoDB close is tried rather than skipped.
      const remaining = Math.max(250, deadline - Date.now());
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), remaining);
      });
      try {
        const outcome = await Promise.race([step.run().then(() => 'done' as const), timedOut]);
        if (outcome === 'timeout') {
          clean = false;
          this.#logger.warn({ step: step.name }, 'shutdown step did not finish before the deadline');
        } else {
          this.#logger.debug({ step: step.name }, 'shutdown step done');
        }
      } catch (err) {
        clean = false;
        this.#logger.warn({ step: step.name, err }, 'shutdown step failed');
      } finally {
        clearTimeout(timer);
      }
    }
    return clean;
  }
}
