// `npm run bench:mcp`: what the governed MCP endpoint adds, at each of the two protocol eras it serves at one URL.
// The same echo tool (one Streamable HTTP process, @toolplane/testing/bench's echo-server.mjs) called four ways in
// one run:
//   direct             the MCP SDK 1.x Client over Streamable HTTP → the tool
//   governedNats       @toolplane/client `invoke` → tool adapter → the tool (registered as a Streamable HTTP server)
//   governedMcpLegacy  the MCP SDK 1.x Client (2025-11-25: initialize, then requests), bearer agent token
//                      → MCP endpoint → tool adapter → the tool
//   governedMcpModern  the MCP SDK v2 Client (@modelcontextprotocol/client, `versionNegotiation: { mode: 'auto' }`:
//                      `server/discover`, then a `_meta` envelope on every request; the run fails unless it
//                      negotiated 2026-07-28), the same bearer token → MCP endpoint → tool adapter → the tool
// Both endpoint paths call the tool by its governed id (`bench.echo`, which tools/call accepts beside the listed
// model-safe name), each call with its idempotency key in `_meta["dev.toolplane/idempotencyKey"]`.
// A harness, not a test. It starts fresh NATS and FerretDB from infra/local on free ports (or, with --use-running,
// uses NATS_URL and MONGODB_URL), the built tool adapter and the built endpoint as child processes (real process hops;
// a CPU profile of the endpoint alone with --profile), a stand-in registry, and provisions what a governed call
// needs straight into the adapter's buckets (the default tenant policy plus a rate limit far above the rate; token
// verification, argument schema validation and receipts stay on). The endpoint's per-token rate limit is off.
//
// Per path: warm-up → sustained (closed loop, BENCH_IN_FLIGHT in flight); then each path again as an open loop at
// half the closed-loop rate of the slower endpoint path (the issue's "half load"; the output names that path). Then
// the drain: every governed call that did not succeed is looked up by its key until it has an outcome or BENCH_DRAIN_S
// passed. Each endpoint client's HTTP requests are counted by kind (the log shows requests per call, to see any
// round trip beyond the one POST per call).
//
// Settings (environment):
//   BENCH_WARMUP_S (5)         closed-loop warm-up of each path
//   BENCH_SECONDS (20)         sustained closed loop of each path
//   BENCH_HALF_SECONDS (10)    half-load open loop of each path
//   BENCH_IN_FLIGHT (16)       calls in flight in the closed loops (ADAPTER_CONCURRENCY defaults to it)
//   BENCH_DRAIN_S (30)         how long to wait for the outcome of calls that did not succeed
//   BENCH_CALL_TIMEOUT_MS (30000) each call's deadline
//   BENCH_RATE_LIMIT (100000)  the tenant policy's rate limit per BENCH_RATE_WINDOW_MS (1000) per agent and tool
//   BENCH_PROFILE=1 or --profile: CPU profile of the endpoint over the governedMcpModern sustained phase (summary on
//                              stderr; BENCH_PROFILE_OUT saves it)
//   BENCH_LOG_LEVEL (warn)     the adapter's and the endpoint's log level
//   --use-running / BENCH_USE_RUNNING=1: NATS_URL and MONGODB_URL (BENCH_NATS_MONITOR_URL, BENCH_FERRETDB_METRICS_URL)
//
// It prints, as its last line, one JSON object: per path rate, p50 and p99 of the closed loop and CPU ms per call
// per process (endpoint, adapter, nats-server, ferretdb, bench, tool), and for the endpoint paths the protocol version
// the client negotiated; lost = governed calls without a success that have no outcome by lookup after the drain;
// duplicated = executions in the tool's count file beyond one per key (each path's keys have a prefix of their own);
// halfLoad: its rate and the path it is half of (`halfOf`), the open loops' p50/p99 and CPU, and `addedP50Ms`
// `{ legacy, modern }`, each endpoint path's p50 over the NATS path, with `target` (≤ 1 ms) met or missed per era;
// `addedOverMcpHopP50Ms`, the same less the direct path's p50 (one plain MCP exchange over HTTP on this machine).
/* eslint-disable no-restricted-imports -- the benchmark is an MCP client of the endpoint and of the tool, as any client is: the SDK's own Clients (v2 and 1.x) */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttpTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
/* eslint-enable no-restricted-imports */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { generateSigningKeyPair } from '@toolplane/auth';
import { createToolplaneClient, type ToolplaneClient } from '@toolplane/client';
import { ToolDescriptor, hasErrorCode, mcpMetaKeys, type Scope } from '@toolplane/contracts';
import { connectMessaging, openKv } from '@toolplane/messaging';
import {
  benchSettings,
  LatencyRecorder,
  benchInfra,
  closedLoop,
  countLost,
  cpuMsPerCall,
  describePhase,
  duplicatedExecutions,
  executionsByKey,
  firstSuccess,
  openLoop,
  readCpuProfile,
  sampleCpu,
  startHttpEcho,
  startServiceProcess,
  type CallOutcome,
  type CpuProfileSummary,
  type OutcomeLookup,
  type PhaseResult,
  type ServiceProcess,
} from '@toolplane/testing/bench';
import { defaultTenantPolicy, descriptorBucket } from '@toolplane/tool-adapter';
import {
  adapterTestEnv,
  agentContextToken,
  agentProfileDocument,
  httpServerDocument,
  insertAgentProfile,
  putDescriptor,
  putTenantPolicy,
  receiptSigningKey,
  serveStandInRegistry,
  testDescriptor,
} from '@toolplane/tool-adapter/testing';

