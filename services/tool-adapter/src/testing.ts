// Test support for the adapter's tests, its benchmark and the end-to-end tests (`@toolplane/tool-adapter/testing`):
// what a governed call needs around the adapter (a descriptor in the registry's KV read model, a stand-in for the
// registry's getServer, server documents of fixture MCP servers counting their executions in a file, agent profiles
// and tenant policies in the adapter's buckets, signed tokens, the adapter's settings). Not for production code:
// main.ts and service.ts never import it.
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  InvocationReply,
  InvocationRequest,
  McpServer,
  ServerReply,
  ServerRequest,
  ToolDescriptor,
  commandFilter,
  invocationStateStream,
  descriptorKey,
  invocationReplySubject,
  invocationRequestMsgId,
  invocationRequestSubject,
  scopeOfSubject,
  type AgentProfile,
  type ApprovalRequested,
  type JsonObject,
  type McpServerSetting,
  type SandboxProfile,
  type OperatorClaims,
  type Scope,
  type TenantPolicy,
} from '@toolplane/contracts';
import { issueToken, type Lifetime, type SigningKeyPair } from '@toolplane/auth';
import { fixtureSandboxProfile, fixtureServerPath, type FixtureServer } from '@toolplane/mcp/testing';
import { ensureStream, publish, serve, type Messaging, type ServeHandle, type TypedKv } from '@toolplane/messaging';
import { jetStreamInvocationCalls, storedInvocationOf, type StoredInvocation } from './adapters/invocation-store.js';
import { agentProfileKey, openPolicyBuckets, tenantPolicyKey } from './adapters/policy-buckets.js';
import type { PipelineEvent } from './core/invocation-event-log.js';
import { advancePipeline, receiveInvocation, type PipelineState, type StageOutcome } from './core/invocation-pipeline.js';
import { defaultTenantPolicy, evaluatePolicy, type CallerIdentity } from './core/policy-evaluator.js';
import type { ReceiptSigner } from './core/receipts.js';

/** What a test descriptor is about; everything else has the defaults of `testDescriptor`. */
export interface TestTool {
  readonly scope: Scope;
  readonly toolId: string;
  /** The tool's name on its MCP server. */
  readonly providerToolName: string;
  /** The server the registry's getServer answers for (the stand-in's id). */
  readonly mcpServerId: string | undefined;
  /** The JSON Schema of its arguments (default `{ type: 'object' }`). */
  readonly inputSchema?: object;
}

/**
 * A bound, active, healthy MCP tool descriptor, version '1', as the registry writes it: READ, LOW risk, naturally
 * idempotent, one attempt, no secrets or rate limits; `overrides` win.
 */
export function testDescriptor(tool: TestTool, overrides: Partial<ToolDescriptor> = {}): ToolDescriptor {
  const now = new Date().toISOString();
  return ToolDescriptor.parse({
    ...tool.scope,
    toolId: tool.toolId,
    toolVersion: '1',
    kind: 'Mcp',
    providerToolName: tool.providerToolName,
    description: `The fixture's ${tool.providerToolName}.`,
    inputSchemaJson: JSON.stringify(tool.inputSchema ?? { type: 'object' }),
    definitionHash: 'a'.repeat(64),
    sideEffectClass: 'READ',
    riskClass: 'LOW',
    idempotency: 'NATURAL',
    authorization: { permissions: [], roles: [] },
    secretDependencies: [],
    timeoutMs: 20_000,
    retryPolicy: { maxAttempts: 1, initialBackoffMs: 50, maxBackoffMs: 200 },
    rateLimits: [],
    auditRequirements: { argumentsHash: true, resultHash: true },
    sandboxKind: 'Process',
    mcpServerId: tool.mcpServerId,
    healthy: true,
    active: true,
    boundBy: 'user:admin',
    boundAt: now,
    updatedAt: now,
    version: 1,
    ...overrides,
  });
}

/** Writes a descriptor into the registry's KV read model the way the registry does (one entry per version). */
export async function putDescriptor(kv: TypedKv<ToolDescriptor>, descriptor: ToolDescriptor): Promise<ToolDescriptor> {
  await kv.put(descriptorKey(descriptor, descriptor.toolId, descriptor.toolVersion), descriptor);
  return descriptor;
}

/** How the stand-in registry answers. */
export interface StandInRegistryOptions {
  /** The server document for a getServer of `serverId` from `scope` (the request subject's); throw for an unknown one. */
  readonly serverFor: (serverId: string, scope: Scope) => McpServer | Promise<McpServer>;
  /** Only this tenant's requests (default every tenant's). */
  readonly tenant?: string;
  /** The queue group (default `test-registry`). */
  readonly queue?: string;
}

