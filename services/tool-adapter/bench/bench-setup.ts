// What the governed-invocation benchmark stands up: private NATS and FerretDB (or the running ones), the tool
// adapter as a child process, and what a call needs: the descriptor in the registry's KV read model, a stand-in
// registry `getServer` responder, the agent profile and tenant policy (written through the adapter's own commands, as
// an operator would), and signed context and operator tokens.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { POLICY_ADMIN_ROLE, ToolDescriptor, type McpServer, type RateLimitRule, type Scope } from '@toolplane/contracts';
import { generateSigningKeyPair } from '@toolplane/auth';
import { openKv, type Messaging, type ServeHandle } from '@toolplane/messaging';
import { freePort } from '@toolplane/testing';
import { defaultTenantPolicy, descriptorBucket } from '../src/mod.js';
import {
  agentContextToken,
  operatorClaims,
  operatorToken,
  putDescriptor,
  receiptSigningKey,
  serveStandInRegistry,
  stdioServerDocument,
  testDescriptor,
} from '../src/testing.js';
import { putAgentProfile, putTenantPolicy } from './adapter-commands.js';

const run = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, '../../..');

/** The fixture MCP server of the benchmark (stdio, `echo`, counts executions per text in $COUNT_FILE). */
export const echoServerPath = path.join(import.meta.dirname, 'echo-server.mjs');

/** NATS and a MongoDB-protocol server for the run, with their metrics endpoints when known. */
export interface BenchInfra {
  readonly natsUrl: string;
  readonly mongoUrl: string;
  /** FerretDB's Prometheus endpoint (per-command request counters), when the harness started it. */
  readonly ferretMetricsUrl: string | undefined;
  /** nats-server's monitoring endpoint, when the harness started it. */
  readonly natsMonitorUrl: string | undefined;
  /** The server processes' ids (for their CPU time), when the harness started them. */
  readonly serverPids: () => Promise<Record<string, number>>;
  readonly stop: () => Promise<void>;
}

/** The running servers (NATS_URL and MONGODB_URL) when `useRunning`, otherwise fresh ones from infra/local on free ports. */
export async function benchInfra(env: NodeJS.ProcessEnv, useRunning: boolean): Promise<BenchInfra> {
  if (useRunning) {
    const natsUrl = env['NATS_URL'];
    const mongoUrl = env['MONGODB_URL'];
    if (!natsUrl || !mongoUrl) throw new Error('--use-running needs NATS_URL and MONGODB_URL');
    return { natsUrl, mongoUrl, ferretMetricsUrl: env['BENCH_FERRETDB_METRICS_URL'], natsMonitorUrl: env['BENCH_NATS_MONITOR_URL'], serverPids: () => Promise.resolve({}), stop: async () => {} };
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'toolplane-bench-'));
  const [natsPort, monitorPort, mongoPort, debugPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const scriptEnv = {
    ...env,
    TOOLPLANE_LOCAL_DIR: dir,
    NATS_PORT: String(natsPort),
    NATS_MONITOR_PORT: String(monitorPort),
    MONGO_PORT: String(mongoPort),
    FERRETDB_DEBUG_PORT: String(debugPort),
  };
  const script = (name: string) => path.join(repoRoot, 'infra/local', name);
  const stop = async () => {
    await run('bash', [script('stop.sh')], { env: scriptEnv });
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await run('bash', [script('start.sh')], { env: scriptEnv });
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    natsUrl: `nats://127.0.0.1:${natsPort}`,
    mongoUrl: `mongodb://127.0.0.1:${mongoPort}`,
    ferretMetricsUrl: `http://127.0.0.1:${debugPort}/debug/metrics`,
    natsMonitorUrl: `http://127.0.0.1:${monitorPort}`,
    serverPids: async () => {
      const pids: Record<string, number> = {};
      for (const name of ['nats-server', 'ferretdb']) {
        const pid = Number((await readFile(path.join(dir, 'run', `${name}.pid`), 'utf8').catch(() => '')).trim());
        if (pid > 0) pids[name] = pid;
      }
      return pids;
    },
    stop,
  };
}

/** A tool adapter running in a child process. */
export interface AdapterProcess {
  readonly pid: number;
  /** SIGTERM, then waits for the exit (a CPU profile is written then). */
  stop(): Promise<void>;
}

