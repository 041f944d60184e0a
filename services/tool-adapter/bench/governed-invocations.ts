// `npm run bench`: governed invocations per second through the tool adapter, against the same tool called
// directly, measured in one run. A harness, not a test.
//
// It starts fresh NATS and FerretDB from infra/local on free ports (or, with --use-running, uses NATS_URL and
// MONGODB_URL), the built tool adapter as a child process (a real process hop, and a CPU profile of the adapter
// alone with --profile), a stand-in registry, and the echo fixture (bench/echo-server.mjs) over stdio. The agent
// profile and the tenant policy (the default policy plus a rate limit far above the rate, so the rate-limit path
// runs without binding) are written through the adapter's own commands; token verification, argument schema
// validation and receipts stay on. It talks to the adapter only over its public NATS contracts and reads costs from
// the servers' monitoring endpoints and /proc, so it does not depend on how the adapter stores things.
//
// Two governed runs, each with an adapter of its own and a database of its own on the same FerretDB:
//   governed            the infra/local nats-server (JetStream's default flush)
//   governedSyncAlways  a second fresh nats-server with `jetstream { sync_interval: always }` (skip: BENCH_SYNC_ALWAYS=0)
// Each run: [preload] → warm-up → sustained (closed loop) → drain; the first run also measures, after its sustained
// phase, the direct calls (closed loop), then half load (open loop at half the governed rate, governed then direct).
//
// Settings (environment):
//   BENCH_WARMUP_S (5)         closed-loop warm-up of each governed run
//   BENCH_SECONDS (20)         sustained closed loop, governed (each run) and direct
//   BENCH_HALF_SECONDS (10)    half-load open loop, governed then direct
//   BENCH_IN_FLIGHT (16)       requests in flight in the closed loops (ADAPTER_CONCURRENCY defaults to it)
//   BENCH_DRAIN_S (30)         how long to wait for replies still owed after a run
//   BENCH_SYNC_ALWAYS (1)      0 skips the second governed run
//   BENCH_PRELOAD (0)          before measuring each run, the streams and read models get the history of N calls
//                              (bench/preload.ts); the sync-always server is filled at the default flush, then
//                              restarted with sync_interval: always on the same store
//   BENCH_PRELOAD_SETTLE_S (300) how long the preload waits for consumers to work off what it replayed
//   BENCH_RATE_LIMIT (100000)  the tenant policy's rate limit per BENCH_RATE_WINDOW_MS (1000) per agent and tool
//   BENCH_AWAITED_STREAMS      a regular expression overriding which streams count as awaited writes (jetstream-usage.ts)
//   BENCH_PROFILE=1 or --profile: CPU profile of the first run's adapter (summary on stderr; BENCH_PROFILE_OUT saves it)
//   BENCH_LOG_LEVEL (warn)     the adapter's log level
//   BENCH_SANDBOX (bubblewrap) how the adapter and the direct calls run the echo server: bubblewrap (the default
//                              sandbox profile, spawned once per pooled session) or off (a plain child process)
//   --use-running / BENCH_USE_RUNNING=1: NATS_URL and MONGODB_URL (BENCH_NATS_MONITOR_URL, BENCH_FERRETDB_METRICS_URL)
//
// It prints, as its last line, one JSON object. Per governed run: rate and latency; lost = requests JetStream accepted
// that have neither a reply nor, after the drain, an outcome the adapter's lookup by key returns; duplicated =
// executions in the fixture's count file beyond one per key; per call: Mongo commands, JetStream messages appended
// (all streams and KV buckets, and by stream), awaited durable writes on the critical path, CPU ms per process.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import type { Scope } from '@toolplane/contracts';
import { createMcpPool, type McpTarget } from '@toolplane/mcp';
import { sandboxScratchDir, testSandboxProfile } from '@toolplane/mcp/testing';
import { connectMessaging, type Messaging } from '@toolplane/messaging';
import { connectStore } from '@toolplane/store';
import { lookupInvocation } from './adapter-commands.js';
import {
  benchSettings,
  LatencyRecorder,
  benchInfra,
  closedLoop,
  countLost,
  counterDelta,
  cpuMsPerCall,
  describePhase as summary,
  duplicatedExecutions,
  echoServerPath,
  executionsByKey,
  firstSuccess,
  openLoop,
  readCpuProfile,
  sampleCpu,
  scrapeCounters,
  type CallOutcome,
  type CpuProfileSummary,
  type PhaseResult,
} from '@toolplane/testing/bench';
import { benchKeys, echoServerDocument, provisionTool, serveRegistryStandIn, startAdapterProcess, type AdapterProcess, type BenchTool } from './bench-setup.js';
import { GovernedCaller } from './governed-caller.js';
import { awaitedStreamMatcher, jetStreamCosts, sampleStreams, type StreamsSample } from './jetstream-usage.js';
import { startNatsServer } from './nats-server-process.js';
import { preload, type PreloadReport } from './preload.js';
import { StageTimeline } from './stage-timeline.js';

