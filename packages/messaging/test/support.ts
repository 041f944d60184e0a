// Helpers for the integration tests: await what is expected, with a deadline, instead of sleeping.

/** A queue of values pushed by callbacks, read in order with a deadline. */
export interface Collector<T> {
  push(value: T): void;
  /** The next value; rejects if none arrives within `timeoutMs`. */
  next(timeoutMs?: number): Promise<T>;
  /** The next `count` values. */
  take(count: number, timeoutMs?: number): Promise<T[]>;
  /** Everything pushed so far, including values already read. */
  readonly all: readonly T[];
}

/** Makes a Collector. */
export function collector<T>(): Collector<T> {
  const all: T[] = [];
  const buffered: T[] = [];
  const waiting: ((value: T) => void)[] = [];
  const next = (timeoutMs = 10_000) =>
    new Promise<T>((resolve, reject) => {
      const ready = buffered.shift();
      if (ready !== undefined) return resolve(ready);
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(take), 1);
        reject(new Error(`nothing arrived within ${timeoutMs} ms`));
      }, timeoutMs);
      const take = (value: T) => {
        clearTimeout(timer);
        resolve(value);
      };
      waiting.push(take);
    });
  return {
    all,
    push(value) {
      all.push(value);
      const waiter = waiting.shift();
      if (waiter) waiter(value);
      else buffered.push(value);
    },
    next,
    async take(count, timeoutMs) {
      const out: T[] = [];
      for (let i = 0; i < count; i++) out.push(await next(timeoutMs));
      return out;
    },
  };
}

/** Polls `check` until it returns true; rejects with `what` when the deadline passes first. */
export async function eventually(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A promise with its resolve function, for handlers that should wait for the test. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
