// The harness of the adapter's fault tests: private nats-server and FerretDB processes on free loopback ports,
// the adapter's composition root (`src/main.ts`, run from source like test/src/service-process.ts runs every
// service, so it is never a stale build) as a real child process, and around it what the in-process integration test
// has: descriptors in the registry's KV read model, a stand-in for the registry's getServer responder (fixture MCP
// servers counting their executions in a file per workspace), signed context tokens, replies and stored events.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  InvocationReply,
  InvocationRequest,
  LifecycleEvent,
  ToolDescriptor,
  invocationReplySubject,
  invocationRequestMsgId,
  invocationRequestSubject,
  streams,
  type Scope,
} from '@toolplane/contracts';
import { generateSigningKeyPair, type SigningKeyPair } from '@toolplane/auth';
import { FixtureServer, sandboxScratchDir } from '@toolplane/mcp/testing';
import { connectMessaging, openKv, publish, type Messaging, type ServeHandle, type TypedKv } from '@toolplane/messaging';
import { connectStore, type Store } from '@toolplane/store';
import { freePort } from '@toolplane/testing';
import { descriptorBucket, type StoredInvocation } from '../src/mod.js';
import {
  agentContextToken,
  agentProfileDocument,
  countFileOf,
  countedExecutions,
  fixtureServerDocument,
  insertAgentProfile,
  putDescriptor,
  receiptSigningKey,
  serveStandInRegistry,
  storedInvocation,
  testDescriptor,
  waitFor,
} from '../src/testing.js';

export { waitFor };

const repoRoot = path.resolve(import.meta.dirname, '../../..');
const binDir = path.join(repoRoot, '.local/bin');
const adapterMain = path.join(repoRoot, 'services/tool-adapter/src/main.ts');

/** The tenant, agent and principal every harness works with. */
export const harnessTenant = 'acme';
export const harnessAgent = 'agent-support';

function binary(name: 'nats-server' | 'ferretdb'): string {
  const file = path.join(binDir, name);
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run infra:install\``);
  return file;
}

/** A child process with its collected output and exit. */
export interface ChildRun {
  readonly child: ChildProcess;
  readonly pid: number;
  /** stdout and stderr so far. */
  readonly output: () => string;
  /** Resolves with the exit code, or the signal's name when a signal ended it. */
  readonly exited: Promise<number | string>;
  readonly running: () => boolean;
}

function run(command: string, args: readonly string[], env: Record<string, string>, options: { readonly detached?: boolean } = {}): ChildRun {
  const child = spawn(command, args, { cwd: repoRoot, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: options.detached ?? false });
  if (child.pid === undefined) throw new Error(`${command} did not start`);
  let output = '';
  let running = true;
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => {
      running = false;
      resolve(signal ?? code ?? -1);
    }),
  );
  return { child, pid: child.pid, output: () => output, exited, running: () => running };
}

async function stopChild(process_: ChildRun, graceMs = 5_000): Promise<number | string> {
  if (!process_.running()) return process_.exited;
  process_.child.kill('SIGTERM');
  const timer = setTimeout(() => process_.child.kill('SIGKILL'), graceMs);
  const result = await process_.exited;
  clearTimeout(timer);
  return result;
}

async function answers200(url: string): Promise<boolean> {
  try {
    return (await fetch(url)).status === 200;
  } catch {
    return false;
  }
}

/** A private nats-server with JetStream (file storage in a temporary directory). */
export interface NatsServer {
  readonly url: string;
  readonly port: number;
  /** The running process (changes on restart). */
  current(): ChildRun;
  /** Stops it (SIGTERM), waits `downMs`, and starts it again on the same port and store once it answers again. */
  restart(options: { readonly downMs: number }): Promise<void>;
  stop(): Promise<void>;
}

/** Starts `.local/bin/nats-server` on free loopback ports, optionally with a configuration file, and waits until JetStream is up. */
export async function startNatsServer(options: { readonly configFile?: string; readonly env?: Record<string, string> } = {}): Promise<NatsServer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'adapter-nats-'));
  const [port, monitorPort] = [await freePort(), await freePort()];
  const args = ['--jetstream', '--store_dir', dir, '--addr', '127.0.0.1', '--port', String(port), '--http_port', String(monitorPort), '--server_name', `fault-${port}`];
  if (options.configFile !== undefined) args.push('--config', options.configFile);
  let server: ChildRun;
  const start = async () => {
    const started = run(binary('nats-server'), args, options.env ?? {});
    server = started;
    await waitFor(`nats-server on ${port}`, async () => {
      if (!started.running()) throw new Error(`nats-server exited: ${started.output().slice(-2000)}`);
      return answers200(`http://127.0.0.1:${monitorPort}/healthz?js-enabled-only=true`);
    });
  };
  const stop = async () => {
    await stopChild(server);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await start();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    current: () => server,
    restart: async ({ downMs }) => {
      await stopChild(server);
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await start();
    },
    stop,
  };
}