const env = process.env;
const argv = process.argv.slice(2);
const { useRunning, profile, inFlight, warmupS, sustainedS, halfS, drainS, rateLimit } = benchSettings(env, argv);
const callTimeoutMs = Number(env['BENCH_CALL_TIMEOUT_MS'] ?? 30_000);
const logLevel = env['BENCH_LOG_LEVEL'] ?? 'warn';
/** The issue's target: the endpoint adds at most this much p50 over the NATS path at half load. */
const targetAddedP50Ms = 1;
/** The protocol revision the v2 client must negotiate with the endpoint for the modern path to count. */
const modernRevision = '2026-07-28';
const repoRoot = path.resolve(import.meta.dirname, '../../..');
const log = (line: string) => process.stderr.write(`${line}\n`);
const round = (value: number, digits = 2) => Number(value.toFixed(digits));

const run = randomBytes(4).toString('hex');
const scope: Scope = { tenant: 'bench', workspace: `w_${run}` };
const agentId = 'bench-agent';
const toolId = 'bench.echo';
const serverId = randomUUID();
const paths = ['direct', 'governedNats', 'governedMcpLegacy', 'governedMcpModern'] as const;
type PathName = (typeof paths)[number];
/** The paths through the endpoint, by protocol era. */
const endpointPaths = { legacy: 'governedMcpLegacy', modern: 'governedMcpModern' } as const;
type Era = keyof typeof endpointPaths;
const eras = ['legacy', 'modern'] as const satisfies readonly Era[];
const governedPaths = ['governedNats', 'governedMcpLegacy', 'governedMcpModern'] as const satisfies readonly PathName[];
/** Each path's key prefix (the key is also the echoed text): none is a prefix of another's. */
const prefixOf: Record<PathName, string> = { direct: 'direct', governedNats: 'nats', governedMcpLegacy: 'mcp-legacy', governedMcpModern: 'mcp-modern' };

/** One way of calling the echo tool: a call per unique key (the key is the echoed text), and what became of them. */
interface CallPath {
  readonly name: PathName;
  call(recorder: LatencyRecorder): Promise<CallOutcome>;
  /** The keys of calls that did not succeed (failed, refused or unanswered): the loss candidates. */
  readonly notSucceeded: string[];
  readonly succeeded: Set<string>;
  lastFailure: string | undefined;
}