/** Stands in for the registry's `getServer` responder (the adapter caches an answer for 30 s). */
export function serveStandInRegistry(messaging: Messaging, options: StandInRegistryOptions): Promise<ServeHandle> {
  return serve(messaging, {
    subject: commandFilter('registry', { ...(options.tenant === undefined ? {} : { tenant: options.tenant }), operation: 'getServer' }),
    queue: options.queue ?? 'test-registry',
    requestSchema: ServerRequest,
    replySchema: ServerReply,
    handler: async (request, context) => ({ server: await options.serverFor(request.serverId, scopeOfSubject(context.subject)) }),
  });
}

/** What a test server document is about; the rest is an Active, consumed server without authentication. */
export interface TestServer {
  readonly serverId: string;
  readonly scope: Scope;
  readonly name: string;
}

/** A stdio MCP server document running `args` with `executable` (default this Node.js) and exactly `env`. */
export function stdioServerDocument(
  server: TestServer,
  command: { readonly args: readonly string[]; readonly env?: readonly McpServerSetting[]; readonly executable?: string; readonly sandbox?: SandboxProfile },
): McpServer {
  return serverDocument(server, {
    transport: 'Stdio',
    command: { executable: command.executable ?? process.execPath, args: [...command.args], env: [...(command.env ?? [])] },
    ...(command.sandbox === undefined ? {} : { sandbox: command.sandbox }),
  });
}

/** A Streamable HTTP MCP server document at `endpointUrl`, with its headers and own connection, if any. */
export function httpServerDocument(server: TestServer, http: { readonly endpointUrl: string; readonly headers?: readonly McpServerSetting[]; readonly connectionRef?: string }): McpServer {
  return serverDocument(server, {
    transport: 'StreamableHttp',
    endpointUrl: http.endpointUrl,
    ...(http.headers === undefined ? {} : { headers: [...http.headers] }),
    ...(http.connectionRef === undefined ? {} : { connectionRef: http.connectionRef }),
  });
}

function serverDocument(server: TestServer, transport: Record<string, unknown>): McpServer {
  const now = new Date().toISOString();
  return McpServer.parse({
    serverId: server.serverId,
    ...server.scope,
    name: server.name,
    direction: 'Consumed',
    ...transport,
    authentication: 'None',
    governancePolicyRef: 'default',
    state: 'Active',
    health: { consecutiveFailures: 0 },
    registeredBy: 'user:admin',
    registeredAt: now,
    updatedAt: now,
    version: 1,
  });
}

/** A fixture server of @toolplane/mcp over stdio, counting its executions into `countFile` when one is given. */
export function fixtureServerDocument(server: TestServer, fixture: FixtureServer, countFile?: string): McpServer {
  const env: Record<string, string> = countFile === undefined ? {} : { COUNT_FILE: countFile };
  return stdioServerDocument(server, {
    args: [fixtureServerPath(fixture)],
    env: Object.entries(env).map(([name, value]) => ({ name, value })),
    sandbox: fixtureSandboxProfile(fixture, env),
  });
}

/** Where the fixture servers of `scope` count their executions: a file per workspace in `dir`. */
export function countFileOf(dir: string, scope: Scope): string {
  return path.join(dir, `count-${scope.workspace}`);
}

/** How many lines of a count file are `label` (or pass it, a predicate): 0 when nothing was counted yet. */
export async function countedExecutions(countFile: string, label: string | ((line: string) => boolean) = 'count_calls'): Promise<number> {
  const counts = typeof label === 'string' ? (line: string) => line === label : label;
  try {
    return (await readFile(countFile, 'utf8')).split('\n').filter(counts).length;
  } catch {
    return 0;
  }
}

/** An agent profile, version 1 by user:admin now, allowing `allowedTools` up to HIGH risk with no permissions; `overrides` win. */
export function agentProfileDocument(scope: Scope, agentId: string, allowedTools: readonly string[], overrides: Partial<AgentProfile> = {}): AgentProfile {
  return { ...scope, agentId, allowedTools: [...allowedTools], deniedTools: [], maxRiskClass: 'HIGH', permissions: [], updatedBy: 'user:admin', updatedAt: new Date().toISOString(), version: 1, ...overrides };
}

/** Stores (or replaces) an agent profile where every adapter replica watches it (the agent-profile bucket). */
export async function insertAgentProfile(messaging: Messaging, profile: AgentProfile): Promise<AgentProfile> {
  const { profiles } = await openPolicyBuckets(messaging);
  await profiles.put(agentProfileKey(profile.tenant, profile.workspace, profile.agentId), profile);
  return profile;
}

/** Stores (or replaces) a tenant's policy where every adapter replica watches it (the tenant-policy bucket). */
export async function putTenantPolicy(messaging: Messaging, policy: TenantPolicy): Promise<void> {
  const { policies } = await openPolicyBuckets(messaging);
  await policies.put(tenantPolicyKey(policy.tenant), policy);
}