/** The adapter as a real process. */
export interface AdapterProcess extends ChildRun {
  readonly httpPort: number;
  /** SIGTERM, and the exit code or signal. */
  stop(): Promise<number | string>;
}

/** What a harness is built on. */
export interface HarnessOptions {
  readonly natsUrl: string;
  readonly mongoUrl: string;
  readonly dbName: string;
  /** Extra settings of every adapter process (e.g. short leases). */
  readonly adapterEnv?: Record<string, string>;
  /** The tenants whose context tokens the adapter trusts (default: acme). */
  readonly tenants?: readonly string[];
}

/** Where a bound tool runs: the counting-echo fixture (count_calls, echo) or the hostile one (slow). */
export type FixtureKind = 'counting' | 'hostile';

/** A request on its way, with the reply the runtime will get. */
export interface SentRequest {
  readonly request: InvocationRequest;
  /** The first reply on the request's inbox. */
  readonly reply: (timeoutMs?: number) => Promise<InvocationReply>;
}

/** The world around adapter processes: NATS and MongoDB clients, the registry stand-in, tokens, fixtures. */
export class AdapterHarness {
  readonly messaging: Messaging;
  readonly store: Store;
  readonly #options: HarnessOptions;
  readonly #descriptors: TypedKv<ToolDescriptor>;
  readonly #registry: ServeHandle;
  readonly #agentKey: SigningKeyPair;
  readonly #receiptKey: string;
  readonly #dir: string;
  /** The fixture servers the registry stand-in knows, by server id (shared with its handler). */
  readonly #servers: Map<string, { readonly kind: FixtureKind; readonly scope: Scope }>;
  readonly #processes: ChildRun[] = [];
  readonly #subscriptions: { unsubscribe(): void }[] = [];

  private constructor(options: HarnessOptions, parts: { messaging: Messaging; store: Store; descriptors: TypedKv<ToolDescriptor>; registry: ServeHandle; agentKey: SigningKeyPair; dir: string; servers: Map<string, { readonly kind: FixtureKind; readonly scope: Scope }> }) {
    this.#servers = parts.servers;
    this.#options = options;
    this.messaging = parts.messaging;
    this.store = parts.store;
    this.#descriptors = parts.descriptors;
    this.#registry = parts.registry;
    this.#agentKey = parts.agentKey;
    this.#dir = parts.dir;
    this.#receiptKey = receiptSigningKey().setting;
  }

  /** Connects to NATS and MongoDB, opens the descriptor read model and answers the registry's getServer. */
  static async start(options: HarnessOptions): Promise<AdapterHarness> {
    const dir = await sandboxScratchDir('adapter-fault-');
    const messaging = await connectMessaging({ url: options.natsUrl, name: 'adapter-fault-test' });
    const store = await connectStore({ url: options.mongoUrl, dbName: options.dbName, appName: 'adapter-fault-test' });
    const descriptors = await openKv(messaging, descriptorBucket, ToolDescriptor);
    const agentKey = await generateSigningKeyPair('acme-agent-1');
    const servers = new Map<string, { readonly kind: FixtureKind; readonly scope: Scope }>();
    const registry = await serveStandInRegistry(messaging, {
      serverFor: (serverId) => {
        const known = servers.get(serverId);
        if (known === undefined) throw new Error(`no server ${serverId}`);
        const fixture = known.kind === 'counting' ? FixtureServer.countingEcho : FixtureServer.hostile;
        return fixtureServerDocument({ serverId, scope: known.scope, name: known.kind }, fixture, countFileOf(dir, known.scope));
      },
    });
    return new AdapterHarness(options, { messaging, store, descriptors, registry, agentKey, dir, servers });
  }