/** The keys the adapter needs: the tenant's token key it trusts and its receipt signing key; tokens signed with the former. */
export interface BenchKeys {
  readonly trustedKeys: string;
  readonly signingKey: string;
  readonly contextToken: (scope: Scope, agentId: string) => Promise<string>;
  /** An operator token of the scope's workspace with the policy-admin role (writes profiles and policies). */
  readonly adminToken: (scope: Scope) => Promise<string>;
}

/** A fresh agent token key pair and receipt signing key for `tenant`. */
export async function benchKeys(tenant: string): Promise<BenchKeys> {
  const agentKey = await generateSigningKeyPair('bench-agent-1');
  return {
    trustedKeys: JSON.stringify({ [tenant]: [agentKey.publicJwk] }),
    signingKey: receiptSigningKey().setting,
    // One token for the whole run, as an agent runtime holds one per run.
    contextToken: (scope, agentId) => agentContextToken(agentKey, scope, { agentId, principal: 'user:bench@bench.example', agentRevision: '1' }, '2h'),
    adminToken: (scope) => operatorToken(agentKey, operatorClaims(scope, [POLICY_ADMIN_ROLE], 'user:bench-admin@bench.example'), '2h'),
  };
}

/**
 * Starts the built adapter (`dist/main.js`, run `tsc -b` first) with `env` and waits until it answers 200 on
 * /readyz. A separate process, so its latency includes a real hop and its CPU profile holds only the adapter.
 */
export async function startAdapterProcess(env: Record<string, string>, options: { readonly cpuProfileDir?: string | undefined } = {}): Promise<AdapterProcess> {
  const port = await freePort();
  const flags = options.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`];
  // The adapter's log lines go to this process's stderr: stdout carries only the result line.
  const child = spawn(process.execPath, [...flags, path.join(repoRoot, 'services/tool-adapter/dist/main.js')], {
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env, HTTP_HOST: '127.0.0.1', HTTP_PORT: String(port) },
    stdio: ['ignore', 2, 2],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error('the adapter process did not start');
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the adapter exited with code ${child.exitCode} before it was ready`);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((response) => response.status === 200, () => false);
    if (ready) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('the adapter was not ready within 60 s');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { pid, stop: () => stopChild(child, exited) };
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

/** The benchmark's tool, its server and the agent allowed to call it, in one scope. */
export interface BenchTool {
  readonly scope: Scope;
  readonly agentId: string;
  readonly toolId: string;
  readonly serverId: string;
}

/**
 * Writes what a governed call of `tool` needs through the adapter's commands (so the adapter must be running): the
 * agent's profile and the tenant's policy (the default policy, which lets READ calls through, plus `rateLimit`), and
 * the descriptor in the registry's KV read model.
 */
export async function provisionTool(messaging: Messaging, tool: BenchTool, adminToken: string, rateLimit: RateLimitRule): Promise<ToolDescriptor> {
  const { scope, agentId, toolId, serverId } = tool;
  await putAgentProfile(messaging, scope, { agentId, allowedTools: ['bench.*'], deniedTools: [], maxRiskClass: 'LOW', permissions: [] }, adminToken);
  const { tenant: _tenant, updatedBy: _by, updatedAt: _at, version: _version, ...policy } = defaultTenantPolicy(scope.tenant, new Date().toISOString());
  await putTenantPolicy(messaging, scope, { ...policy, rateLimits: [rateLimit] }, adminToken);
  const descriptor = testDescriptor(
    { scope, toolId, providerToolName: 'echo', mcpServerId: serverId, inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
    { description: 'The benchmark echo.', definitionHash: 'b'.repeat(64), retryPolicy: { maxAttempts: 2, initialBackoffMs: 50, maxBackoffMs: 200 } },
  );
  return putDescriptor(await openKv(messaging, descriptorBucket, ToolDescriptor), descriptor);
}

/** The MCP server document of the echo fixture, counting into `countFile`. */
export function echoServerDocument(tool: BenchTool, countFile: string): McpServer {
  return stdioServerDocument({ serverId: tool.serverId, scope: tool.scope, name: 'bench-echo' }, { args: [echoServerPath], env: [{ name: 'COUNT_FILE', value: countFile }] });
}

/** Stands in for the registry's `getServer` (the adapter caches the answer for 30 s). */
export function serveRegistryStandIn(messaging: Messaging, server: McpServer): Promise<ServeHandle> {
  return serveStandInRegistry(messaging, {
    queue: 'bench-registry',
    serverFor: (serverId) => {
      if (serverId !== server.serverId) throw new Error(`unknown server ${serverId}`);
      return server;
    },
  });
}