/** The claims of an agent context token beyond its scope. */
export interface AgentTokenClaims {
  readonly agentId: string;
  /** Default `user:alice@acme.example`. */
  readonly principal?: string;
  /** Default `7`. */
  readonly agentRevision?: string;
}

/** An agent context token for `scope` signed with `key` (default lifetime 5 minutes). */
export function agentContextToken(key: SigningKeyPair, scope: Scope, claims: AgentTokenClaims, expiresIn: Lifetime = '5m'): Promise<string> {
  return issueToken(
    { kind: 'agent', ...scope, principal: claims.principal ?? 'user:alice@acme.example', agentId: claims.agentId, agentRevision: claims.agentRevision ?? '7' },
    key.privateKey,
    { kid: key.kid, expiresIn },
  );
}

/** The claims of a human operator of `scope`'s workspace with `roles`. */
export function operatorClaims(scope: Scope, roles: readonly string[], principal = 'user:ada@example.com'): OperatorClaims {
  return { kind: 'human', tenant: scope.tenant, workspaces: [scope.workspace], principal, roles: [...roles] };
}

/** An operator token for `claims` signed with `key` (default lifetime 5 minutes). */
export function operatorToken(key: SigningKeyPair, claims: OperatorClaims, expiresIn: Lifetime = '5m'): Promise<string> {
  return issueToken(claims, key.privateKey, { kid: key.kid, expiresIn });
}

