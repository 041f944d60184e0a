// `npm run bench`: governed invocations per second through the tool adapter, against the same tool called
// directly, measured in one run. A harness, not a test.
//
// It starts fresh NATS and FerretDB from infra/local on free ports (or, with --use-running, uses NATS_URL and
// MONGODB_URL), the built tool adapter as a child process (a real process hop, and a CPU profile of the adapter
// alone with --profile), a stand-in registry, and the echo fixture (bench/echo-server.mjs) over stdio. Then:
//   warm-up      BENCH_WARMUP_S (5) closed loop, BENCH_IN_FLIGHT (16) requests in flight
//   sustained    BENCH_SECONDS (20) closed loop, governed; then the same for direct calls to the same tool
//   half load    BENCH_HALF_SECONDS (10) open loop at half the governed rate, governed then direct
//   drain        up to BENCH_DRAIN_S (30) for replies still owed
// and prints, as its last line, one JSON object. lost = requests JetStream accepted that have neither a reply
// nor a terminal document after the drain; duplicated = executions in the fixture's count file beyond one per key.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { isTerminalInvocationState, type Scope } from '@toolplane/contracts';
import { createMcpPool, type McpTarget } from '@toolplane/mcp';
import { connectMessaging } from '@toolplane/messaging';
import { connectStore, type Store } from '@toolplane/store';
import { invocationDocumentId, toolInvocations } from '../src/mod.js';
import { benchInfra, benchKeys, echoServerDocument, echoServerPath, provisionTool, serveRegistryStandIn, startAdapterProcess, type BenchInfra } from './bench-setup.js';
import { summarizeCpuProfile, type CpuProfile } from './cpu-profile-summary.js';
import { GovernedCaller } from './governed-caller.js';
import { LatencyRecorder, closedLoop, openLoop, type CallOutcome } from './load.js';
import { StageTimeline } from './stage-timeline.js';
import { counterDelta, processCpuMs, scrapeCounters } from './metrics.js';

const env = process.env;
const argv = process.argv.slice(2);
const useRunning = argv.includes('--use-running') || env['BENCH_USE_RUNNING'] === '1';
const profile = argv.includes('--profile') || env['BENCH_PROFILE'] === '1';
const inFlight = Number(env['BENCH_IN_FLIGHT'] ?? 16);
const warmupS = Number(env['BENCH_WARMUP_S'] ?? 5);
const sustainedS = Number(env['BENCH_SECONDS'] ?? 20);
const halfS = Number(env['BENCH_HALF_SECONDS'] ?? 10);
const drainS = Number(env['BENCH_DRAIN_S'] ?? 30);
const log = (line: string) => process.stderr.write(`${line}\n`);

const run = randomBytes(4).toString('hex');
const scope: Scope = { tenant: 'bench', workspace: `w_${run}` };
const tool = { scope, agentId: 'bench-agent', toolId: 'bench.echo', serverId: randomUUID() };
const dbName = `bench_adapter_${run}`;
const work = await mkdtemp(path.join(tmpdir(), 'toolplane-bench-adapter-'));
const governedCountFile = path.join(work, 'governed-count');
const directCountFile = path.join(work, 'direct-count');
const cpuProfileDir = profile ? path.join(work, 'cpu-profile') : undefined;

log(useRunning ? 'using NATS_URL and MONGODB_URL' : 'starting NATS and FerretDB (infra/local) on free ports');
const infra = await benchInfra(env, useRunning);
const keys = await benchKeys(scope.tenant);
const messaging = await connectMessaging({ url: infra.natsUrl, name: 'bench-adapter' });
const store = await connectStore({ url: infra.mongoUrl, dbName, appName: 'bench-adapter' });
const registry = await serveRegistryStandIn(messaging, echoServerDocument(tool, governedCountFile));
await provisionTool(messaging, store, tool);
log(`starting the tool adapter${profile ? ' with --cpu-prof' : ''} (ADAPTER_CONCURRENCY ${env['ADAPTER_CONCURRENCY'] ?? inFlight})`);
const adapterStarted = performance.now();
const adapter = await startAdapterProcess(
  {
    NATS_URL: infra.natsUrl,
    MONGODB_URL: infra.mongoUrl,
    MONGODB_DATABASE: dbName,
    LOG_LEVEL: env['BENCH_LOG_LEVEL'] ?? 'warn',
    TOOLPLANE_TRUSTED_KEYS: keys.trustedKeys,
    ADAPTER_SIGNING_KEY: keys.signingKey,
    ADAPTER_CONCURRENCY: env['ADAPTER_CONCURRENCY'] ?? String(inFlight),
  },
  { cpuProfileDir },
);
const pool = createMcpPool();
const directTarget: McpTarget = { transport: 'stdio', command: process.execPath, args: [echoServerPath], env: { COUNT_FILE: directCountFile } };