/** A call path around `attempt` (true when the call succeeded), keys `<prefix>-<run>-<n>`. */
function callPath(name: PathName, attempt: (key: string) => Promise<{ ok: boolean; failure?: string }>): CallPath {
  let sequence = 0;
  const caller: CallPath = {
    name,
    notSucceeded: [],
    succeeded: new Set(),
    lastFailure: undefined,
    async call(recorder) {
      sequence += 1;
      const key = `${prefixOf[name]}-${run}-${sequence}`;
      const started = performance.now();
      const outcome = await attempt(key).catch((error: unknown) => ({ ok: false, failure: error instanceof Error ? error.message : String(error) }));
      recorder.record(performance.now() - started, outcome.ok);
      if (outcome.ok) caller.succeeded.add(key);
      else {
        caller.notSucceeded.push(key);
        caller.lastFailure = outcome.failure;
      }
      return outcome.ok ? 'ok' : 'failed';
    },
  };
  return caller;
}

/** The HTTP requests one MCP client made, by HTTP method and the `Mcp-Method` header (sent at 2026-07-28 only). */
class HttpRequests {
  total = 0;
  readonly byKind = new Map<string, number>();

  note(init: RequestInit | undefined): void {
    const mcpMethod = init?.headers instanceof Headers ? init.headers.get('mcp-method') : null;
    const kind = `${init?.method ?? 'GET'}${mcpMethod === null ? '' : ` ${mcpMethod}`}`;
    this.total += 1;
    this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + 1);
  }

  describe(): string {
    return [...this.byKind].map(([kind, count]) => `${kind} ×${count}`).join(', ');
  }
}

/**
 * The MCP SDK 1.x client over Streamable HTTP at `url`, connected (initialize done: it speaks 2025-11-25), with
 * `headers` on every request. Its requests go without the transport's one AbortSignal: undici keeps a listener on it
 * per request until the request is garbage-collected, and past 1,500 prints a warning per call, which only costs this
 * process (nothing here aborts a request; every call is awaited before the client closes).
 */
async function mcpClient(url: string, headers: Record<string, string> = {}, requests = new HttpRequests()): Promise<{ client: Client; protocolVersion: string | undefined }> {
  const client = new Client({ name: 'toolplane-bench', version: '0.1.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers },
    fetch: (input, init) => {
      requests.note(init);
      return fetch(input, { ...init, signal: null });
    },
  });
  await client.connect(transport);
  return { client, protocolVersion: transport.protocolVersion };
}

/**
 * The MCP SDK v2 client over Streamable HTTP at `url` with `headers` on every request, negotiating the protocol
 * revision (`server/discover` first); fails unless it settled on 2026-07-28. Each of its requests there has an
 * AbortSignal of its own (closing the response is the cancellation at 2026-07-28), so they keep it.
 */
async function modernMcpClient(url: string, headers: Record<string, string>, requests: HttpRequests): Promise<ModernClient> {
  const client = new ModernClient({ name: 'toolplane-bench', version: '0.1.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new ModernHttpTransport(new URL(url), {
      requestInit: { headers },
      fetch: (input, init) => {
        requests.note(init);
        return fetch(input, init);
      },
    }),
  );
  const negotiated = client.getNegotiatedProtocolVersion();
  if (negotiated !== modernRevision) {
    await client.close().catch(() => undefined);
    throw new Error(`the SDK v2 client negotiated ${negotiated ?? 'nothing'} (era ${client.getProtocolEra() ?? 'none'}) with the endpoint, not ${modernRevision}`);
  }
  return client;
}

/** The text of an MCP tool result that is an error, for diagnostics. */
function errorText(result: Record<string, unknown>): string {
  const first = Array.isArray(result['content']) ? (result['content'][0] as { text?: unknown } | undefined) : undefined;
  return typeof first?.text === 'string' ? first.text.slice(0, 300) : 'isError';
}

