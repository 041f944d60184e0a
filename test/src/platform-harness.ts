// The governed pipeline as an operator runs it: registry, approval, secret-broker, tool-adapter and audit-projector
// as separate processes over a NATS server of this file's own and a database of its own, with trusted keys for one
// tenant's agent and operator tokens, driven through the real CLI and the services' request/reply contracts.
//
// Why a private nats-server: the services' stream and durable consumer names are fixed (TOOLPLANE_INVOCATIONS,
// durable `tool-adapter`, …), so two platforms on one NATS would consume each other's requests. A database name
// separates the stores; only a server of its own separates the work queues.
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { z } from 'zod';
import {
  InvocationReply,
  InvocationRequest,
  LifecycleEvent,
  adapterCommandSchemas,
  adapterOperations,
  commandSubject,
  eventFilter,
  invocationReplySubject,
  invocationRequestMsgId,
  invocationRequestSubject,
  type AgentProfileInput,
  type CommandService,
  type InvocationResult,
  type LookupInvocationReply,
  type Scope,
  type TenantPolicyInput,
} from '@toolplane/contracts';
import { bearerHeaders, generateSigningKeyPair, issueToken, type SigningKeyPair } from '@toolplane/auth';
import { runCli, type CliIo } from '@toolplane/cli';
import { connectMessaging, publish, request, type Messaging } from '@toolplane/messaging';
import { generateKek, generateRecipientKeyPair } from '@toolplane/sealing';
import { freePort, uniqueName, type TestScope } from '@toolplane/testing';
import { sandboxScratchDir, serverDataFiles } from '@toolplane/mcp/testing';
import { spawnService, waitForStatus, type ServiceName, type ServiceProcess } from './service-process.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');

/** The five services of the governed pipeline (the flow runner is not needed by MCP tools). */
export const pipelineServices = ['registry', 'secret-broker', 'approval', 'audit-projector', 'tool-adapter'] as const satisfies readonly ServiceName[];
export type PipelineService = (typeof pipelineServices)[number];
/** The pipeline and FlowRunner, which flow-backed tools need besides it. */
export type PlatformService = PipelineService | 'flow-runner';

/** The agent the suite's context tokens name, and the principal it acts for. */
export const agent = { agentId: 'agent-e2e', agentRevision: '3', principal: 'user:alice@e2e.example' } as const;
/** The human who decides approvals and administers policy, servers and connections (never the requesting principal). */
export const operator = { principal: 'user:bob@e2e.example', roles: ['approver', 'policy-admin'] } as const;

