// A sliding window of admissions per key, kept as counts in slices of the window (a window of 10 s in ten 1 s
// slices): a request is admitted only while the slices that overlap the last window length (the current, partial
// one included) hold fewer than `limit` admissions. Those slices span at least the window length, so every window
// ending at an admission lies inside them: no window of the configured length ever admits more than the limit.
// The price is strictness by up to one slice (an admission counts for up to one slice longer than the window), and
// the gain is bounded memory per key (slices + 1 counters, whatever the limit), with no timestamp log.

/** A window's configuration: at most `limit` admissions in any `windowMs`, counted in `slices` slices. */
export interface RateWindowConfig {
  readonly limit: number;
  readonly windowMs: number;
  readonly slices: number;
}

/** The admissions of one key: counts by slice index, oldest first (only slices still counted). */
export interface RateWindowState {
  readonly counts: readonly { readonly slice: number; readonly count: number }[];
}

/** Whether a request is admitted, and the key's state after it. */
export type RateDecision =
  | { readonly admitted: true; readonly state: RateWindowState }
  | { readonly admitted: false; readonly state: RateWindowState; readonly retryAfterMs: number };

// Slice indexes and starts from whole products (time × slices, index × window) rather than from a fractional slice
// length: with a window of 9978 ms in 9 slices, `15 * (9978 / 9)` is a hair below 16630 and `16630 / (9978 / 9)` a hair
// below 15, so a request made at the moment a refusal named would still have been refused.
const sliceOf = (now: number, config: RateWindowConfig) => Math.floor((now * config.slices) / config.windowMs);
const sliceStart = (slice: number, config: RateWindowConfig) => Math.ceil((slice * config.windowMs) / config.slices);

/** The counts still counted at `now`: slices from `slices` before the current one on. */
function live(state: RateWindowState | undefined, now: number, config: RateWindowConfig): { readonly slice: number; readonly count: number }[] {
  const current = sliceOf(now, config);
  return (state?.counts ?? []).filter((entry) => entry.slice >= current - config.slices);
}

/** Decides one request of a key at `now` (milliseconds on any monotonic clock). */
export function decideRate(state: RateWindowState | undefined, now: number, config: RateWindowConfig): RateDecision {
  const counts = live(state, now, config);
  const used = counts.reduce((sum, entry) => sum + entry.count, 0);
  const current = sliceOf(now, config);
  if (used < config.limit) {
    const last = counts.at(-1);
    const next = last?.slice === current ? [...counts.slice(0, -1), { slice: current, count: last.count + 1 }] : [...counts, { slice: current, count: 1 }];
    return { admitted: true, state: { counts: next } };
  }
  // Admitted again once enough of the oldest slices stopped counting: slice j stops at the start of slice j + slices + 1.
  let remaining = used;
  let freeAt = now;
  for (const entry of counts) {
    remaining -= entry.count;
    freeAt = sliceStart(entry.slice + config.slices + 1, config);
    if (remaining < config.limit) break;
  }
  return { admitted: false, state: { counts }, retryAfterMs: Math.max(1, Math.ceil(freeAt - now)) };
}

/** Whether a key's state still counts anything at `now` (an idle key can be forgotten: it would be admitted anew). */
export function isIdle(state: RateWindowState, now: number, config: RateWindowConfig): boolean {
  return live(state, now, config).length === 0;
}
