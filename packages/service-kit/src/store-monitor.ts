// MongoDB as one replica sees it. A service starts without waiting for MongoDB (JetStream is its record; MongoDB holds
// read models): this loop asks the server until it answers, ensures the service's indexes then, and keeps asking, so
// that /readyz, the `toolplane_store_up` gauge and the writers of read models know whether it answers now. The log
// says so once per outage (when it begins and when it ends), however long it lasts.
import { hasErrorCode, ToolplaneError } from '@toolplane/contracts';
import { ensureIndexes, type CollectionDefinition, type Store, type StoreCapabilities } from '@toolplane/store';
import type { Logger } from './logger.js';

/** The collections a service owns: a list, or one made for the server's capabilities (indexes some servers do not use). */
export type StoreCollections = readonly CollectionDefinition[] | ((capabilities: StoreCapabilities) => readonly CollectionDefinition[]);

/** Whether MongoDB answers this replica, for the writers of read models. */
export interface StoreStatus {
  /** True while MongoDB answers and the service's indexes are in place (false until the first answer). */
  readonly available: boolean;
  /**
   * Resolves once `available` (at once when it is already); rejects with CANCELLED when `signal` aborts or the
   * service stops first. `recheck`: an operation just failed as unavailable, so what the last probe said is stale:
   * wait for a probe from now on.
   */
  whenAvailable(options?: { readonly signal?: AbortSignal; readonly recheck?: boolean }): Promise<void>;
}

/** The loop behind a StoreStatus, owned by the service kit. */
export interface StoreMonitor extends StoreStatus {
  /** For /readyz: MongoDB answers now (a ping) and the indexes are in place; false without a ping while it is known to be away. */
  answersNow(signal: AbortSignal): Promise<boolean>;
  /** Stops asking; waiters are rejected with CANCELLED. Resolves once the loop ended. */
  stop(): Promise<void>;
}

/** How often the server is asked. */
export interface StoreMonitorTiming {
  /** While it answers. */
  readonly upIntervalMs: number;
  /** While it does not, by consecutive failure (the last repeats). */
  readonly downBackoffMs: readonly number[];
  /** After a failure asking again cannot mend (an index conflict): an operator has to act first. */
  readonly brokenIntervalMs: number;
}

const defaultTiming: StoreMonitorTiming = { upIntervalMs: 10_000, downBackoffMs: [250, 500, 1_000, 2_000, 5_000], brokenIntervalMs: 30_000 };

/** Failures that go away by themselves when the server comes back. */
function isOutage(error: unknown): boolean {
  return hasErrorCode(error) && (error.code === 'TEMPORARY_UNAVAILABLE' || error.code === 'TIMEOUT');
}

/**
 * Starts asking `store` whether it answers (a ping), ensuring `collections`' indexes at the first answer. The first
 * failure of an outage is logged as a warning (an index conflict or other lasting failure as an error), its end once
 * as info.
 */
