// Load shapes of the benchmark: a closed loop (a fixed number of calls in flight, each followed at once by the
// next) and an open loop (calls started at a fixed rate whatever the latency), and the latencies they record.

/** How one call ended; 'timeout' means no answer within the caller's wait (it may still come). */
export type CallOutcome = 'ok' | 'failed' | 'timeout';

/** Latencies of the calls that ended while recording, and how many failed. */
export class LatencyRecorder {
  readonly #latencies: number[] = [];
  failed = 0;

  record(latencyMs: number, ok: boolean): void {
    if (ok) this.#latencies.push(latencyMs);
    else this.failed += 1;
  }

  get ok(): number {
    return this.#latencies.length;
  }

  /** The q-quantile (nearest rank) of the successful calls' latencies, in ms. */
  quantile(q: number): number {
    if (this.#latencies.length === 0) return Number.NaN;
    const sorted = [...this.#latencies].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
  }
}

/** What a phase measured: successful calls per second of the phase, latency quantiles, counts. */
export interface PhaseResult {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly ok: number;
  readonly failed: number;
  readonly seconds: number;
}

function resultOf(recorder: LatencyRecorder, seconds: number): PhaseResult {
  return { perSecond: recorder.ok / seconds, p50: recorder.quantile(0.5), p99: recorder.quantile(0.99), ok: recorder.ok, failed: recorder.failed, seconds };
}

/** `inFlight` workers, each calling again as soon as its call ends, for `seconds`; the rate counts calls ended in the phase. */
export async function closedLoop(inFlight: number, seconds: number, call: (recorder: LatencyRecorder) => Promise<CallOutcome>, recorder: LatencyRecorder): Promise<PhaseResult> {
  const started = performance.now();
  const end = started + seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) await call(recorder);
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  // Calls that began before the end and ended after it are in the count: the elapsed time includes them.
  return resultOf(recorder, (performance.now() - started) / 1000);
}

/** Starts calls at `rate` per second for `seconds` (each on time, however long the others take), then awaits them. */
export async function openLoop(rate: number, seconds: number, call: (recorder: LatencyRecorder) => Promise<CallOutcome>, recorder: LatencyRecorder): Promise<PhaseResult> {
  const started = performance.now();
  const total = Math.round(rate * seconds);
  const calls: Promise<CallOutcome>[] = [];
  while (calls.length < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate) + 1);
    while (calls.length < due) calls.push(call(recorder));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(calls);
  return resultOf(recorder, seconds);
}

/** One line about a phase: rate, p50, p99 and counts. */
export function describePhase(phase: Pick<PhaseResult, 'perSecond' | 'p50' | 'p99' | 'ok' | 'failed'>): string {
  return `${Math.round(phase.perSecond)}/s, p50 ${phase.p50.toFixed(2)} ms, p99 ${phase.p99.toFixed(2)} ms (${phase.ok} ok, ${phase.failed} failed)`;
}