  /** The environment of an adapter process on this harness's NATS and database. */
  adapterEnv(extra: Record<string, string> = {}): Record<string, string> {
    return {
      NATS_URL: this.#options.natsUrl,
      MONGODB_URL: this.#options.mongoUrl,
      MONGODB_DATABASE: this.#options.dbName,
      LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'warn',
      TOOLPLANE_TRUSTED_KEYS: JSON.stringify(Object.fromEntries((this.#options.tenants ?? [harnessTenant]).map((tenant) => [tenant, [this.#agentKey.publicJwk]]))),
      ADAPTER_SIGNING_KEY: this.#receiptKey,
      ADAPTER_SIGNING_KEY_ID: 'adapter-fault-test',
      ...this.#options.adapterEnv,
      ...extra,
    };
  }

  /** Starts the adapter process (`src/main.ts` through tsx) and waits until it is ready. */
  async startAdapter(extra: Record<string, string> = {}): Promise<AdapterProcess> {
    const httpPort = await freePort();
    const adapter = run(process.execPath, ['--conditions=@toolplane/source', '--import', 'tsx', adapterMain], this.adapterEnv({ HTTP_PORT: String(httpPort), ...extra }));
    this.#processes.push(adapter);
    await waitFor('the adapter to be ready', async () => {
      if (!adapter.running()) throw new Error(`the adapter exited before it was ready: ${adapter.output().slice(-3000)}`);
      return answers200(`http://127.0.0.1:${httpPort}/readyz`);
    });
    return { ...adapter, httpPort, stop: () => stopChild(adapter, 15_000) };
  }

  /** A fresh workspace with the agent's profile (fixture.* allowed). */
  async freshScope(tenant = harnessTenant): Promise<Scope> {
    const scope = { tenant, workspace: `w_${randomUUID().slice(0, 8)}` };
    await insertAgentProfile(this.messaging, agentProfileDocument(scope, harnessAgent, ['fixture.*']));
    return scope;
  }

  /** Binds a tool of a fixture server in the read model (one server per scope and fixture kind). */
  async bindTool(scope: Scope, toolId: string, providerToolName: string, kind: FixtureKind, overrides: Partial<ToolDescriptor> = {}): Promise<ToolDescriptor> {
    let serverId = [...this.#servers].find(([, server]) => server.kind === kind && server.scope.workspace === scope.workspace)?.[0];
    if (serverId === undefined) {
      serverId = randomUUID();
      this.#servers.set(serverId, { kind, scope });
    }
    return putDescriptor(this.#descriptors, testDescriptor({ scope, toolId, providerToolName, mcpServerId: serverId }, overrides));
  }

  /** A context token of the harness's agent for `scope`. */
  async contextToken(scope: Scope): Promise<string> {
    return agentContextToken(this.#agentKey, scope, { agentId: harnessAgent }, '10m');
  }

  /** Publishes a request (subscribed to its reply inbox first) over `via` (default the harness's connection); `msgId` defaults to the request's own. */
  async send(scope: Scope, body: { toolId: string; arguments: Record<string, unknown>; idempotencyKey: string }, msgId?: string, via: Messaging = this.messaging): Promise<SentRequest> {
    const replyInbox = `inbox_${randomUUID().replaceAll('-', '')}`;
    const request = InvocationRequest.parse({ correlationId: 'run-1', ...body, contextToken: await this.contextToken(scope), replyInbox });
    const replies: InvocationReply[] = [];
    const waiters: ((reply: InvocationReply) => void)[] = [];
    const subscription = via.connection.subscribe(invocationReplySubject(scope, replyInbox), {
      callback: (error, message) => {
        if (error !== null) return;
        const reply = InvocationReply.parse(JSON.parse(message.string()));
        replies.push(reply);
        for (const waiter of waiters.splice(0)) waiter(reply);
      },
    });
    this.#subscriptions.push(subscription);
    await via.connection.flush();
    await publish(via, { subject: invocationRequestSubject(scope), schema: InvocationRequest, message: request, msgId: msgId ?? invocationRequestMsgId(scope, request) });
    return {
      request,
      reply: (timeoutMs = 90_000) => {
        const first = replies[0];
        if (first !== undefined) return Promise.resolve(first);
        return new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no reply to ${body.idempotencyKey} within ${timeoutMs} ms`)), timeoutMs);
          waiters.push((reply) => {
            clearTimeout(timer);
            resolve(reply);
          });
        });
      },
    };
  }

  /** How many lines `label` the fixture servers of `scope` wrote to their count file (count_calls, slow-started …). */
  async executions(scope: Scope, label = 'count_calls'): Promise<number> {
    return countedExecutions(countFileOf(this.#dir, scope), label);
  }

  /** The stored invocation under `idempotencyKey`, if any. */
  async stored(scope: Scope, idempotencyKey: string): Promise<StoredInvocation | undefined> {
    return (await storedInvocation(this.messaging, scope, idempotencyKey)) ?? undefined;
  }

  /** Every lifecycle event of `scope` the events stream holds (JetStream dropped the duplicates of republished ones). */
  async storedEvents(scope: Scope): Promise<LifecycleEvent[]> {
    const name = streams.events.name;
    const info = await this.messaging.manager.streams.info(name);
    const events: LifecycleEvent[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq += 1) {
      const message = await this.messaging.manager.streams.getMessage(name, { seq });
      if (message === null) continue;
      const event = LifecycleEvent.parse(JSON.parse(message.string()));
      if (event.metadata.tenant === scope.tenant && event.metadata.workspace === scope.workspace) events.push(event);
    }
    return events;
  }

  /** Stops every process it started, the responder and the connections. */
  async close(): Promise<void> {
    for (const subscription of this.#subscriptions) subscription.unsubscribe();
    await Promise.all(this.#processes.map((child) => stopChild(child, 3_000)));
    await this.#registry.stop();
    await this.messaging.drain();
    await this.store.close();
    await rm(this.#dir, { recursive: true, force: true });
  }
}