const work = await mkdtemp(path.join(tmpdir(), 'toolplane-bench-mcp-'));
const countFile = path.join(work, 'count');
const stopLater: (() => Promise<unknown>)[] = [];

log(useRunning ? 'using NATS_URL and MONGODB_URL' : 'starting NATS and FerretDB (infra/local) on free ports');
const infra = await benchInfra(env, useRunning);
try {
  const echo = await startHttpEcho(countFile);
  stopLater.push(() => echo.stop());
  const messaging = await connectMessaging({ url: infra.natsUrl, name: 'bench-mcp' });
  stopLater.push(() => messaging.drain());

  const agentKey = await generateSigningKeyPair('bench-agent-1');
  const trustedKeys = { [scope.tenant]: [agentKey.publicJwk] };
  const contextToken = await agentContextToken(agentKey, scope, { agentId, principal: 'user:bench@bench.example', agentRevision: '1' }, '2h');

  log(`starting the tool adapter (ADAPTER_CONCURRENCY ${env['ADAPTER_CONCURRENCY'] ?? inFlight}) and the MCP endpoint${profile ? ` with --cpu-prof (profiled over the ${endpointPaths.modern} closed loop)` : ''}`);
  const adapter = await startServiceProcess({
    name: 'tool adapter',
    entry: path.join(repoRoot, 'services/tool-adapter/dist/main.js'),
    env: {
      ...adapterTestEnv({ natsUrl: infra.natsUrl, mongoUrl: infra.mongoUrl, dbName: `bench_mcp_${run}`, trustedKeys, signingKey: receiptSigningKey().setting }),
      LOG_LEVEL: logLevel,
      ADAPTER_CONCURRENCY: env['ADAPTER_CONCURRENCY'] ?? String(inFlight),
    },
  });
  stopLater.push(() => adapter.stop());
  const cpuProfileDir = profile ? path.join(work, 'endpoint-cpu-profile') : undefined;
  const endpointStartedAt = performance.now();
  const endpoint: ServiceProcess = await startServiceProcess({
    name: 'MCP endpoint',
    entry: path.join(repoRoot, 'services/mcp-endpoint/dist/main.js'),
    env: { NATS_URL: infra.natsUrl, TOOLPLANE_TRUSTED_KEYS: JSON.stringify(trustedKeys), LOG_LEVEL: logLevel, MCP_ENDPOINT_TOKEN_RATE_LIMIT: '0' },
    cpuProfileDir,
  });
  stopLater.push(() => endpoint.stop());
  log(`  pids: endpoint ${endpoint.pid}, adapter ${adapter.pid}, tool ${echo.pid}, bench ${process.pid}`);

  // What a governed call of bench.echo needs, as the registry and an operator would have left it.
  const server = httpServerDocument({ serverId, scope, name: 'bench-echo' }, { endpointUrl: echo.url });
  const registry = await serveStandInRegistry(messaging, {
    queue: 'bench-registry',
    serverFor: (id) => {
      if (id !== serverId) throw new Error(`unknown server ${id}`);
      return server;
    },
  });
  stopLater.push(() => registry.stop());
  await insertAgentProfile(messaging, agentProfileDocument(scope, agentId, ['bench.*'], { maxRiskClass: 'LOW' }));
  await putTenantPolicy(messaging, { ...defaultTenantPolicy(scope.tenant, new Date().toISOString()), rateLimits: [rateLimit] });
  await putDescriptor(
    await openKv(messaging, descriptorBucket, ToolDescriptor),
    testDescriptor(
      { scope, toolId, providerToolName: 'echo', mcpServerId: serverId, inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
      { description: 'The benchmark echo.', definitionHash: 'c'.repeat(64), retryPolicy: { maxAttempts: 2, initialBackoffMs: 50, maxBackoffMs: 200 } },
    ),
  );

  // An agent runtime's client over a connection of its own, as a runtime beside the endpoint would have.
  const toolplane: ToolplaneClient = await createToolplaneClient({ scope, contextToken, natsUrl: infra.natsUrl, connectionName: 'bench-agent-runtime', defaultTimeoutMs: callTimeoutMs });
  stopLater.push(() => toolplane.close());
  const { client: directClient } = await mcpClient(echo.url);
  stopLater.push(() => directClient.close());
  const endpointUrl = `http://127.0.0.1:${endpoint.port}/mcp/${scope.tenant}/${scope.workspace}`;
  const bearer = { Authorization: `Bearer ${contextToken}` };
  const httpRequests: Record<Era, HttpRequests> = { legacy: new HttpRequests(), modern: new HttpRequests() };
  const legacy = await mcpClient(endpointUrl, bearer, httpRequests.legacy);
  const legacyClient = legacy.client;
  stopLater.push(() => legacyClient.close());
  const modernClient = await modernMcpClient(endpointUrl, bearer, httpRequests.modern);
  stopLater.push(() => modernClient.close());
  const protocolVersions: Record<Era, string | undefined> = { legacy: legacy.protocolVersion, modern: modernClient.getNegotiatedProtocolVersion() };
  log(`endpoint clients: ${endpointPaths.legacy} (SDK 1.x) at ${protocolVersions.legacy ?? '?'}, ${endpointPaths.modern} (SDK v2) at ${protocolVersions.modern ?? '?'}`);
  for (const era of eras) log(`  ${endpointPaths[era]} connect: ${httpRequests[era].describe()}`);
  /** The meta of an endpoint call: its key and its deadline. */
  const callMeta = (key: string) => ({ [mcpMetaKeys.idempotencyKey]: key, [mcpMetaKeys.timeoutMs]: callTimeoutMs });

  const byName: Record<PathName, CallPath> = {
    direct: callPath('direct', async (key) => {
      const result = await directClient.callTool({ name: 'echo', arguments: { text: key } }, undefined, { timeout: callTimeoutMs });
      return result.isError === true ? { ok: false, failure: errorText(result) } : { ok: true };
    }),
    governedNats: callPath('governedNats', async (key) => {
      const result = await toolplane.invoke(toolId, { text: key }, { idempotencyKey: key, timeoutMs: callTimeoutMs });
      return result.status === 'SUCCESS' ? { ok: true } : { ok: false, failure: `status ${result.status}` };
    }),
    governedMcpLegacy: callPath('governedMcpLegacy', async (key) => {
      const result = await legacyClient.callTool({ name: toolId, arguments: { text: key }, _meta: callMeta(key) }, undefined, { timeout: callTimeoutMs + 5_000 });
      return result.isError === true ? { ok: false, failure: errorText(result) } : { ok: true };
    }),
    // The v2 client adds the 2026-07-28 envelope (protocol version, client info and capabilities) to this `_meta`.
    governedMcpModern: callPath('governedMcpModern', async (key) => {
      const result = await modernClient.callTool({ name: toolId, arguments: { text: key }, _meta: callMeta(key) }, { timeout: callTimeoutMs + 5_000 });
      return result.isError === true ? { ok: false, failure: errorText(result) } : { ok: true };
    }),
  };
  // The provisioning is in force (NATS first), and each endpoint path gets a call through before it is measured.
  for (const name of governedPaths) await firstSuccess(async () => (await byName[name].call(new LatencyRecorder())) === 'ok', () => byName[name].lastFailure);

  const servers = await infra.serverPids();
  const pids = { endpoint: endpoint.pid, adapter: adapter.pid, 'nats-server': servers['nats-server'], ferretdb: servers['ferretdb'], bench: process.pid, tool: echo.pid };
  const measured = async (phase: () => Promise<PhaseResult>) => {
    const before = await sampleCpu(pids);
    const result = await phase();
    const after = await sampleCpu(pids);
    return { result, cpuMs: cpuMsPerCall(before, after, result.ok) };
  };

  const eraOf = (name: PathName): Era | undefined => eras.find((era) => endpointPaths[era] === name);
  /** Each endpoint client's HTTP requests per call over a phase, from the counts before it. */
  const requestsPerCall = (name: PathName, before: number, result: PhaseResult) => {
    const era = eraOf(name);
    return era === undefined ? undefined : (httpRequests[era].total - before) / Math.max(1, result.ok + result.failed);
  };

  const sustained = {} as Record<PathName, { result: PhaseResult; cpuMs: Record<string, number> }>;
  const profileWindow = { fromMs: 0, toMs: 0 };
  for (const name of paths) {
    const caller = byName[name];
    const era = eraOf(name);
    log(`${name}: warm-up ${warmupS} s, then ${sustainedS} s, ${inFlight} in flight`);
    await closedLoop(inFlight, warmupS, (recorder) => caller.call(recorder), new LatencyRecorder());
    const requestsBefore = era === undefined ? 0 : httpRequests[era].total;
    if (name === endpointPaths.modern) profileWindow.fromMs = performance.now() - endpointStartedAt;
    sustained[name] = await measured(() => closedLoop(inFlight, sustainedS, (recorder) => caller.call(recorder), new LatencyRecorder()));
    if (name === endpointPaths.modern) profileWindow.toMs = performance.now() - endpointStartedAt;
    log(`  ${describePhase(sustained[name].result)}`);
    log(`  CPU ms per call: ${JSON.stringify(sustained[name].cpuMs)}`);
    const perCall = requestsPerCall(name, requestsBefore, sustained[name].result);
    if (perCall !== undefined) log(`  HTTP requests to the endpoint per call: ${perCall.toFixed(3)}`);
    if (sustained[name].result.failed > 0) log(`  last failure: ${caller.lastFailure ?? 'none'}`);
  }

  // Half the closed-loop rate of the slower endpoint path: every path is then measured well below its saturation.
  const halfOf = eras.map((era) => endpointPaths[era]).reduce((slower, name) => (sustained[name].result.perSecond < sustained[slower].result.perSecond ? name : slower));
  const halfRate = Math.max(1, Math.round(sustained[halfOf].result.perSecond / 2));
  const half = {} as Record<PathName, { result: PhaseResult; cpuMs: Record<string, number> }>;
  log(`half load: ${halfS} s each at ${halfRate}/s (half the closed-loop rate of ${halfOf}, the slower endpoint path)`);
  for (const name of paths) {
    const caller = byName[name];
    half[name] = await measured(() => openLoop(halfRate, halfS, (recorder) => caller.call(recorder), new LatencyRecorder()));
    log(`  ${name} ${describePhase(half[name].result)}`);
    if (half[name].result.failed > 0) log(`  last failure: ${caller.lastFailure ?? 'none'}`);
  }
  for (const era of eras) log(`${endpointPaths[era]} HTTP requests over the run: ${httpRequests[era].describe()} (${byName[endpointPaths[era]].succeeded.size + byName[endpointPaths[era]].notSucceeded.length} calls)`);

  const notSucceeded = governedPaths.reduce((sum, name) => sum + byName[name].notSucceeded.length, 0);
  log(`draining: up to ${drainS} s for the outcome of ${notSucceeded} governed calls that did not succeed`);
  const drainUntil = Date.now() + drainS * 1000;
  // As the agent that made them: a call refused before it was recorded (NOT_FOUND) has no outcome either.
  const outcomeOf = (key: string): Promise<OutcomeLookup> =>
    toolplane.lookup(key).then(
      (reply) => (reply.result === undefined ? 'none' : 'outcome'),
      (error: unknown) => (hasErrorCode(error) && error.code === 'NOT_FOUND' ? 'none' : 'error'),
    );
  const lost = {} as Record<(typeof governedPaths)[number], Awaited<ReturnType<typeof countLost>>>;
  for (const name of governedPaths) lost[name] = await countLost(byName[name].notSucceeded, outcomeOf, drainUntil);
  const executions = await executionsByKey(countFile);
  const duplicated = Object.fromEntries(paths.map((name) => [name, duplicatedExecutions(executions, (key) => key.startsWith(`${prefixOf[name]}-`))])) as Record<PathName, number>;
  for (const name of paths) {
    const notExecuted = [...byName[name].succeeded].filter((key) => !executions.has(key)).length;
    if (notExecuted > 0) log(`  WARNING: ${notExecuted} successful ${name} calls have no execution in the count file`);
  }

  await endpoint.stop();
  const endpointProfile: CpuProfileSummary | undefined =
    cpuProfileDir === undefined ? undefined : await readCpuProfile(cpuProfileDir, profileWindow, `MCP endpoint CPU profile of the ${endpointPaths.modern} sustained phase`, log, env['BENCH_PROFILE_OUT']);

  const closed = (name: PathName) => {
    const { result, cpuMs } = sustained[name];
    const era = eraOf(name);
    return {
      ...(era === undefined ? {} : { protocolVersion: protocolVersions[era] }),
      callsPerSec: Math.round(result.perSecond),
      p50Ms: round(result.p50),
      p99Ms: round(result.p99),
      inFlight,
      failed: result.failed,
      ...(name === 'direct' ? {} : { lost: lost[name].lost, ...(lost[name].lookupErrors > 0 ? { lookupErrors: lost[name].lookupErrors } : {}) }),
      duplicated: duplicated[name],
      cpuMsPerCall: cpuMs,
    };
  };
  const open = (name: PathName) => ({ p50Ms: round(half[name].result.p50), p99Ms: round(half[name].result.p99), callsPerSec: Math.round(half[name].result.perSecond), failed: half[name].result.failed, cpuMsPerCall: half[name].cpuMs });
  const perEra = <T>(of: (era: Era) => T) => ({ legacy: of('legacy'), modern: of('modern') });
  const addedP50Ms = perEra((era) => round(half[endpointPaths[era]].result.p50 - half.governedNats.result.p50));
  const result = {
    direct: closed('direct'),
    governedNats: closed('governedNats'),
    governedMcpLegacy: closed('governedMcpLegacy'),
    governedMcpModern: closed('governedMcpModern'),
    halfLoad: {
      ratePerSec: halfRate,
      halfOf,
      seconds: halfS,
      direct: open('direct'),
      governedNats: open('governedNats'),
      governedMcpLegacy: open('governedMcpLegacy'),
      governedMcpModern: open('governedMcpModern'),
      addedP50Ms,
      natsOverDirectP50Ms: round(half.governedNats.result.p50 - half.direct.result.p50),
      // The direct path is one MCP exchange over HTTP (an SDK client, an SDK server, a trivial tool): what any MCP
      // hop costs on this machine. What the endpoint adds beyond that is its own work (token, names, governance).
      addedOverMcpHopP50Ms: perEra((era) => round(addedP50Ms[era] - half.direct.result.p50)),
      target: { addedP50Ms: targetAddedP50Ms, ...perEra((era) => ({ met: addedP50Ms[era] <= targetAddedP50Ms, byMs: round(targetAddedP50Ms - addedP50Ms[era]) })) },
    },
    rateLimit,
    machine: { cpus: availableParallelism(), node: process.version, loadAverage1m: round(loadavg()[0] ?? 0, 1) },
    ...(endpointProfile === undefined ? {} : { endpointProfile: Object.fromEntries(endpointProfile.buckets.slice(0, 8).map((bucket) => [bucket.name, round(bucket.share, 1)])) }),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  for (const stop of stopLater.reverse()) await stop().catch(() => undefined);
  await infra.stop();
  await rm(work, { recursive: true, force: true });
}