export function monitorStore(options: { readonly store: Store; readonly collections: StoreCollections; readonly logger: Logger; readonly timing?: Partial<StoreMonitorTiming> }): StoreMonitor {
  const { store, collections, logger } = options;
  const timing = { ...defaultTiming, ...options.timing };
  const lifetime = new AbortController();
  let available = false;
  let indexesEnsured = false;
  // `starting` until the first answer or failure; `down` from the first failure of an outage to the next answer.
  let state: 'starting' | 'up' | 'down' = 'starting';
  let downSince = 0;
  let failures = 0;
  let broken = false;
  let loggedProblem: string | undefined;
  const waiters = new Set<{ resolve: () => void; reject: (error: ToolplaneError) => void }>();
  let wake: () => void = () => undefined;

  const settleWaiters = () => {
    for (const waiter of [...waiters]) waiter.resolve();
    waiters.clear();
  };

  const probe = async () => {
    await store.ping(lifetime.signal);
    if (indexesEnsured) return;
    const definitions = typeof collections === 'function' ? collections(await store.capabilities(lifetime.signal)) : collections;
    const report = await ensureIndexes(store, definitions, { signal: lifetime.signal });
    indexesEnsured = true;
    const created = report.indexes.filter((index) => index.outcome === 'created').map((index) => `${index.collection}.${index.name}`);
    const degraded = report.indexes.filter((index) => index.degraded.length > 0).map((index) => ({ index: `${index.collection}.${index.name}`, degraded: index.degraded }));
    if (created.length > 0 || degraded.length > 0) logger.info({ created, degraded }, 'MongoDB indexes ensured');
  };

  const answered = () => {
    if (state === 'down') logger.info({ downForMs: Date.now() - downSince }, 'MongoDB answers again: read models catch up');
    state = 'up';
    failures = 0;
    broken = false;
    loggedProblem = undefined;
    available = true;
    settleWaiters();
  };

  const failed = (error: unknown) => {
    available = false;
    failures += 1;
    broken = !isOutage(error);
    const problem = hasErrorCode(error) ? `${error.code}: ${error.message}` : String(error);
    if (state !== 'down') downSince = Date.now();
    if (broken && loggedProblem !== problem) {
      logger.error(
        { err: error, url: store.displayUrl, retryInMs: timing.brokenIntervalMs },
        indexesEnsured ? 'MongoDB refuses this service: read models wait until an operator mends it' : 'the MongoDB indexes cannot be ensured: read models wait until an operator mends it',
      );
    } else if (!broken && state !== 'down') {
      logger.warn(
        { err: error, url: store.displayUrl },
        state === 'starting'
          ? 'MongoDB does not answer: running without it; indexes are ensured and read models catch up once it answers'
          : 'MongoDB stopped answering: read models wait until it answers again',
      );
    }
    loggedProblem = problem;
    state = 'down';
  };

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        lifetime.signal.removeEventListener('abort', done);
        wake = () => undefined;
        resolve();
      }
      wake = done;
      lifetime.signal.addEventListener('abort', done, { once: true });
    });

  const running = (async () => {
    while (!lifetime.signal.aborted) {
      try {
        await probe();
        answered();
      } catch (error) {
        if (lifetime.signal.aborted) break;
        failed(error);
      }
      if (lifetime.signal.aborted) break;
      const backoff = timing.downBackoffMs[Math.min(failures, timing.downBackoffMs.length) - 1] ?? timing.upIntervalMs;
      await pause(available ? timing.upIntervalMs : broken ? timing.brokenIntervalMs : backoff);
    }
  })();

  const recheck = () => {
    available = false;
    wake();
  };

  return {
    get available() {
      return available;
    },
    whenAvailable(waitOptions = {}) {
      const { signal, recheck: stale = false } = waitOptions;
      if (lifetime.signal.aborted) return Promise.reject(new ToolplaneError('CANCELLED', 'the service is stopping'));
      if (signal?.aborted) return Promise.reject(new ToolplaneError('CANCELLED', 'waiting for MongoDB was cancelled', { cause: signal.reason }));
      if (stale) recheck();
      if (available) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          waiters.delete(waiter);
          reject(new ToolplaneError('CANCELLED', 'waiting for MongoDB was cancelled', { cause: signal?.reason }));
        };
        const waiter = {
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
          reject: (error: ToolplaneError) => {
            signal?.removeEventListener('abort', onAbort);
            reject(error);
          },
        };
        waiters.add(waiter);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
    async answersNow(signal) {
      if (!available) return false;
      try {
        await store.ping(signal);
        return true;
      } catch {
        recheck();
        return false;
      }
    },
    async stop() {
      lifetime.abort();
      wake();
      await running;
      const stopping = new ToolplaneError('CANCELLED', 'the service is stopping');
      for (const waiter of [...waiters]) waiter.reject(stopping);
      waiters.clear();
    },
  };
}