const env = process.env;
const argv = process.argv.slice(2);
const { useRunning, profile, inFlight, warmupS, sustainedS, halfS, drainS, rateLimit } = benchSettings(env, argv);
const syncAlwaysRun = env['BENCH_SYNC_ALWAYS'] !== '0';
const sandboxMode = env['BENCH_SANDBOX'] === 'off' ? 'off' : 'bubblewrap';
const preloadCalls = Number(env['BENCH_PRELOAD'] ?? 0);
const preloadSettleMs = Number(env['BENCH_PRELOAD_SETTLE_S'] ?? 300) * 1000;
const awaited = awaitedStreamMatcher(env['BENCH_AWAITED_STREAMS']);
const log = (line: string) => process.stderr.write(`${line}\n`);
const round = (value: number, digits = 2) => Number(value.toFixed(digits));

const run = randomBytes(4).toString('hex');
const scope: Scope = { tenant: 'bench', workspace: `w_${run}` };
const tool: BenchTool = { scope, agentId: 'bench-agent', toolId: 'bench.echo', serverId: randomUUID() };
// The count files are written from inside the echo server's sandbox.
const work = await sandboxScratchDir('toolplane-bench-adapter-');
const directCountFile = path.join(work, 'direct-count');

log(useRunning ? 'using NATS_URL and MONGODB_URL' : 'starting NATS and FerretDB (infra/local) on free ports');
const infra = await benchInfra(env, useRunning);
const keys = await benchKeys(scope.tenant);
const pool = createMcpPool({ connect: { sandbox: { mode: sandboxMode } } });
const directTarget: McpTarget = { transport: 'stdio', command: process.execPath, args: [echoServerPath], env: { COUNT_FILE: directCountFile }, sandbox: testSandboxProfile([directCountFile]) };
const stopLater: (() => Promise<void>)[] = [];

const direct = (recorder: LatencyRecorder): Promise<CallOutcome> => {
  const text = `direct-${run}-${randomBytes(6).toString('hex')}`;
  const started = performance.now();
  return pool.callTool(directTarget, 'echo', { text }, { timeoutMs: 30_000 }).then(
    (result) => {
      const ok = result.isError !== true;
      recorder.record(performance.now() - started, ok);
      return ok ? 'ok' : 'failed';
    },
    () => {
      recorder.record(performance.now() - started, false);
      return 'failed';
    },
  );
};