/** What one run of the CLI printed. */
export interface CliRun {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** Lifecycle events of the platform's scope, recorded from the moment `recordEvents` was called. */
export interface EventRecorder {
  readonly events: LifecycleEvent[];
  readonly stop: () => void;
}

/** A running platform and the ways a test talks to it. */
export interface Platform {
  readonly scope: Scope;
  readonly messaging: Messaging;
  /** TOOLPLANE_TRUSTED_KEYS of the platform's services, for a process started beside them (an endpoint, the console). */
  readonly trustedKeys: string;
  /** The public key receipts verify with, by key id. */
  readonly receiptKeys: ReadonlyMap<string, KeyObject>;
  readonly receiptKeyId: string;
  /** A file the counting fixtures append to, one per name. */
  readonly countFile: (name: string) => string;
  /** How many lines `label` the count file `name` holds. */
  readonly executions: (name: string, label: string) => Promise<number>;
  readonly agentToken: () => Promise<string>;
  readonly operatorToken: (who?: { principal: string; roles: readonly string[] }) => Promise<string>;
  /** Runs `toolplane …` in-process against the platform, as the operator. */
  readonly toolplane: (...argv: string[]) => Promise<CliRun>;
  /** Like `toolplane --json …`, failing unless it exits 0; the parsed document. */
  readonly toolplaneJson: <T>(...argv: string[]) => Promise<T>;
  /** A request/reply command to a service of the scope, with the operator token in the Authorization header. */
  readonly command: <Req extends z.ZodType, Res extends z.ZodType>(
    service: CommandService,
    operation: string,
    schemas: { readonly request: Req; readonly reply: Res },
    body: z.input<Req>,
    token?: string,
  ) => Promise<z.output<Res>>;
  /** Publishes an invocation request as an agent runtime does and awaits the reply on its inbox. */
  readonly invoke: (body: InvocationBody, options?: { msgId?: string; timeoutMs?: number }) => Promise<InvocationReply>;
  /** Looks the agent's call up by idempotency key (`adapter.lookupInvocation`), as a runtime re-attaching to it does. */
  readonly lookup: (idempotencyKey: string) => Promise<LookupInvocationReply>;
  readonly recordEvents: () => Promise<EventRecorder>;
  readonly putAgentProfile: (profile: AgentProfileInput) => Promise<void>;
  readonly putTenantPolicy: (policy: TenantPolicyInput) => Promise<void>;
  /** A service's process (its first replica unless told). */
  readonly service: (name: PlatformService, replica?: number) => ServiceProcess;
  /** SIGKILLs a service process (its first replica unless told) and waits for it to be gone. */
  readonly kill: (name: PlatformService, replica?: number) => Promise<void>;
  /**
   * Starts a service process again (after kill, without its first start's settings) and waits until it is ready, or
   * with `awaitReady: false` until it is alive (/healthz), for a service that is expected not to be ready.
   */
  readonly restart: (name: PlatformService, replica?: number, env?: Record<string, string>, options?: { readonly awaitReady?: boolean }) => Promise<void>;
  /** Where a service process (its first replica unless told) serves /healthz, /readyz and /metrics, e.g. http://127.0.0.1:PORT. */
  readonly httpUrl: (name: PlatformService, replica?: number) => string;
  /** The last lines each service logged, for a failure message. */
  readonly logs: (name: PlatformService, lines?: number) => string;
  readonly stop: () => Promise<void>;
}

/** An invocation request without the parts the harness fills in (context token, correlation id, reply inbox). */
/** What an e2e test's tenant policy changes from {@link e2eTenantPolicy}'s. */
export interface E2ePolicyOptions {
  /** Whether WRITE calls wait for an approval too (tests that count a WRITE tool's executions leave it ungated). */
  readonly gateWrites: boolean;
  readonly rateLimits?: TenantPolicyInput['rateLimits'];
  readonly sensitiveArgumentFields?: readonly string[];
}

/**
 * The tenant policy the e2e tests install: nothing denied, every class above WRITE waits for an approver (role
 * `approver`), WRITE too when `gateWrites`, no direct principal calls.
 */
export function e2eTenantPolicy(options: E2ePolicyOptions): TenantPolicyInput {
  const gatedAboveWrite = ['DESTRUCTIVE', 'EXTERNAL_COMMUNICATION', 'CODE_EXECUTION', 'PRIVILEGED'] as const;
  return {
    deniedSideEffectClasses: [],
    approvalRequiredClasses: options.gateWrites ? ['WRITE', ...gatedAboveWrite] : [...gatedAboveWrite],
    approvers: { roles: ['approver'], principals: [] },
    approvalTtlMs: 600_000,
    rateLimits: [...(options.rateLimits ?? [])],
    killSwitches: [],
    environments: [],
    classRaises: [],
    commands: { block: [], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' },
    allowDirectPrincipalCalls: false,
    sensitiveArgumentFields: [...(options.sensitiveArgumentFields ?? [])],
  };
}

export type InvocationBody = Omit<InvocationRequest, 'contextToken' | 'correlationId' | 'replyInbox'> & {
  contextToken?: string;
  correlationId?: string;
  replyInbox?: string;
};


/** A call's ending as the tests compare it: its status, and its failure's code and message. */
export function endingOf(result: InvocationResult) {
  return { status: result.status, code: result.receipt.failure?.code, message: result.receipt.failure?.message };
}

/** The ending of a call the adapter answered with a result; a refusal without one fails the test, naming it. */
export function endingOfReply(reply: InvocationReply) {
  if (!reply.ok) throw new Error(`the call was refused: ${reply.error.code}: ${reply.error.message}`);
  return endingOf(reply.data);
}
/** Polls `probe` until it yields a value (not undefined, null or false) or the deadline passes. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface PrivateNats {
  readonly url: string;
  readonly child: ChildProcess;
  readonly stop: () => Promise<void>;
}

/**
 * Starts a nats-server of its own with JetStream on free loopback ports, its data under `dir` (the services' stream and
 * consumer names are fixed: see above). A free port can be taken by another process between being found and being
 * bound, so a server that exits at start is started again on fresh ports, twice at most; the last failure names the
 * exit and what the server printed.
 */
export async function startPrivateNats(dir: string): Promise<PrivateNats> {
  const binary = path.join(repoRoot, '.local/bin/nats-server');
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run \`npm run infra:install\``);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startNatsOnce(binary, dir);
    } catch (error) {
      if (!(error instanceof NatsExitedAtStart) || attempt === 3) throw error;
    }
  }
}