try {
  const governed = new GovernedCaller(messaging, scope, tool.toolId, await keys.contextToken(scope, tool.agentId), run);
  await governed.start();
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

  log(`warm-up: ${warmupS} s, ${inFlight} in flight`);
  await pool.session(directTarget);
  await closedLoop(inFlight, warmupS, (recorder) => governed.call(recorder), new LatencyRecorder());
  await closedLoop(Math.min(inFlight, 8), 1, direct, new LatencyRecorder());

  log(`sustained: ${sustainedS} s governed, ${inFlight} in flight`);
  const before = await sampleCosts(infra, adapter.pid);
  const profileWindow = { fromMs: performance.now() - adapterStarted, toMs: 0 };
  const sustained = await closedLoop(inFlight, sustainedS, (recorder) => governed.call(recorder), new LatencyRecorder());
  profileWindow.toMs = performance.now() - adapterStarted;
  const after = await sampleCosts(infra, adapter.pid);
  const costs = costsPerInvocation(before, after, sustained.ok);
  log(`  ${summary(sustained)}`);
  log(`sustained: ${sustainedS} s direct, ${inFlight} in flight`);
  const directSustained = await closedLoop(inFlight, sustainedS, direct, new LatencyRecorder());
  log(`  ${summary(directSustained)}`);

  const halfRate = Math.max(1, Math.round(sustained.perSecond / 2));
  log(`half load: ${halfS} s at ${halfRate}/s, governed then direct`);
  const timeline = new StageTimeline();
  await timeline.start(messaging, scope);
  governed.timeline = timeline;
  timeline.record(true);
  const halfGoverned = await openLoop(halfRate, halfS, (recorder) => governed.call(recorder), new LatencyRecorder());
  timeline.record(false);
  timeline.stop();
  const stages = timeline.spans();
  log(`  governed ${summary(halfGoverned)}`);
  log(`  median ms: sent→Received ${stages.sentToReceived}, Received→Started ${stages.receivedToStarted}, Started→Completed ${stages.startedToCompleted}, Completed→reply ${stages.completedToReplied} (${stages.calls} calls)`);
  const halfDirect = await openLoop(halfRate, halfS, direct, new LatencyRecorder());
  log(`  direct ${summary(halfDirect)}`);

  log(`draining: up to ${drainS} s for ${governed.owed} replies still owed`);
  await governed.drain(drainS * 1000);
  const lost = await countLost(store, scope, governed.unanswered());
  const executions = await executionsByKey(governedCountFile);
  const duplicated = [...executions.values()].reduce((sum, count) => sum + Math.max(0, count - 1), 0);
  const notExecuted = governed.succeededKeys().filter((key) => !executions.has(key)).length;
  if (notExecuted > 0) log(`WARNING: ${notExecuted} successful replies have no execution in the count file`);
  log(`accepted ${governed.accepted}, replies ${governed.replied} (${governed.failedReplies} not SUCCESS), lost ${lost}, executions ${[...executions.values()].reduce((a, b) => a + b, 0)} of ${executions.size} keys`);
  governed.stop();

  await registry.stop();
  await adapter.stop();
  let profileSummary: ReturnType<typeof summarizeCpuProfile> | undefined;
  if (cpuProfileDir !== undefined) {
    const file = (await readdir(cpuProfileDir)).find((name) => name.endsWith('.cpuprofile'));
    if (file === undefined) log('no CPU profile was written');
    else {
      const text = await readFile(path.join(cpuProfileDir, file), 'utf8');
      if (env['BENCH_PROFILE_OUT']) await writeFile(env['BENCH_PROFILE_OUT'], text);
      // The sustained governed phase only: start-up (module loading) and the direct phases are left out.
      profileSummary = summarizeCpuProfile(JSON.parse(text) as CpuProfile, profileWindow);
      log(`adapter CPU profile of the sustained phase (${profileSummary.busyMs.toFixed(0)} ms busy, ${profileSummary.idleShare.toFixed(0)} % idle), self time by where it is spent:`);
      for (const bucket of profileSummary.buckets.filter((b) => b.share >= 0.5)) log(`  ${bucket.share.toFixed(1).padStart(5)} %  ${bucket.name}`);
      log('  top functions:');
      for (const fn of profileSummary.functions) log(`  ${fn.share.toFixed(1).padStart(5)} %  ${fn.name}`);
    }
  }

  const round = (value: number, digits = 2) => Number(value.toFixed(digits));
  const result = {
    invocationsPerSec: Math.round(sustained.perSecond),
    p50Ms: round(sustained.p50),
    p99Ms: round(sustained.p99),
    inFlight,
    lost,
    duplicated,
    failed: governed.failedReplies,
    direct: { invocationsPerSec: Math.round(directSustained.perSecond), p50Ms: round(directSustained.p50), p99Ms: round(directSustained.p99), inFlight },
    halfLoad: { ratePerSec: halfRate, p50Ms: round(halfGoverned.p50), p99Ms: round(halfGoverned.p99), directP50Ms: round(halfDirect.p50), addedP50Ms: round(halfGoverned.p50 - halfDirect.p50), stagesMs: stages },
    perInvocation: costs,
    machine: { cpus: availableParallelism(), node: process.version, loadAverage1m: round(loadavg()[0] ?? 0, 1) },
    ...(profileSummary === undefined ? {} : { profile: Object.fromEntries(profileSummary.buckets.slice(0, 8).map((bucket) => [bucket.name, round(bucket.share, 1)])) }),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await registry.stop().catch(() => undefined);
  await adapter.stop().catch(() => undefined);
  await pool.close();
  await store.db.dropDatabase().catch(() => undefined);
  await store.close();
  await messaging.drain().catch(() => undefined);
  await infra.stop();
  await rm(work, { recursive: true, force: true });
}

function summary(phase: { perSecond: number; p50: number; p99: number; ok: number; failed: number }): string {
  return `${Math.round(phase.perSecond)}/s, p50 ${phase.p50.toFixed(2)} ms, p99 ${phase.p99.toFixed(2)} ms (${phase.ok} ok, ${phase.failed} failed)`;
}

/** Accepted requests without a reply whose document is not terminal either (or does not exist). */
async function countLost(store: Store, scope: Scope, keys: readonly string[]): Promise<number> {
  let lost = 0;
  for (const key of keys) {
    const document = await store.collection(toolInvocations).raw.findOne({ _id: invocationDocumentId(scope, key) });
    if (document === null || !isTerminalInvocationState(document.state) || document.receipt === undefined) lost += 1;
  }
  return lost;
}

/** How often each text (key) was executed, from the fixture's count file. */
async function executionsByKey(file: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const text = await readFile(file, 'utf8').catch(() => '');
  for (const line of text.split('\n')) if (line !== '') counts.set(line, (counts.get(line) ?? 0) + 1);
  return counts;
}

interface CostSample {
  readonly at: number;
  readonly ferret: Map<string, number> | undefined;
  readonly nats: { readonly inMsgs: number; readonly outMsgs: number } | undefined;
  readonly cpuMs: Record<string, number>;
}

async function sampleCosts(infra: BenchInfra, adapterPid: number): Promise<CostSample> {
  const [ferret, nats] = await Promise.all([
    infra.ferretMetricsUrl === undefined ? undefined : scrapeCounters(infra.ferretMetricsUrl, 'ferretdb_client_requests_total', 'command'),
    infra.natsMonitorUrl === undefined ? undefined : fetch(`${infra.natsMonitorUrl}/varz`).then(async (response) => (await response.json()) as { in_msgs: number; out_msgs: number }).then((varz) => ({ inMsgs: varz.in_msgs, outMsgs: varz.out_msgs })),
  ]);
  const pids: Record<string, number> = { adapter: adapterPid, ...(await infra.serverPids()) };
  const cpuMs: Record<string, number> = { bench: (process.cpuUsage().user + process.cpuUsage().system) / 1000 };
  for (const [name, pid] of Object.entries(pids)) {
    const ms = await processCpuMs(pid);
    if (ms !== undefined) cpuMs[name] = ms;
  }
  return { at: performance.now(), ferret, nats, cpuMs };
}

/** Database commands, NATS messages and CPU milliseconds per process, per governed invocation of the sustained phase. */
function costsPerInvocation(before: CostSample, after: CostSample, invocations: number): Record<string, unknown> {
  const per = (value: number) => Number((value / Math.max(1, invocations)).toFixed(2));
  const costs: Record<string, unknown> = {};
  if (before.ferret !== undefined && after.ferret !== undefined) {
    const commands = counterDelta(before.ferret, after.ferret);
    costs['dbCommands'] = per([...commands.values()].reduce((a, b) => a + b, 0));
    costs['dbCommandsByName'] = Object.fromEntries([...commands].filter(([, count]) => count > 0).sort((a, b) => b[1] - a[1]).map(([name, count]) => [name, per(count)]));
  }
  if (before.nats !== undefined && after.nats !== undefined) {
    costs['natsMsgsIn'] = per(after.nats.inMsgs - before.nats.inMsgs);
    costs['natsMsgsOut'] = per(after.nats.outMsgs - before.nats.outMsgs);
  }
  costs['cpuMs'] = Object.fromEntries(Object.keys(after.cpuMs).map((name) => [name, per((after.cpuMs[name] ?? 0) - (before.cpuMs[name] ?? 0))]));
  return costs;
}