/** A receipt signing key pair, with the private key as `ADAPTER_SIGNING_KEY` takes it (base64 PKCS#8). */
export function receiptSigningKey(): { readonly publicKey: KeyObject; readonly privateKey: KeyObject; readonly setting: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { publicKey, privateKey, setting: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64') };
}

/** Where an in-process adapter runs and whom it trusts. */
export interface AdapterTestSettings {
  readonly natsUrl: string;
  readonly mongoUrl: string;
  readonly dbName: string;
  /** The public JWKs of the token keys the adapter trusts, per tenant. */
  readonly trustedKeys: Readonly<Record<string, readonly object[]>>;
  /** `ADAPTER_SIGNING_KEY` (see `receiptSigningKey`). */
  readonly signingKey: string;
  /** `ADAPTER_SIGNING_KEY_ID`, when not the default. */
  readonly signingKeyId?: string;
}

/** The adapter's settings for a test: any HTTP port, logs at $TEST_LOG_LEVEL (default silent). */
export function adapterTestEnv(settings: AdapterTestSettings): Record<string, string> {
  return {
    NATS_URL: settings.natsUrl,
    MONGODB_URL: settings.mongoUrl,
    MONGODB_DATABASE: settings.dbName,
    HTTP_PORT: '0',
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify(settings.trustedKeys),
    ADAPTER_SIGNING_KEY: settings.signingKey,
    ...(settings.signingKeyId === undefined ? {} : { ADAPTER_SIGNING_KEY_ID: settings.signingKeyId }),
  };
}

/** Polls until `probe` yields a value (not undefined, null or false), or fails after `timeoutMs` naming `what`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A fresh reply inbox token of a runtime. */
export function newReplyInbox(): string {
  return `inbox_${randomUUID().replaceAll('-', '')}`;
}

/**
 * Publishes `request` on `scope`'s invocation work queue (deduplicated by `msgId`, default the request's own) and
 * awaits the first reply on its inbox (subscribed before the request goes out).
 */
export async function invokeAndAwaitReply(messaging: Messaging, scope: Scope, request: InvocationRequest, options: { readonly msgId?: string | undefined; readonly timeoutMs?: number } = {}): Promise<InvocationReply> {
  if (request.replyInbox === undefined) throw new Error('the request has no reply inbox');
  const subscription = messaging.connection.subscribe(invocationReplySubject(scope, request.replyInbox), { max: 1, timeout: options.timeoutMs ?? 30_000 });
  await messaging.connection.flush();
  await publish(messaging, { subject: invocationRequestSubject(scope), schema: InvocationRequest, message: request, msgId: options.msgId ?? invocationRequestMsgId(scope, request) });
  for await (const message of subscription) return InvocationReply.parse(JSON.parse(message.string()));
  throw new Error('no reply');
}

/** The invocation of `scope` under `idempotencyKey` as its record on the adapter's private stream has it, null when there is none. */
export async function storedInvocation(messaging: Messaging, scope: Scope, idempotencyKey: string): Promise<StoredInvocation | null> {
  const { state } = await jetStreamInvocationCalls(messaging, 1_000).read(scope, idempotencyKey);
  return storedInvocationOf(state) ?? null;
}

/** How many pipeline outcomes lead up to a started call (TOOL_RESOLUTION … START). */
export const OUTCOMES_TO_START = 9;

/** A call an adapter was running when it was killed. */
export interface CrashedCall {
  readonly scope: Scope;
  readonly descriptor: ToolDescriptor;
  readonly caller: CallerIdentity;
  readonly arguments: JsonObject;
  readonly idempotencyKey: string;
  readonly replyInbox: string;
  readonly signReceipt: ReceiptSigner;
  /** How many of the outcomes up to START were persisted (default all: the call is Executing). */
  readonly stopAfter?: number;
  /** Outcomes after those. */
  readonly more?: readonly StageOutcome[];
  /** The agent's profile the decision was made with (default: version 1, allowing the descriptor's tool). */
  readonly agentProfile?: AgentProfile;
}

/**
 * Leaves a call as an adapter killed at some step would: the call recorded on the adapter's private stream as it
 * was at that step (built by the core, exactly as the adapter builds it, with the call's agent profile and the
 * default tenant policy) with the events up to it, its processing lease expired, and none of its events published;
 * a parked call indexed by its ToolCallId, as the adapter parks it. The request's redelivery then finds it.
 */
export async function storeLeftByCrash(messaging: Messaging, call: CrashedCall): Promise<PipelineState['invocation']> {
  const { state, events } = crashedCallState(call);
  await ensureStream(messaging, invocationStateStream);
  const leaseMs = 1_000;
  const calls = jetStreamInvocationCalls(messaging, leaseMs);
  const { invocation } = state;
  if (invocation.state === 'AwaitingApproval' || invocation.state === 'Uncertain') await calls.indexToolCallId(call.scope, invocation.toolCallId, invocation.idempotencyKey);
  // Written a lease and a second ago: the lease has lapsed.
  await calls.record(calls.unread(call.scope, call.idempotencyKey), { invocation, events, settled: false, now: new Date(Date.now() - leaseMs - 1_000) });
  return invocation;
}

/**
 * The pipeline state of `call` at the step it names, built by the core as the adapter builds it (see
 * `storeLeftByCrash`), stored nowhere, with the events up to it; a parked call's ApprovalRequested as `outbox`.
 */
export function crashedCallState(call: CrashedCall): { readonly state: PipelineState; readonly events: readonly PipelineEvent[]; readonly outbox: ApprovalRequested[] | undefined } {
  const { scope, descriptor, caller, idempotencyKey } = call;
  const args = call.arguments;
  const now = new Date().toISOString();
  const request = { toolId: descriptor.toolId, arguments: args, idempotencyKey, correlationId: 'run-1', contextToken: 'a.b.c', replyInbox: call.replyInbox };
  const received = receiveInvocation({ scope, request, caller, invocationId: randomUUID(), resolvedToolVersion: descriptor.toolVersion, defaultTimeoutMs: 20_000 }, { now });
  const profile = call.agentProfile ?? (caller.agentId === undefined ? undefined : agentProfileDocument(scope, caller.agentId, [descriptor.toolId]));
  const { invocation } = received.state;
  const decision = evaluatePolicy({
    subject: { invocationId: invocation.invocationId, ...scope, toolId: descriptor.toolId, toolVersion: descriptor.toolVersion, requestHash: invocation.requestHash, arguments: args },
    descriptor,
    caller,
    agentProfile: profile,
    tenantPolicy: defaultTenantPolicy(scope.tenant, now),
    rateCounters: new Map(),
    now,
  }).decision;
  const toStart: StageOutcome[] = [
    { step: 'TOOL_RESOLUTION', descriptor },
    { step: 'SCHEMA_VALIDATION', check: { valid: true } },
    { step: 'AGENT_PERMISSION', decision },
    { step: 'TENANT_POLICY', decision },
    { step: 'SIDE_EFFECT_CLASSIFICATION', decision },
    { step: 'APPROVAL', result: 'not_required' },
    { step: 'CREDENTIAL_BROKER', result: 'leased', secretLeaseIds: [] },
    { step: 'SANDBOX', result: 'leased', sandboxLeaseId: randomUUID(), expiresAt: invocation.deadline },
    { step: 'START' },
  ];
  let state: PipelineState = { ...received.state, descriptor };
  const emitted: PipelineEvent[] = [...received.events];
  for (const outcome of [...toStart.slice(0, call.stopAfter ?? OUTCOMES_TO_START), ...(call.more ?? [])]) {
    const transition = advancePipeline(state, outcome, { now, signReceipt: call.signReceipt });
    if (!transition.accepted) throw new Error(transition.problem);
    emitted.push(...transition.events);
    state = transition.state;
  }
  // A parked call is stored with its ApprovalRequested in the outbox, as the adapter stores it.
  const outbox = state.invocation.state === 'AwaitingApproval' ? emitted.filter((event): event is ApprovalRequested => event.type === 'ApprovalRequested') : undefined;
  return { state, events: emitted, outbox };
}