class NatsExitedAtStart extends Error {}

async function startNatsOnce(binary: string, dir: string): Promise<PrivateNats> {
  const [port, monitorPort] = [await freePort(), await freePort()];
  const child = spawn(binary, ['--jetstream', '--store_dir', path.join(dir, 'nats'), '--addr', '127.0.0.1', '--port', String(port), '--http_port', String(monitorPort), '--server_name', `e2e-${port}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // 'close' comes after the process's stderr is drained ('exit' can come before it), so a failure names what it printed.
  let ending: string | undefined;
  const exited = new Promise<void>((resolve) => child.on('close', (code, signal) => ((ending = signal ?? `code ${code}`), resolve())));
  await waitFor(
    'the private nats-server',
    async () => {
      if (ending !== undefined) throw new NatsExitedAtStart(`nats-server exited at start (${ending}) on ports ${port}/${monitorPort}:\n${stderr}`);
      try {
        return (await fetch(`http://127.0.0.1:${monitorPort}/healthz?js-enabled-only=true`)).status === 200;
      } catch {
        return false;
      }
    },
    15_000,
  );
  return {
    url: `nats://127.0.0.1:${port}`,
    child,
    stop: async () => {
      if (ending === undefined) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** How a platform is started. */
export interface PlatformOptions {
  /** Processes of every service (default 1): replicas share the streams, consumers and database as in production. */
  readonly replicas?: number;
  /** Processes of FlowRunner (default none: MCP tools do not need it). */
  readonly flowRunners?: number;
  /** Settings of a service's first start only (failpoints, for instance): a restart runs without them. */
  readonly firstStartEnv?: Partial<Record<PlatformService, Record<string, string>>>;
  /** A NATS the caller started and stops (a cluster, say) instead of a private nats-server: the services' NATS_URL. */
  readonly natsUrl?: string;
  /** Settings of every service process, at every start (NATS_STREAM_REPLICAS on a cluster, for instance). */
  readonly env?: Record<string, string>;
}

/** Starts the five pipeline services for one fresh tenant and workspace and waits until each is ready. */
export async function startPlatform(infra: TestScope, label: string, options: PlatformOptions = {}): Promise<Platform> {
  const replicas = options.replicas ?? 1;
  // Servers count their executions here, from inside their sandboxes.
  const dir = await sandboxScratchDir(`e2e-${label}-`);
  const nats = options.natsUrl === undefined ? await startPrivateNats(dir) : { url: options.natsUrl, stop: () => Promise.resolve() };
  const scope: Scope = { tenant: uniqueName(`t_${label}`), workspace: 'main' };
  const agentKey: SigningKeyPair = await generateSigningKeyPair(`${label}-agents-1`);
  const operatorKey: SigningKeyPair = await generateSigningKeyPair(`${label}-operators-1`);
  const receipt = generateKeyPairSync('ed25519');
  const receiptKeyId = `${label}-receipts-1`;
  const recipient = generateRecipientKeyPair();
  // FlowRunner signs its steps' context tokens with a key of its own, which the pipeline trusts like an agent runtime's.
  const flowRunnerKid = `${label}-flow-runner-1`;
  const flowRunnerJwk = { ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: flowRunnerKid, alg: 'EdDSA' };
  const { d: _private, ...flowRunnerPublicJwk } = flowRunnerJwk;

  const trustedKeys = JSON.stringify({ [scope.tenant]: [agentKey.publicJwk, operatorKey.publicJwk, { ...flowRunnerPublicJwk, use: 'sig' }] });
  const common: Record<string, string> = {
    NATS_URL: nats.url,
    MONGODB_URL: infra.mongoUrl,
    MONGODB_DATABASE: infra.dbName,
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'info',
    SHUTDOWN_TIMEOUT_MS: '5000',
    TOOLPLANE_TRUSTED_KEYS: trustedKeys,
    ...options.env,
  };
  const own: Record<PlatformService, Record<string, string>> = {
    registry: {},
    'flow-runner': { FLOW_RUNNER_SIGNING_KEY: JSON.stringify(flowRunnerJwk) },
    'secret-broker': {
      SECRET_BROKER_KEKS: JSON.stringify({ current: 'k1', keys: { k1: generateKek() } }),
      SECRET_BROKER_RECIPIENTS: JSON.stringify({ 'tool-adapter': recipient.publicKey }),
    },
    // Expiry is swept, not timed: a short sweep interval makes an expired approval end quickly.
    approval: { APPROVAL_SWEEP_INTERVAL_MS: '300' },
    'audit-projector': {},
    'tool-adapter': {
      ADAPTER_SIGNING_KEY: receipt.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
      ADAPTER_SIGNING_KEY_ID: receiptKeyId,
      // A killed adapter's claim on an executing call lapses within this (it is renewed while the call runs), well
      // before the request's 30 s ack wait ends: the redelivery then starts the next attempt at once.
      ADAPTER_PROCESSING_LEASE_MS: '5000',
      TOOL_ADAPTER_SECRET_KEY: recipient.privateKey,
    },
  };

  // Each service's processes; the first is the one `service`, `kill`, `restart` and `logs` name.
  const running = new Map<PlatformService, ServiceProcess[]>();
  const ports = new Map<string, number>();
  const launch = async (name: PlatformService, replica = 0, extraEnv: Record<string, string> = {}, awaitReady = true): Promise<void> => {
    const port = await freePort();
    const service = spawnService(name, { ...common, ...own[name], ...extraEnv, HTTP_PORT: String(port), INSTANCE_ID: `${name}-${replica}-${randomUUID().slice(0, 6)}` });
    const processes = running.get(name) ?? [];
    processes[replica] = service;
    running.set(name, processes);
    ports.set(`${name}/${replica}`, port);
    await waitForStatus(`http://127.0.0.1:${port}/${awaitReady ? 'readyz' : 'healthz'}`, service, 90_000);
  };
  const replicaIndexes = Array.from({ length: replicas }, (_, i) => i);

  const messaging = await connectMessaging({ url: nats.url, name: `e2e-${label}` });

  const stopAll = async () => {
    await Promise.all(
      [...running.values()].flat().map(async (service) => {
        if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGTERM');
        await service.exited;
      }),
    );
    await messaging.drain().catch(() => undefined);
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
  };

  try {
    // The registry first: it creates the descriptor bucket the adapter watches, and the streams everyone shares.
    await launch('registry');
    await Promise.all(replicaIndexes.slice(1).map((replica) => launch('registry', replica)));
    const firstEnv = (name: PlatformService) => options.firstStartEnv?.[name] ?? {};
    await Promise.all(pipelineServices.filter((name) => name !== 'registry').flatMap((name) => replicaIndexes.map((replica) => launch(name, replica, firstEnv(name)))));
    await Promise.all(Array.from({ length: options.flowRunners ?? 0 }, (_, replica) => launch('flow-runner', replica, firstEnv('flow-runner'))));
  } catch (error) {
    await stopAll();
    throw error;
  }

  const agentToken = () => issueToken({ kind: 'agent', ...scope, ...agent }, agentKey.privateKey, { kid: agentKey.kid, expiresIn: '10m' });
  const operatorToken = (who: { principal: string; roles: readonly string[] } = operator) =>
    issueToken({ kind: 'human', tenant: scope.tenant, workspaces: [scope.workspace], principal: who.principal, roles: [...who.roles] }, operatorKey.privateKey, {
      kid: operatorKey.kid,
      expiresIn: '10m',
    });

  const toolplane = async (...argv: string[]): Promise<CliRun> => {
    let out = '';
    let err = '';
    const io: CliIo = {
      stdout: (text) => void (out += text),
      stderr: (text) => void (err += text),
      readStdin: () => Promise.resolve(''),
      env: { TOOLPLANE_TOKEN: await operatorToken() },
    };
    const code = await runCli(['--nats', nats.url, '--tenant', scope.tenant, '--workspace', scope.workspace, '--timeout', '30000', ...argv], io);
    return { code, out, err };
  };

  const command: Platform['command'] = async (service, operation, schemas, body, token) =>
    request(messaging, {
      subject: commandSubject(scope, service, operation),
      requestSchema: schemas.request,
      replySchema: schemas.reply,
      body,
      timeoutMs: 30_000,
      headers: bearerHeaders(token ?? (await operatorToken())),
    });

  const invoke: Platform['invoke'] = async (body, options = {}) => {
    const replyInbox = body.replyInbox ?? `inbox_${randomUUID().replaceAll('-', '')}`;
    const message = InvocationRequest.parse({ correlationId: 'e2e-run', ...body, contextToken: body.contextToken ?? (await agentToken()), replyInbox });
    const subscription = messaging.connection.subscribe(invocationReplySubject(scope, replyInbox), { max: 1, timeout: options.timeoutMs ?? 60_000 });
    await messaging.connection.flush();
    await publish(messaging, { subject: invocationRequestSubject(scope), schema: InvocationRequest, message, msgId: options.msgId ?? invocationRequestMsgId(scope, message) });
    for await (const reply of subscription) return InvocationReply.parse(JSON.parse(reply.string()));
    throw new Error(`no reply to ${body.toolId} (${body.idempotencyKey ?? 'no key'})`);
  };

  const lookup: Platform['lookup'] = async (idempotencyKey) =>
    request(messaging, {
      subject: commandSubject(scope, 'adapter', adapterOperations.lookupInvocation),
      requestSchema: adapterCommandSchemas.lookupInvocation.request,
      replySchema: adapterCommandSchemas.lookupInvocation.reply,
      body: { contextToken: await agentToken(), idempotencyKey },
      timeoutMs: 10_000,
    });

  const recordEvents = async (): Promise<EventRecorder> => {
    const events: LifecycleEvent[] = [];
    const subscription = messaging.connection.subscribe(eventFilter(scope));
    void (async () => {
      for await (const message of subscription) events.push(LifecycleEvent.parse(JSON.parse(message.string())));
    })();
    await messaging.connection.flush();
    return { events, stop: () => subscription.unsubscribe() };
  };

  // Policy documents are written by an operator holding the policy-admin role, through the adapter's commands.
  const putAgentProfile = async (profile: AgentProfileInput): Promise<void> => {
    await command('adapter', adapterOperations.putAgentProfile, adapterCommandSchemas.putAgentProfile, { profile });
  };
  const putTenantPolicy = async (policy: TenantPolicyInput): Promise<void> => {
    await command('adapter', adapterOperations.putTenantPolicy, adapterCommandSchemas.putTenantPolicy, { policy });
  };

  const serviceOf = (name: PlatformService, replica = 0): ServiceProcess => {
    const service = running.get(name)?.[replica];
    if (service === undefined) throw new Error(`${name} ${replica} is not running`);
    return service;
  };

  return {
    scope,
    messaging,
    trustedKeys,
    receiptKeys: new Map([[receiptKeyId, receipt.publicKey]]),
    receiptKeyId,
    countFile: (name) => path.join(dir, `${name}.count`),
    executions: async (name, label) => {
      try {
        return (await readFile(path.join(dir, `${name}.count`), 'utf8')).split('\n').filter((line) => line === label).length;
      } catch {
        return 0;
      }
    },
    agentToken,
    operatorToken,
    toolplane,
    toolplaneJson: async <T>(...argv: string[]): Promise<T> => {
      const run = await toolplane('--json', ...argv);
      if (run.code !== 0) throw new Error(`toolplane ${argv.join(' ')} exited ${run.code}: ${run.err}${run.out}`);
      return JSON.parse(run.out) as T;
    },
    command,
    invoke,
    lookup,
    recordEvents,
    putAgentProfile,
    putTenantPolicy,
    service: serviceOf,
    kill: async (name, replica = 0) => {
      const service = serviceOf(name, replica);
      service.child.kill('SIGKILL');
      await service.exited;
    },
    restart: (name, replica = 0, env = {}, restartOptions = {}) => launch(name, replica, env, restartOptions.awaitReady ?? true),
    httpUrl: (name, replica = 0) => {
      const port = ports.get(`${name}/${replica}`);
      if (port === undefined) throw new Error(`${name} ${replica} was never started`);
      return `http://127.0.0.1:${port}`;
    },
    logs: (name, lines = 40) =>
      (running.get(name) ?? [])
        .map((service, replica) => `[${name} ${replica}]\n${service.stderr()}${service.stdout().trimEnd().split('\n').slice(-lines).join('\n')}`)
        .join('\n'),
    stop: stopAll,
  };
}

/** One tool of a server to bind, with `tools bind` flags beyond the server and tool name. */
export interface ToolBinding {
  readonly tool: string;
  readonly flags: readonly string[];
}

/**
 * Registers a stdio MCP server through the registry (`servers register`, `servers discover`, `tools bind`, as an
 * operator would) and returns its id. `env` are plain settings of the server process; the directories of the files
 * its COUNT_FILE, STATE_FILE and MEMORY_FILE_PATH name are the writable paths of its sandbox (made with sandboxScratchDir).
 * `registerFlags` are further `servers register` flags (e.g. `--policy BUNDLE`).
 */
export async function registerServer(
  platform: Platform,
  name: string,
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
  bindings: readonly ToolBinding[],
  registerFlags: readonly string[] = [],
): Promise<string> {
  const envFlags = Object.entries(env).flatMap(([key, value]) => ['--env', `${key}=${value}`]);
  const writableFlags = [...new Set(serverDataFiles(env).map((file) => path.dirname(file)))].flatMap((dir) => ['--sandbox-writable', dir]);
  const registered = await platform.toolplaneJson<{ server: { serverId: string; state: string } }>(
    'servers',
    'register',
    '--name',
    name,
    '--stdio',
    argv.map((word) => `"${word}"`).join(' '),
    ...envFlags,
    ...writableFlags,
    ...registerFlags,
  );
  const serverId = registered.server.serverId;
  const discovered = await platform.toolplaneJson<{ server: { state: string } }>('servers', 'discover', serverId);
  if (discovered.server.state !== 'Verified') throw new Error(`${name} was discovered into ${discovered.server.state}`);
  for (const binding of bindings) {
    const bound = await platform.toolplaneJson<{ descriptor: { active: boolean; healthy: boolean } }>('tools', 'bind', serverId, binding.tool, ...binding.flags);
    if (!bound.descriptor.active) throw new Error(`${name}.${binding.tool} was bound inactive`);
  }
  return serverId;
}

/** Waits until the adapter's read model knows every one of `toolIds` (tools, resources, resource templates or prompts; offered to the agent or hidden from it). */
export async function waitForTools(platform: Platform, toolIds: readonly string[]): Promise<void> {
  await waitFor(
    `the adapter to know ${toolIds.join(', ')}`,
    async () => {
      const set = await request(platform.messaging, {
        subject: commandSubject(platform.scope, 'adapter', adapterOperations.effectiveTools),
        requestSchema: adapterCommandSchemas.effectiveTools.request,
        replySchema: adapterCommandSchemas.effectiveTools.reply,
        body: { contextToken: await platform.agentToken(), explain: true },
        timeoutMs: 10_000,
      });
      const known = new Set([
        ...set.tools.map((tool) => tool.toolId),
        ...(set.resources ?? []).map((resource) => resource.resourceId),
        ...(set.resourceTemplates ?? []).map((template) => template.resourceId),
        ...(set.prompts ?? []).map((prompt) => prompt.promptId),
        ...(set.hidden ?? []).map((tool) => tool.toolId),
      ]);
      return toolIds.every((toolId) => known.has(toolId));
    },
    60_000,
  );
}
