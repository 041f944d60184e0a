/** The settings every benchmark reads the same way: from its arguments and BENCH_* variables. */
export interface BenchSettings {
  /** `--use-running` / BENCH_USE_RUNNING=1: NATS_URL and MONGODB_URL instead of fresh local servers. */
  readonly useRunning: boolean;
  /** `--profile` / BENCH_PROFILE=1: a CPU profile of the service measured. */
  readonly profile: boolean;
  readonly inFlight: number;
  readonly warmupS: number;
  readonly sustainedS: number;
  readonly halfS: number;
  readonly drainS: number;
  /** A limit that does not bind, so the rate-limit check runs on every call without refusing any. */
  readonly rateLimit: { readonly tools: string; readonly per: 'AGENT_TOOL'; readonly limit: number; readonly windowMs: number };
}

/** Reads the shared settings (defaults: 16 in flight, 5 s warm-up, 20 s sustained, 10 s at half load, 30 s drain). */
export function benchSettings(env: NodeJS.ProcessEnv, argv: readonly string[]): BenchSettings {
  return {
    useRunning: argv.includes('--use-running') || env['BENCH_USE_RUNNING'] === '1',
    profile: argv.includes('--profile') || env['BENCH_PROFILE'] === '1',
    inFlight: Number(env['BENCH_IN_FLIGHT'] ?? 16),
    warmupS: Number(env['BENCH_WARMUP_S'] ?? 5),
    sustainedS: Number(env['BENCH_SECONDS'] ?? 20),
    halfS: Number(env['BENCH_HALF_SECONDS'] ?? 10),
    drainS: Number(env['BENCH_DRAIN_S'] ?? 30),
    rateLimit: { tools: 'bench.*', per: 'AGENT_TOOL', limit: Number(env['BENCH_RATE_LIMIT'] ?? 100_000), windowMs: Number(env['BENCH_RATE_WINDOW_MS'] ?? 1_000) },
  };
}