try {
  const serverPids = await infra.serverPids();
  let extra: { direct: Record<string, number>; halfLoad: Record<string, unknown> } | undefined;
  const governed = await governedRun({
    label: 'governed',
    nats: { url: infra.natsUrl, monitorUrl: infra.natsMonitorUrl, pid: () => serverPids['nats-server'] },
    profile,
    // The direct calls and the half load, while this run's adapter is up.
    afterSustained: async (caller, messaging, sustained) => {
      log(`sustained: ${sustainedS} s direct, ${inFlight} in flight`);
      await pool.session(directTarget);
      await closedLoop(Math.min(inFlight, 8), 1, direct, new LatencyRecorder());
      const directSustained = await closedLoop(inFlight, sustainedS, direct, new LatencyRecorder());
      log(`  ${summary(directSustained)}`);

      const halfRate = Math.max(1, Math.round(sustained.perSecond / 2));
      log(`half load: ${halfS} s at ${halfRate}/s, governed then direct`);
      const timeline = new StageTimeline();
      await timeline.start(messaging, scope);
      caller.timeline = timeline;
      timeline.record(true);
      const halfGoverned = await openLoop(halfRate, halfS, (recorder) => caller.call(recorder), new LatencyRecorder());
      timeline.record(false);
      timeline.stop();
      const stages = timeline.spans();
      log(`  governed ${summary(halfGoverned)}`);
      log(`  median ms: sent→Received ${stages.sentToReceived}, Received→Started ${stages.receivedToStarted}, Started→Completed ${stages.startedToCompleted}, Completed→reply ${stages.completedToReplied} (${stages.calls} calls)`);
      const halfDirect = await openLoop(halfRate, halfS, direct, new LatencyRecorder());
      log(`  direct ${summary(halfDirect)}`);
      extra = {
        direct: { invocationsPerSec: Math.round(directSustained.perSecond), p50Ms: round(directSustained.p50), p99Ms: round(directSustained.p99), inFlight },
        halfLoad: { ratePerSec: halfRate, p50Ms: round(halfGoverned.p50), p99Ms: round(halfGoverned.p99), directP50Ms: round(halfDirect.p50), addedP50Ms: round(halfGoverned.p50 - halfDirect.p50), stagesMs: stages },
      };
    },
  });

  let governedSyncAlways: Awaited<ReturnType<typeof governedRun>> | null = null;
  if (syncAlwaysRun) {
    const dir = await mkdtemp(path.join(tmpdir(), 'toolplane-bench-nats-'));
    // Filled at the default flush when there is a preload (sync_interval: always would fsync every copied message).
    const nats = await startNatsServer(dir, preloadCalls === 0);
    stopLater.push(async () => {
      await nats.stop();
      await rm(dir, { recursive: true, force: true });
    });
    governedSyncAlways = await governedRun({ label: 'governedSyncAlways', nats: { url: nats.url, monitorUrl: nats.monitorUrl, pid: () => nats.pid() }, profile: false, restartSyncAlways: preloadCalls > 0 ? () => nats.restart(true) : undefined });
  } else log('BENCH_SYNC_ALWAYS=0: no sync_interval: always run');

  const result = {
    governed: governed.result,
    governedSyncAlways: governedSyncAlways?.result ?? null,
    direct: extra?.direct,
    halfLoad: extra?.halfLoad,
    preload: preloadCalls,
    sandbox: sandboxMode,
    rateLimit,
    machine: { cpus: availableParallelism(), node: process.version, loadAverage1m: round(loadavg()[0] ?? 0, 1) },
    ...(governed.profile === undefined ? {} : { profile: Object.fromEntries(governed.profile.buckets.slice(0, 8).map((bucket) => [bucket.name, round(bucket.share, 1)])) }),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await pool.close();
  for (const stop of stopLater.reverse()) await stop().catch(() => undefined);
  await infra.stop();
  await rm(work, { recursive: true, force: true });
}

interface GovernedRunOptions {
  readonly label: string;
  readonly nats: { readonly url: string; readonly monitorUrl: string | undefined; readonly pid: () => number | undefined };
  readonly profile: boolean;
  /** Measures more while the run's adapter is up, after the sustained phase (before the drain). */
  readonly afterSustained?: (caller: GovernedCaller, messaging: Messaging, sustained: PhaseResult) => Promise<void>;
  /** After the preload: restarts NATS with sync_interval: always (the adapter is restarted around it). */
  readonly restartSyncAlways?: (() => Promise<void>) | undefined;
}

/** One governed run against one nats-server: its own adapter, database, scope keys and count file. */
async function governedRun(options: GovernedRunOptions): Promise<{ result: Record<string, unknown>; profile: CpuProfileSummary | undefined }> {
  const { label } = options;
  const tag = `${run}${label === 'governed' ? 'd' : 's'}`;
  const dbName = `bench_adapter_${tag}`;
  const countFile = path.join(work, `${label}-count`);
  const cpuProfileDir = options.profile ? path.join(work, `${label}-cpu-profile`) : undefined;
  log(`${label}: NATS ${options.nats.url}`);
  const messaging = await connectMessaging({ url: options.nats.url, name: `bench-${label}` });
  const store = await connectStore({ url: infra.mongoUrl, dbName, appName: `bench-${label}` });
  const registry = await serveRegistryStandIn(messaging, echoServerDocument(tool, countFile));
  let adapter: AdapterProcess | undefined;
  try {
    const adapterStarted = { at: 0 };
    const startAdapter = async () => {
      log(`  starting the tool adapter${cpuProfileDir === undefined ? '' : ' with --cpu-prof'} (ADAPTER_CONCURRENCY ${env['ADAPTER_CONCURRENCY'] ?? inFlight})`);
      adapterStarted.at = performance.now();
      adapter = await startAdapterProcess(
        {
          NATS_URL: options.nats.url,
          MONGODB_URL: infra.mongoUrl,
          MONGODB_DATABASE: dbName,
          LOG_LEVEL: env['BENCH_LOG_LEVEL'] ?? 'warn',
          TOOLPLANE_TRUSTED_KEYS: keys.trustedKeys,
          ADAPTER_SIGNING_KEY: keys.signingKey,
          ADAPTER_CONCURRENCY: env['ADAPTER_CONCURRENCY'] ?? String(inFlight),
          MCP_STDIO_SANDBOX: sandboxMode,
        },
        { cpuProfileDir },
      );
      return adapter;
    };
    await startAdapter();
    await provisionTool(messaging, tool, await keys.adminToken(scope), rateLimit);
    const contextToken = await keys.contextToken(scope, tool.agentId);
    const caller = new GovernedCaller(messaging, scope, tool.toolId, contextToken, tag);
    await caller.start();
    const provisioned = () => firstSuccess(async () => (await caller.call(new LatencyRecorder())) === 'ok', () => caller.lastFailure ?? 'no reply');
    await provisioned();

    let preloaded: PreloadReport | undefined;
    if (preloadCalls > 0) {
      if (options.nats.monitorUrl === undefined) throw new Error('BENCH_PRELOAD needs the nats-server monitoring endpoint');
      log(`  preload: the history of ${preloadCalls} calls`);
      preloaded = await preload(
        {
          messaging,
          monitorUrl: options.nats.monitorUrl,
          store,
          scope,
          recordedCall: async () => {
            if ((await caller.call(new LatencyRecorder())) !== 'ok') throw new Error(`the call to record failed: ${caller.lastFailure ?? 'no reply'}`);
            return caller.lastKey;
          },
          idsOf: async (key) => {
            const found = await lookupInvocation(messaging, scope, contextToken, key);
            return found === undefined ? [] : [found.invocationId, found.toolCallId];
          },
          log,
        },
        preloadCalls,
        preloadSettleMs,
      );
      log(`  preload: ${preloaded.calls} calls in ${(preloaded.ms / 1000).toFixed(1)} s (${preloaded.messages} messages, ${preloaded.documents} documents, consumers settled in ${preloaded.settleMs} ms)`);
      if (options.restartSyncAlways !== undefined) {
        log('  restarting NATS with sync_interval: always, and the adapter');
        await adapter?.stop();
        await options.restartSyncAlways();
        await reconnected(messaging);
        await startAdapter();
        await provisioned();
      }
    }
    const syncAlways = options.nats.monitorUrl === undefined ? undefined : (await sampleStreams(options.nats.monitorUrl)).syncAlways;

    log(`  warm-up: ${warmupS} s, ${inFlight} in flight`);
    await closedLoop(inFlight, warmupS, (recorder) => caller.call(recorder), new LatencyRecorder());
    log(`  sustained: ${sustainedS} s governed, ${inFlight} in flight`);
    const adapterPid = adapter?.pid ?? 0;
    const before = await sampleCosts(options.nats, adapterPid);
    const profileWindow = { fromMs: performance.now() - adapterStarted.at, toMs: 0 };
    const sustained = await closedLoop(inFlight, sustainedS, (recorder) => caller.call(recorder), new LatencyRecorder());
    profileWindow.toMs = performance.now() - adapterStarted.at;
    const after = await sampleCosts(options.nats, adapterPid);
    const costs = costsPerInvocation(before, after, sustained.ok);
    log(`    ${summary(sustained)}`);
    if (sustained.failed > 0) log(`    last failure: ${caller.lastFailure ?? 'none'}`);

    await options.afterSustained?.(caller, messaging, sustained);

    log(`  draining: up to ${drainS} s for ${caller.owed} replies still owed`);
    await caller.drain(drainS * 1000);
    // Accepted requests without a reply that have no outcome either: the adapter's lookup by key (as the agent that
    // made them) finds no call, or one without a result.
    const { lost, lookupErrors } = await countLost(caller.unanswered(), async (key) => ((await lookupInvocation(messaging, scope, contextToken, key))?.result === undefined ? 'none' : 'outcome'));
    const executions = await executionsByKey(countFile);
    const duplicated = duplicatedExecutions(executions);
    const notExecuted = caller.succeededKeys().filter((key) => !executions.has(key)).length;
    if (notExecuted > 0) log(`  WARNING: ${notExecuted} successful replies have no execution in the count file`);
    log(`  accepted ${caller.accepted}, replies ${caller.replied} (${caller.failedReplies} not SUCCESS), lost ${lost}${lookupErrors > 0 ? ` (${lookupErrors} lookups failed)` : ''}, executions ${[...executions.values()].reduce((a, b) => a + b, 0)} of ${executions.size} keys`);
    caller.stop();
    await registry.stop();
    await adapter?.stop();
    const profileSummary = cpuProfileDir === undefined ? undefined : await readCpuProfile(cpuProfileDir, profileWindow, 'adapter CPU profile of the sustained phase', log, env['BENCH_PROFILE_OUT']);

    return {
      result: {
        invocationsPerSec: Math.round(sustained.perSecond),
        p50Ms: round(sustained.p50),
        p99Ms: round(sustained.p99),
        inFlight,
        lost,
        duplicated,
        failed: caller.failedReplies,
        ...(lookupErrors > 0 ? { lookupErrors } : {}),
        syncAlways,
        ...(preloaded === undefined ? {} : { preload: { calls: preloaded.calls, seconds: round(preloaded.ms / 1000, 1), messagesPerCall: preloaded.messagesPerCall, documentsPerCall: preloaded.documentsPerCall, failedPublishes: preloaded.failedPublishes, settleMs: preloaded.settleMs } }),
        perInvocation: costs,
      },
      profile: profileSummary,
    };
  } finally {
    await registry.stop().catch(() => undefined);
    await adapter?.stop().catch(() => undefined);
    await store.db.dropDatabase().catch(() => undefined);
    await store.close();
    await messaging.drain().catch(() => undefined);
  }
}

/** Resolves once the connection is up again after its server restarted (and the server has its subscriptions). */
async function reconnected(messaging: Messaging): Promise<void> {
  const until = Date.now() + 30_000;
  for (;;) {
    if (messaging.isConnected()) {
      try {
        await messaging.connection.flush();
        return;
      } catch (error) {
        if (Date.now() > until) throw error;
      }
    } else if (Date.now() > until) throw new Error('NATS did not come back within 30 s of its restart');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface CostSample {
  readonly ferret: Map<string, number> | undefined;
  readonly streams: StreamsSample | undefined;
  readonly cpuMs: Record<string, number>;
}

async function sampleCosts(nats: GovernedRunOptions['nats'], adapterPid: number): Promise<CostSample> {
  const [ferret, streams] = await Promise.all([
    infra.ferretMetricsUrl === undefined ? undefined : scrapeCounters(infra.ferretMetricsUrl, 'ferretdb_client_requests_total', 'command'),
    nats.monitorUrl === undefined ? undefined : sampleStreams(nats.monitorUrl),
  ]);
  const natsPid = nats.pid();
  const ferretPid = (await infra.serverPids())['ferretdb'];
  const cpuMs = await sampleCpu({ adapter: adapterPid, bench: process.pid, 'nats-server': natsPid, ferretdb: ferretPid });
  return { ferret, streams, cpuMs };
}

/** Database commands, JetStream messages and CPU milliseconds per process, per governed invocation of the sustained phase. */
function costsPerInvocation(before: CostSample, after: CostSample, invocations: number): Record<string, unknown> {
  const per = (value: number) => Number((value / Math.max(1, invocations)).toFixed(2));
  // The divisor, so a phase in which no call completed (the figures are then totals) reads as what it is.
  const costs: Record<string, unknown> = { calls: invocations };
  if (before.ferret !== undefined && after.ferret !== undefined) {
    const commands = counterDelta(before.ferret, after.ferret);
    costs['dbCommands'] = per([...commands.values()].reduce((a, b) => a + b, 0));
    costs['dbCommandsByName'] = Object.fromEntries([...commands].filter(([, count]) => count > 0).sort((a, b) => b[1] - a[1]).map(([name, count]) => [name, per(count)]));
  }
  if (before.streams !== undefined && after.streams !== undefined) Object.assign(costs, jetStreamCosts(before.streams, after.streams, invocations, awaited));
  costs['cpuMs'] = cpuMsPerCall(before.cpuMs, after.cpuMs, invocations);
  return costs;
}

