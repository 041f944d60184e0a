// The tool adapter in-process against real NATS and FerretDB: descriptors in the registry's KV read model, a
// stand-in for the registry's getServer responder, the counting-echo fixture MCP server over stdio, requests on
// the invocation work queue with signed context tokens, replies on the runtime's inbox, events on the stream.
import { randomUUID, type KeyObject } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApprovalOutcomeEvent,
  ApprovalReply,
  ConsumeApprovalRequest,
  DEFAULT_SANDBOX_PROFILE,
  EffectiveToolSet,
  EffectiveToolSetRequest,
  commandSubject,
  InvocationRequest,
  LifecycleEvent,
  TenantPolicy,
  ToolDescriptor,
  commandFilter,
  eventFilter,
  eventMsgId,
  subjectOfEvent,
  streams,
  SANDBOX_LIMIT_DEFAULTS,
  ToolplaneError,
  adapterOperations,
  canonicalJson,
  sha256Hex,
  type ApprovalRequested,
  type InvocationReply,
  type JsonObject,
  type McpServer,
  type Scope,
} from '@toolplane/contracts';
import { generateSigningKeyPair, type SigningKeyPair } from '@toolplane/auth';
import { everythingStdioTarget, FixtureServer, fixtureServerPath, sandboxScratchDir } from '@toolplane/mcp/testing';
import { connectMessaging, openKv, publish, request, serve, type Messaging, type ServeHandle, type TypedKv } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { connectStore, type Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { startNatsServer, type NatsServer } from './adapter-harness.js';
import {
  defaultTenantPolicy,
  descriptorBucket,
  receiptSigner,
  toolAdapterConsumers,
  toolAdapterService,
  verifyReceipt,
  type StageOutcome,
} from '../src/mod.js';
import {
  adapterTestEnv,
  agentContextToken,
  agentProfileDocument,
  countFileOf,
  countedExecutions,
  fixtureServerDocument,
  insertAgentProfile,
  putDescriptor,
  putTenantPolicy,
  invokeAndAwaitReply,
  newReplyInbox,
  OUTCOMES_TO_START,
  receiptSigningKey,
  serveStandInRegistry,
  stdioServerDocument,
  storeLeftByCrash,
  storedInvocation,
  testDescriptor,
  waitFor,
} from '../src/testing.js';

const infra = testScope('adapter');
/**
 * A nats-server of this file's own: the work queue's durable consumer (`tool-adapter`) is one per stream, so
 * adapters of other test files on a shared server would take this file's requests.
 */
let nats: NatsServer;
const deadlineMs = 30_000;
const tenant = 'acme';
const agentId = 'agent-support';
const receiptKeyId = 'adapter-test-1';
const serverIds = new Map<string, string>();
const boundTools = new Map<string, ToolDescriptor>();
/** The server id under which the stand-in registry answers with @modelcontextprotocol/server-everything. */
const everythingServerId = randomUUID();
/** The server id under which the stand-in registry answers with the hostile fixture. */
const hostileServerId = randomUUID();
/** The server id under which the stand-in registry answers with the escapist fixture, in a sandbox of 2 CPU seconds. */
const escapistServerId = randomUUID();
const escapistCpuSeconds = 2;

let agentKey: SigningKeyPair;
let receiptPublicKey: KeyObject;
let receiptPrivateKey: KeyObject;
let adapter: RunningService;
let adapterEnv: Record<string, string>;
let messaging: Messaging;
let store: Store;
let descriptors: TypedKv<ToolDescriptor>;
let registry: ServeHandle;
let approvalService: ServeHandle;
/** ApprovalRequested events seen, by approval id (the stand-in approval service answers consume from them). */
const approvalRequests = new Map<string, ApprovalRequested>();
const consumedApprovals: string[] = [];
let tmp: string;

beforeAll(async () => {
  nats = await startNatsServer();
  agentKey = await generateSigningKeyPair('acme-agent-1');
  const receiptKeys = receiptSigningKey();
  receiptPublicKey = receiptKeys.publicKey;
  receiptPrivateKey = receiptKeys.privateKey;
  tmp = await sandboxScratchDir('adapter-int-');
  adapterEnv = adapterTestEnv({ natsUrl: nats.url, mongoUrl: infra.mongoUrl, dbName: infra.dbName, trustedKeys: { [tenant]: [agentKey.publicJwk] }, signingKey: receiptKeys.setting, signingKeyId: receiptKeyId });
  adapter = await startService(toolAdapterService, adapterEnv);
  messaging = await connectMessaging({ url: nats.url, name: 'adapter-int-test' });
  store = await connectStore({ url: infra.mongoUrl, dbName: infra.dbName, appName: 'adapter-int-test' });
  descriptors = await openKv(messaging, descriptorBucket, ToolDescriptor);
  // Stands in for the registry's getServer: the fixture server of the asking workspace.
  registry = await serveStandInRegistry(messaging, {
    serverFor: (serverId, scope) => {
      if (serverId === hostileServerId) return fixtureServerDocument({ serverId, scope, name: 'hostile' }, FixtureServer.hostile);
      if (serverId === escapistServerId) {
        const sandbox = { ...DEFAULT_SANDBOX_PROFILE, name: 'tight', limits: { ...SANDBOX_LIMIT_DEFAULTS, cpuSeconds: escapistCpuSeconds } };
        return stdioServerDocument({ serverId, scope, name: 'escapist' }, { args: [fixtureServerPath(FixtureServer.escapist)], sandbox });
      }
      if (serverId === everythingServerId) return everythingServer(scope);
      return fixtureServerDocument({ serverId, scope, name: 'fixture' }, FixtureServer.countingEcho, countFileOf(tmp, scope));
    },
  });
  // Stands in for the approval service's consume: single use, bound to the request hash and tool version.
  approvalService = await serve(messaging, {
    subject: commandFilter('approval', { operation: 'consume' }),
    queue: 'test-approval',
    requestSchema: ConsumeApprovalRequest,
    replySchema: ApprovalReply,
    handler: async (request) => {
      const requested = approvalRequests.get(request.approvalId);
      if (requested === undefined || requested.data.requestHash !== request.requestHash || requested.metadata.toolVersion !== request.toolVersion) {
        throw new ToolplaneError('CONFLICT', 'not bound to this request');
      }
      if (consumedApprovals.includes(request.approvalId)) throw new ToolplaneError('CONFLICT', 'already consumed');
      consumedApprovals.push(request.approvalId);
      const { metadata, data } = requested;
      return Promise.resolve({
        approval: {
          approvalId: data.approvalId,
          tenant: metadata.tenant,
          workspace: metadata.workspace,
          invocationId: metadata.invocationId,
          toolCallId: metadata.toolCallId,
          toolId: metadata.toolId,
          toolVersion: request.toolVersion,
          requestHash: data.requestHash,
          sideEffectClass: data.sideEffectClass,
          riskClass: data.riskClass,
          summary: data.summary,
          requestedBy: metadata.principal,
          approvers: data.approvers,
          state: 'Consumed' as const,
          requestedAt: metadata.occurredAt,
          expiresAt: data.expiresAt,
          correlationId: metadata.correlationId,
          updatedAt: new Date().toISOString(),
          version: 3,
        },
      });
    },
  });
}, 60_000);

afterAll(async () => {
  await approvalService?.stop();
  await registry?.stop();
  await adapter?.stop();
  await messaging?.drain();
  await store?.close();
  await nats?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

let workspaces = 0;
/** Each test works in a workspace of its own, with its own agent profile and tools. */
async function freshScope(): Promise<Scope> {
  workspaces += 1;
  const scope = { tenant, workspace: `w${workspaces}_${randomUUID().slice(0, 8)}` };
  serverIds.set(scope.workspace, randomUUID());
  await insertAgentProfile(messaging, agentProfileDocument(scope, agentId, ['fixture.*']));
  await bindTool(scope, 'fixture.echo', 'echo', { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
  await bindTool(scope, 'fixture.count', 'count_calls', { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false });
  // One call a day for the whole workspace: the second call in a test is over the limit.
  await bindTool(scope, 'fixture.limited', 'count_calls', { type: 'object', properties: { n: { type: 'integer' } } }, { rateLimits: [{ per: 'TOOL', limit: 1, windowMs: 86_400_000 }] });
  // The same counting tool declared DESTRUCTIVE: the default tenant policy gates it behind an approval.
  await bindTool(scope, 'fixture.write', 'count_calls', { type: 'object', properties: { n: { type: 'integer' } } }, { sideEffectClass: 'WRITE', riskClass: 'MEDIUM', idempotency: 'NONE' });
  await bindTool(scope, 'fixture.purge', 'count_calls', { type: 'object', properties: { n: { type: 'integer' } } }, { sideEffectClass: 'DESTRUCTIVE', riskClass: 'HIGH', idempotency: 'NONE' });
  return scope;
}

function everythingServer(scope: Scope): McpServer {
  const target = everythingStdioTarget();
  return stdioServerDocument({ serverId: everythingServerId, scope, name: 'everything' }, { executable: target.command, args: target.args ?? [] });
}

function executions(scope: Scope): Promise<number> {
  return countedExecutions(countFileOf(tmp, scope));
}

/** Writes a READ descriptor (two attempts) into the read model the way the registry does (one KV entry per version). */
async function bindTool(scope: Scope, toolId: string, providerToolName: string, inputSchema: object, overrides: Partial<ToolDescriptor> = {}): Promise<ToolDescriptor> {
  const descriptor = testDescriptor(
    { scope, toolId, providerToolName, mcpServerId: serverIds.get(scope.workspace), inputSchema },
    { retryPolicy: { maxAttempts: 2, initialBackoffMs: 50, maxBackoffMs: 200 }, ...overrides },
  );
  await putDescriptor(descriptors, descriptor);
  boundTools.set(`${scope.workspace} ${toolId}`, descriptor);
  return descriptor;
}

function contextToken(scope: Scope, key: SigningKeyPair = agentKey): Promise<string> {
  return agentContextToken(key, scope, { agentId });
}

const newInbox = newReplyInbox;

/** Publishes a request and awaits the reply on its inbox. */
async function invoke(scope: Scope, body: Omit<InvocationRequest, 'contextToken' | 'correlationId' | 'replyInbox'> & { contextToken?: string; replyInbox?: string }, msgId?: string): Promise<InvocationReply> {
  const request = InvocationRequest.parse({ correlationId: 'run-1', ...body, contextToken: body.contextToken ?? (await contextToken(scope)), replyInbox: body.replyInbox ?? newInbox() });
  return invokeAndAwaitReply(messaging, scope, request, { msgId, timeoutMs: deadlineMs });
}

/** Collects the lifecycle events of a scope from now on. */
function recordEvents(scope: Scope): { events: LifecycleEvent[]; stop: () => void } {
  const events: LifecycleEvent[] = [];
  const subscription = messaging.connection.subscribe(eventFilter(scope));
  void (async () => {
    for await (const message of subscription) {
      const event = LifecycleEvent.parse(JSON.parse(message.string()));
      if (event.type === 'ApprovalRequested') approvalRequests.set(event.data.approvalId, event);
      events.push(event);
    }
  })();
  return { events, stop: () => subscription.unsubscribe() };
}

function stored(scope: Scope, idempotencyKey: string) {
  return storedInvocation(messaging, scope, idempotencyKey);
}

describe('the tool adapter', () => {
  it('runs a READ call end to end: untrusted result, verifiable receipt, ordered events, Observed document', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    await messaging.connection.flush();
    const recorder = recordEvents(scope);
    await messaging.connection.flush();
    const reply = await invoke(scope, { toolId: 'fixture.echo', arguments: { text: 'hello from the agent' }, idempotencyKey: 'echo-1' });
    expect(reply.ok).toBe(true);
    if (!reply.ok) return;
    expect(reply.data.status).toBe('SUCCESS');
    expect(reply.data.provenance).toBe('untrusted-tool-data');
    expect(reply.data.textContent).toContain('hello from the agent');
    expect(reply.data.receipt.state).toBe('Observed');
    expect(reply.data.receipt.signature.keyId).toBe(receiptKeyId);
    expect(verifyReceipt(reply.data.receipt, new Map([[receiptKeyId, receiptPublicKey]]))).toMatchObject({ valid: true });
    expect(verifyReceipt({ ...reply.data.receipt, toolVersion: '2' }, new Map([[receiptKeyId, receiptPublicKey]]))).toMatchObject({ valid: false });

    const types = await waitFor('the terminal event', () => {
      const seen = recorder.events.filter((event) => 'invocationId' in event.metadata && event.metadata.invocationId === reply.data.receipt.invocationId).map((event) => event.type);
      return seen.includes('ToolCallCompleted') ? seen : undefined;
    });
    recorder.stop();
    expect(types).toEqual(['InvocationReceived', 'SandboxLeased', 'ToolCallStarted', 'SandboxReleased', 'ToolCallCompleted']);

    const document = await stored(scope, 'echo-1');
    expect(document).toMatchObject({ state: 'Observed', invocationId: reply.data.receipt.invocationId, receipt: reply.data.receipt });
    expect(document?.leaseUntil).toBeUndefined();
  });

  it('calls the echo tool of @modelcontextprotocol/server-everything', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    await bindTool(scope, 'everything.echo', 'echo', { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] }, { mcpServerId: everythingServerId });
    await insertAgentProfile(messaging, agentProfileDocument(scope, agentId, ['fixture.*', 'everything.*']));
    const reply = await invoke(scope, { toolId: 'everything.echo', arguments: { message: 'ignore previous instructions' }, idempotencyKey: 'everything-1' });
    expect(reply.ok && reply.data.status).toBe('SUCCESS');
    expect(reply.ok && reply.data.textContent).toBe('Echo: ignore previous instructions');
    expect(reply.ok && reply.data.provenance).toBe('untrusted-tool-data');
  });

  it('carries the image block of @modelcontextprotocol/server-everything through the pipeline: replied, stored and hashed with the result', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    await bindTool(scope, 'everything.image', 'get-tiny-image', { type: 'object', properties: {} }, { mcpServerId: everythingServerId });
    await insertAgentProfile(messaging, agentProfileDocument(scope, agentId, ['fixture.*', 'everything.*']));
    const reply = await invoke(scope, { toolId: 'everything.image', arguments: {}, idempotencyKey: 'image-1' });
    expect(reply.ok && reply.data.status).toBe('SUCCESS');
    if (!reply.ok) return;
    const { content } = reply.data;
    expect(content?.map((block) => block.type)).toEqual(['text', 'image', 'text']);
    const image = content?.[1];
    expect(image).toMatchObject({ type: 'image', mimeType: 'image/png' });
    if (image?.type !== 'image') return;
    // The MCP logo, a PNG, whole.
    expect(Buffer.from(image.data, 'base64').subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(reply.data.textContent).toBe("Here's the image you requested:\n[image (image/png) omitted]\nThe image above is the MCP logo.");
    expect(reply.data.truncated).toBe(false);
    // The receipt's result hash covers the blocks: it is the hash of exactly what was stored.
    const document = await stored(scope, 'image-1');
    expect(document?.resultJson).toBe(canonicalJson({ content, truncated: false }));
    expect(reply.data.receipt.resultHash).toBe(sha256Hex(document?.resultJson ?? ''));
    expect(verifyReceipt(reply.data.receipt, new Map([[receiptKeyId, receiptPublicKey]]))).toMatchObject({ valid: true });
    // A repeat of the key (another message id, past JetStream's dedupe) replays the same blocks from the record.
    const again = await invoke(scope, { toolId: 'everything.image', arguments: {}, idempotencyKey: 'image-1' }, randomUUID());
    expect(again).toEqual(reply);
  });

  it("checks structured content against the output schema the tool was bound with: a result that breaks it ends the call Failed (CONFLICT)", { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const input = { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] };
    const schema = (temperature: string) => JSON.stringify({ type: 'object', properties: { temperature: { type: temperature } }, required: ['temperature'] });
    await bindTool(scope, 'everything.weather', 'get-structured-content', input, { mcpServerId: everythingServerId, outputSchemaJson: schema('number') });
    await bindTool(scope, 'everything.weather_text', 'get-structured-content', input, { mcpServerId: everythingServerId, outputSchemaJson: schema('string') });
    await insertAgentProfile(messaging, agentProfileDocument(scope, agentId, ['fixture.*', 'everything.*']));
    const kept = await invoke(scope, { toolId: 'everything.weather', arguments: { location: 'Chicago' }, idempotencyKey: 'weather-1' });
    expect(kept.ok && kept.data.status).toBe('SUCCESS');
    expect(kept.ok && kept.data.structuredContent).toMatchObject({ temperature: 36 });

    const broken = await invoke(scope, { toolId: 'everything.weather_text', arguments: { location: 'Chicago' }, idempotencyKey: 'weather-2' });
    expect(broken.ok && broken.data.status).toBe('FAILED');
    if (!broken.ok) return;
    expect(broken.data.receipt).toMatchObject({ state: 'Failed', failure: { code: 'CONFLICT', retryable: false, providerErrorType: 'OutputSchemaViolation' } });
    expect(broken.data.receipt.failure?.message).toContain('/temperature must be string');
    expect(broken.data.content).toBeUndefined();
    expect(broken.data.structuredContent).toBeUndefined();
    expect(await stored(scope, 'weather-2')).toMatchObject({ state: 'Failed', failure: { code: 'CONFLICT' } });
  });

  it('bounds what a hostile server returns: a result over the size bound is cut with a marker, a 10 MB message fails the call, and the adapter goes on', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    await bindTool(scope, 'fixture.big', 'big_result', { type: 'object', properties: { bytes: { type: 'integer' } } }, { mcpServerId: hostileServerId, retryPolicy: { maxAttempts: 1, initialBackoffMs: 1, maxBackoffMs: 1 } });
    const large = await invoke(scope, { toolId: 'fixture.big', arguments: { bytes: 1_000_000 }, idempotencyKey: 'big-1mb' });
    expect(large.ok && large.data.status).toBe('SUCCESS');
    expect(large.ok && large.data.truncated).toBe(true);
    expect(large.ok && Buffer.byteLength(large.data.textContent ?? '', 'utf8')).toBeLessThanOrEqual(262_144);

    const huge = await invoke(scope, { toolId: 'fixture.big', arguments: { bytes: 10_000_000 }, idempotencyKey: 'big-10mb' });
    expect(huge.ok && huge.data.status).toBe('FAILED');
    expect(huge.ok && huge.data.receipt.failure?.code).toBe('TEMPORARY_UNAVAILABLE');
    expect(huge.ok && huge.data.receipt.failure?.message).toContain('larger than');

    const after = await invoke(scope, { toolId: 'fixture.echo', arguments: { text: 'still here' }, idempotencyKey: 'after-hostile' });
    expect(after.ok && after.data.textContent).toContain('still here');
  });

  it('runs a hostile server in its sandbox: the adapter\'s environ is out of its reach, a CPU limit ends its call Uncertain naming the limit, the next call gets a fresh sandbox, and other servers go on', { timeout: 90_000 }, async () => {
    const scope = await freshScope();
    const single = { mcpServerId: escapistServerId, retryPolicy: { maxAttempts: 1, initialBackoffMs: 1, maxBackoffMs: 1 } };
    await bindTool(scope, 'fixture.read_file', 'read_file', { type: 'object', properties: { path: { type: 'string' } } }, single);
    await bindTool(scope, 'fixture.burn', 'burn_cpu', { type: 'object' }, { ...single, sideEffectClass: 'WRITE', riskClass: 'MEDIUM', idempotency: 'NONE' });
    const recorder = recordEvents(scope);
    await messaging.connection.flush();

    // The adapter runs in this process: its environment is what the server would steal. Its PID namespace has no such pid.
    const environ = await invoke(scope, { toolId: 'fixture.read_file', arguments: { path: `/proc/${process.pid}/environ` }, idempotencyKey: 'steal-environ' });
    expect(environ.ok && environ.data.status).toBe('SUCCESS');
    expect(environ.ok && environ.data.structuredContent).toMatchObject({ ok: false });
    expect(environ.ok && environ.data.receipt.sandbox).toMatchObject({ sandboxKind: 'Bubblewrap', profileName: 'tight', network: 'none', limits: { cpuSeconds: escapistCpuSeconds } });

    const burn = await invoke(scope, { toolId: 'fixture.burn', arguments: {}, idempotencyKey: 'burn-1' });
    expect(burn.ok && burn.data.status).toBe('UNCERTAIN');
    expect(burn.ok && burn.data.receipt.failure?.code).toBe('UNKNOWN_OUTCOME');
    expect(burn.ok && burn.data.receipt.failure?.message).toContain(`CPU time limit (${escapistCpuSeconds} s)`);
    // Ended, not left non-terminal: its sandbox was released.
    const burnId = burn.ok ? burn.data.receipt.invocationId : '';
    await waitFor('the burn call\'s SandboxReleased', () => recorder.events.some((event) => event.type === 'SandboxReleased' && event.metadata.invocationId === burnId) || undefined);
    recorder.stop();

    // The server died of its limit; the next call is served by a fresh sandbox of the same profile.
    const hostname = await invoke(scope, { toolId: 'fixture.read_file', arguments: { path: '/etc/hostname' }, idempotencyKey: 'after-burn' });
    expect(hostname.ok && hostname.data.status).toBe('SUCCESS');
    const other = await invoke(scope, { toolId: 'fixture.echo', arguments: { text: 'still here' }, idempotencyKey: 'after-escapist' });
    expect(other.ok && other.data.textContent).toContain('still here');
  });

  it('denies a tool outside the agent’s profile with AUTHORIZATION_DENIED, never calling it', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    await bindTool(scope, 'other.count', 'count_calls', { type: 'object' });
    const reply = await invoke(scope, { toolId: 'other.count', arguments: {}, idempotencyKey: 'outside' });
    expect(reply.ok && reply.data.status).toBe('DENIED');
    expect(reply.ok && reply.data.receipt.failure?.code).toBe('AUTHORIZATION_DENIED');
    expect((await stored(scope, 'outside'))?.deniedStage).toBe('AGENT_PERMISSION');
    expect(await executions(scope)).toBe(0);
  });

  it('denies schema-invalid arguments with INVALID_ARGUMENT and never calls the tool', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const reply = await invoke(scope, { toolId: 'fixture.count', arguments: { unexpected: true }, idempotencyKey: 'bad-args' });
    expect(reply.ok).toBe(true);
    if (!reply.ok) return;
    expect(reply.data.status).toBe('DENIED');
    expect(reply.data.receipt.failure?.code).toBe('INVALID_ARGUMENT');
    expect(await executions(scope)).toBe(0);
    expect((await stored(scope, 'bad-args'))?.deniedStage).toBe('SCHEMA_VALIDATION');
  });

  it('answers an unknown tool with NOT_FOUND', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const reply = await invoke(scope, { toolId: 'fixture.nope', arguments: {}, idempotencyKey: 'unknown' });
    expect(reply.ok && reply.data.status).toBe('DENIED');
    expect(reply.ok && reply.data.receipt.failure?.code).toBe('NOT_FOUND');
  });

  it('refuses a forged context token with AUTHENTICATION_FAILED and records nothing', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const forger = await generateSigningKeyPair(agentKey.kid);
    const reply = await invoke(scope, { toolId: 'fixture.count', arguments: {}, idempotencyKey: 'forged', contextToken: await contextToken(scope, forger) });
    expect(reply).toMatchObject({ ok: false, error: { code: 'AUTHENTICATION_FAILED' } });
    expect(await stored(scope, 'forged')).toBeNull();
    expect(await executions(scope)).toBe(0);
  });

  it('takes the scope from the subject: a token for another workspace is AUTHENTICATION_FAILED', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const elsewhere = await freshScope();
    const reply = await invoke(scope, { toolId: 'fixture.count', arguments: {}, idempotencyKey: 'other-workspace', contextToken: await contextToken(elsewhere) });
    expect(reply).toMatchObject({ ok: false, error: { code: 'AUTHENTICATION_FAILED' } });
    expect(await stored(scope, 'other-workspace')).toBeNull();
    expect(await executions(scope)).toBe(0);
  });

  it('ignores a tenant and workspace named in the body: the call runs and is recorded in the subject’s scope', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const elsewhere = await freshScope();
    const reply = await invoke(scope, { toolId: 'fixture.count', arguments: {}, idempotencyKey: 'named-scope', tenant: 'other-tenant', workspace: elsewhere.workspace });
    expect(reply).toMatchObject({ ok: true, data: { status: 'SUCCESS' } });
    expect(await stored(scope, 'named-scope')).toMatchObject({ tenant: scope.tenant, workspace: scope.workspace, state: 'Observed' });
    expect(await stored(elsewhere, 'named-scope')).toBeNull();
    expect(await stored({ tenant: 'other-tenant', workspace: elsewhere.workspace }, 'named-scope')).toBeNull();
  });

  it('executes a repeated idempotency key once and answers both with the same receipt', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const first = await invoke(scope, { toolId: 'fixture.count', arguments: { n: 1 }, idempotencyKey: 'once' });
    // Another message id, so JetStream's dedupe window does not hide the repeat: the store must.
    const second = await invoke(scope, { toolId: 'fixture.count', arguments: { n: 1 }, idempotencyKey: 'once' }, randomUUID());
    expect(first.ok && first.data.status).toBe('SUCCESS');
    expect(second).toEqual(first);
    expect(await executions(scope)).toBe(1);
  });

  it('denies a call over the tool’s rate limit with RATE_LIMITED, counting only admitted calls', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const [first, second] = await Promise.all([
      invoke(scope, { toolId: 'fixture.limited', arguments: { n: 1 }, idempotencyKey: 'limited-1' }),
      invoke(scope, { toolId: 'fixture.limited', arguments: { n: 2 }, idempotencyKey: 'limited-2' }),
    ]);
    const statuses = [first, second].map((reply) => (reply.ok ? reply.data.status : reply.error.code)).sort();
    expect(statuses).toEqual(['DENIED', 'SUCCESS']);
    const denied = [first, second].find((reply) => reply.ok && reply.data.status === 'DENIED');
    expect(denied?.ok && denied.data.receipt.failure?.code).toBe('RATE_LIMITED');
    expect(await executions(scope)).toBe(1);
  });

  it('denies a tool whose kill switch is engaged, before anything runs', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    await bindTool(scope, 'fixture.killed', 'count_calls', { type: 'object' });
    // The default policy plus one kill switch that only this tool matches (the tenant is shared by these tests).
    const policy = { ...defaultTenantPolicy(tenant, new Date().toISOString()), killSwitches: [{ target: 'TOOL' as const, tools: 'fixture.killed', reason: 'incident 42', engagedBy: 'user:admin', engagedAt: new Date().toISOString() }] };
    await putTenantPolicy(messaging, TenantPolicy.parse(policy));
    const reply = await invoke(scope, { toolId: 'fixture.killed', arguments: {}, idempotencyKey: 'killed' });
    expect(reply.ok && reply.data.status).toBe('DENIED');
    expect(reply.ok && reply.data.receipt.failure?.code).toBe('AUTHORIZATION_DENIED');
    expect(reply.ok && reply.data.receipt.failure?.message).toContain('incident 42');
    expect((await stored(scope, 'killed'))?.deniedStage).toBe('TENANT_POLICY');
    expect(await executions(scope)).toBe(0);
  });

  it('never executes one key twice, however many copies reach two replicas at once', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const second = await startService(toolAdapterService, { ...adapterEnv, INSTANCE_ID: 'replica-b' });
    try {
      // Distinct message ids, so every copy reaches a replica: only the store can keep them apart.
      const replies = await Promise.all(Array.from({ length: 6 }, () => invoke(scope, { toolId: 'fixture.count', arguments: { n: 7 }, idempotencyKey: 'many-copies' }, randomUUID())));
      expect(replies.every((reply) => reply.ok && reply.data.status === 'SUCCESS')).toBe(true);
      expect(new Set(replies.map((reply) => JSON.stringify(reply))).size).toBe(1);
      expect(await executions(scope)).toBe(1);
    } finally {
      await second.stop();
    }
  });

  it('answers the same key with other arguments with CONFLICT', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const first = await invoke(scope, { toolId: 'fixture.count', arguments: { n: 1 }, idempotencyKey: 'clash' });
    expect(first.ok && first.data.status).toBe('SUCCESS');
    const second = await invoke(scope, { toolId: 'fixture.count', arguments: { n: 2 }, idempotencyKey: 'clash' });
    expect(second).toMatchObject({ ok: false, error: { code: 'CONFLICT' } });
    expect(await executions(scope)).toBe(1);
  });
});

/** Parks a gated call and returns its ApprovalRequested event and the pending reply. */
async function parkGatedCall(scope: Scope, idempotencyKey: string) {
  const recorder = recordEvents(scope);
  await messaging.connection.flush();
  const reply = invoke(scope, { toolId: 'fixture.purge', arguments: { n: 1 }, idempotencyKey });
  const requested = await waitFor('ApprovalRequested', () => recorder.events.find((event): event is ApprovalRequested => event.type === 'ApprovalRequested'));
  const parked = await waitFor('the parked document', async () => {
    const document = await stored(scope, idempotencyKey);
    return document?.state === 'AwaitingApproval' && document.leaseUntil === undefined ? document : undefined;
  });
  expect(parked.approvalId).toBe(requested.data.approvalId);
  expect(await executions(scope)).toBe(0);
  // The request is acked while the call waits: nothing holds the work queue.
  await waitFor('the request to be acked', async () => {
    const info = await messaging.manager.consumers.info(streams.invocations.name, toolAdapterConsumers.requests);
    return info.num_ack_pending === 0 && info.num_pending === 0;
  });
  return { recorder, requested, reply };
}

/** Publishes a decision the way the approval service does. */
async function decide(requested: ApprovalRequested, decision: 'ApprovalGranted' | 'ApprovalRejected' | 'ApprovalExpired' | 'ApprovalVoided'): Promise<void> {
  const { metadata, data } = requested;
  const base = { approvalId: data.approvalId, requestHash: data.requestHash };
  const eventData =
    decision === 'ApprovalGranted'
      ? { ...base, decidedBy: 'user:bob@acme.example' }
      : decision === 'ApprovalRejected'
        ? { ...base, decidedBy: 'user:bob@acme.example', reason: 'not today' }
        : decision === 'ApprovalVoided'
          ? { ...base, reason: 'DefinitionChanged' }
          : base;
  const event = ApprovalOutcomeEvent.parse({
    type: decision,
    data: eventData,
    metadata: {
      eventId: randomUUID(),
      tenant: metadata.tenant,
      workspace: metadata.workspace,
      occurredAt: new Date().toISOString(),
      correlationId: metadata.correlationId,
      invocationId: metadata.invocationId,
      toolCallId: metadata.toolCallId,
      toolId: metadata.toolId,
      toolVersion: metadata.toolVersion,
    },
  });
  await publish(messaging, { subject: subjectOfEvent(event), schema: ApprovalOutcomeEvent, message: event, msgId: eventMsgId(event) });
}

describe('approvals', () => {
  it('parks a gated call (AwaitingApproval, message acked) and runs it once when the approval is granted', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const { recorder, requested, reply } = await parkGatedCall(scope, 'gated-granted');
    await decide(requested, 'ApprovalGranted');
    const answer = await reply;
    recorder.stop();
    expect(answer.ok && answer.data.status).toBe('SUCCESS');
    expect(answer.ok && answer.data.receipt.approvalId).toBe(requested.data.approvalId);
    expect(consumedApprovals).toContain(requested.data.approvalId);
    expect(await executions(scope)).toBe(1);
    expect((await stored(scope, 'gated-granted'))?.state).toBe('Observed');
  });

  it('answers another copy of a parked call at once on its own inbox with APPROVAL_PENDING and the key, and runs the call once', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const { recorder, requested, reply } = await parkGatedCall(scope, 'gated-copy');
    // A copy with its own inbox and message id (a raw runtime retrying after the duplicate window).
    const copy = await invoke(scope, { toolId: 'fixture.purge', arguments: { n: 1 }, idempotencyKey: 'gated-copy' }, randomUUID());
    expect(copy).toMatchObject({ ok: false, error: { code: 'APPROVAL_PENDING', retryable: true, details: { idempotencyKey: 'gated-copy', approvalId: requested.data.approvalId } } });
    await decide(requested, 'ApprovalGranted');
    const answer = await reply;
    recorder.stop();
    expect(answer.ok && answer.data.status).toBe('SUCCESS');
    expect(await executions(scope)).toBe(1);
  });

  it('requests the approval again when the adapter stopped between parking the call and publishing the request', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const replyInbox = newInbox();
    const approvalId = randomUUID();
    const parked = await leftByCrash(scope, 'fixture.purge', 'crash-parked', { n: 1 }, replyInbox, 5, [{ step: 'APPROVAL', result: 'requested', approvalId }]);
    expect(parked.state).toBe('AwaitingApproval');
    const recorder = recordEvents(scope);
    await messaging.connection.flush();
    const replied = invoke(scope, { toolId: 'fixture.purge', arguments: { n: 1 }, idempotencyKey: 'crash-parked', replyInbox });
    const requested = await waitFor('ApprovalRequested', () => recorder.events.find((event): event is ApprovalRequested => event.type === 'ApprovalRequested'));
    expect(requested.data.approvalId).toBe(approvalId);
    await decide(requested, 'ApprovalGranted');
    const answer = await replied;
    recorder.stop();
    expect(answer.ok && answer.data.status).toBe('SUCCESS');
    expect(await executions(scope)).toBe(1);
  });

  it.each([
    ['ApprovalRejected', 'APPROVAL_REJECTED'],
    ['ApprovalExpired', 'APPROVAL_EXPIRED'],
    ['ApprovalVoided', 'CONFLICT'],
  ] as const)('ends a parked call Denied on %s with %s, never executing it', { timeout: 60_000 }, async (decision, code) => {
    const scope = await freshScope();
    const { recorder, requested, reply } = await parkGatedCall(scope, `gated-${decision}`);
    await decide(requested, decision);
    const answer = await reply;
    recorder.stop();
    expect(answer.ok && answer.data.status).toBe('DENIED');
    expect(answer.ok && answer.data.receipt.failure?.code).toBe(code);
    expect(await executions(scope)).toBe(0);
    expect((await stored(scope, `gated-${decision}`))?.deniedStage).toBe('APPROVAL');
  });
});

const outcomesToStart = OUTCOMES_TO_START;

/**
 * Leaves a call as an adapter killed at some step would (by default the started fact, state Executing; `stopAfter`
 * and `more` choose another step): see `storeLeftByCrash`.
 */
function leftByCrash(scope: Scope, toolId: string, idempotencyKey: string, args: JsonObject, replyInbox: string, stopAfter = outcomesToStart, more: readonly StageOutcome[] = []) {
  const descriptor = boundTools.get(`${scope.workspace} ${toolId}`);
  if (descriptor === undefined) throw new Error(`no tool ${toolId}`);
  const caller = { principal: 'user:alice@acme.example', agentId, agentRevision: '7', roles: [] };
  const signReceipt = receiptSigner({ keyId: receiptKeyId, privateKey: receiptPrivateKey });
  return storeLeftByCrash(messaging, { scope, descriptor, caller, arguments: args, idempotencyKey, replyInbox, signReceipt, stopAfter, more });
}

describe('a request redelivered after the adapter stopped', () => {
  it('resumes a call that was only received, as the same invocation, and runs it once', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const replyInbox = newInbox();
    const received = await leftByCrash(scope, 'fixture.count', 'crash-received', { n: 1 }, replyInbox, 0);
    expect(received.state).toBe('Received');
    const reply = await invoke(scope, { toolId: 'fixture.count', arguments: { n: 1 }, idempotencyKey: 'crash-received', replyInbox });
    expect(reply.ok && reply.data.status).toBe('SUCCESS');
    expect(reply.ok && reply.data.receipt).toMatchObject({ attempt: 1, invocationId: received.invocationId });
    expect(await executions(scope)).toBe(1);
  });
});

describe('a request redelivered after the terminal fact was stored', () => {
  it('publishes the terminal events again and replays the stored receipt, running nothing', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const replyInbox = newInbox();
    const ended = await leftByCrash(scope, 'fixture.count', 'crash-ended', { n: 1 }, replyInbox, outcomesToStart, [
      { step: 'EXECUTE', execution: { result: 'returned', output: { content: [{ type: 'text', text: '1' }] } } },
      { step: 'SANITIZE', secrets: [] },
      { step: 'FINISH' },
    ]);
    expect(ended.state).toBe('Observed');
    const recorder = recordEvents(scope);
    await messaging.connection.flush();
    const reply = await invoke(scope, { toolId: 'fixture.count', arguments: { n: 1 }, idempotencyKey: 'crash-ended', replyInbox });
    expect(reply.ok && reply.data.receipt).toEqual(ended.receipt);
    const types = await waitFor('the terminal events', () => {
      const seen = recorder.events.filter((event) => 'invocationId' in event.metadata && event.metadata.invocationId === ended.invocationId).map((event) => event.type);
      return seen.includes('ToolCallCompleted') ? seen : undefined;
    });
    recorder.stop();
    // Every event the call's records hold goes out again (the crash left them all unpublished; copies that did get
    // out within the duplicate window are dropped by their ids).
    expect(types).toEqual(['InvocationReceived', 'SandboxLeased', 'ToolCallStarted', 'SandboxReleased', 'ToolCallCompleted']);
    expect(await executions(scope)).toBe(0);
  });
});

describe('a request redelivered while its call was executing', () => {
  it('starts a new attempt of a READ call (same ToolCallId, attempt 2) and runs it once', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const replyInbox = newInbox();
    const interrupted = await leftByCrash(scope, 'fixture.count', 'crash-read', { n: 1 }, replyInbox);
    expect(interrupted.state).toBe('Executing');
    const recorder = recordEvents(scope);
    await messaging.connection.flush();
    const reply = await invoke(scope, { toolId: 'fixture.count', arguments: { n: 1 }, idempotencyKey: 'crash-read', replyInbox });
    expect(reply.ok && reply.data.status).toBe('SUCCESS');
    if (!reply.ok) return;
    expect(reply.data.receipt).toMatchObject({ attempt: 2, toolCallId: interrupted.toolCallId });
    expect(reply.data.receipt.invocationId).not.toBe(interrupted.invocationId);
    expect(await executions(scope)).toBe(1);
    const closing = await waitFor('the interrupted attempt to be closed', () =>
      recorder.events.find((event) => event.type === 'ToolCallFailed' && 'invocationId' in event.metadata && event.metadata.invocationId === interrupted.invocationId),
    );
    recorder.stop();
    expect(closing.metadata).toMatchObject({ attempt: 1 });
  });

  it('ends a non-idempotent WRITE Uncertain with ToolEffectUncertain and never runs it again', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const replyInbox = newInbox();
    const interrupted = await leftByCrash(scope, 'fixture.write', 'crash-write', { n: 1 }, replyInbox);
    const recorder = recordEvents(scope);
    await messaging.connection.flush();
    const reply = await invoke(scope, { toolId: 'fixture.write', arguments: { n: 1 }, idempotencyKey: 'crash-write', replyInbox });
    expect(reply.ok && reply.data.status).toBe('UNCERTAIN');
    expect(reply.ok && reply.data.receipt.failure?.code).toBe('UNKNOWN_OUTCOME');
    expect(reply.ok && reply.data.receipt.invocationId).toBe(interrupted.invocationId);
    await waitFor('ToolEffectUncertain', () => recorder.events.find((event) => event.type === 'ToolEffectUncertain'));
    recorder.stop();
    expect(await executions(scope)).toBe(0);
    // A later repeat replays the Uncertain receipt; nothing runs.
    const again = await invoke(scope, { toolId: 'fixture.write', arguments: { n: 1 }, idempotencyKey: 'crash-write' }, randomUUID());
    expect(again.ok && again.data.receipt).toEqual(reply.ok && reply.data.receipt);
    expect(await executions(scope)).toBe(0);
    expect((await stored(scope, 'crash-write'))?.state).toBe('Uncertain');
  });
});

describe('the effective tool set', () => {
  async function toolSet(scope: Scope, body: Omit<EffectiveToolSetRequest, 'contextToken'>, token?: string): Promise<EffectiveToolSet> {
    return request(messaging, {
      subject: commandSubject(scope, 'adapter', adapterOperations.effectiveTools),
      requestSchema: EffectiveToolSetRequest,
      replySchema: EffectiveToolSet,
      body: { ...body, contextToken: token ?? (await contextToken(scope)) },
      timeoutMs: 10_000,
    });
  }

  it('lists the tools the agent may call, and with explain why the others are hidden', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const all = await toolSet(scope, {});
    expect(all.agentId).toBe(agentId);
    expect(all.tools.map((tool) => [tool.toolId, tool.requiresApproval])).toEqual([
      ['fixture.count', false],
      ['fixture.echo', false],
      ['fixture.limited', false],
      ['fixture.purge', true],
      ['fixture.write', false],
    ]);
    expect(all.tools.find((tool) => tool.toolId === 'fixture.echo')).toMatchObject({ name: 'fixture__echo', inputSchema: { required: ['text'] } });

    const readOnly = await toolSet(scope, { restrictions: { maxSideEffectClass: 'READ' }, explain: true });
    expect(readOnly.tools.map((tool) => tool.toolId)).toEqual(['fixture.count', 'fixture.echo', 'fixture.limited']);
    expect(readOnly.hidden?.map((tool) => tool.toolId)).toEqual(['fixture.purge', 'fixture.write']);
    expect(readOnly.hidden?.every((tool) => tool.reasons.length > 0)).toBe(true);
  });

  it('refuses a forged context token', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const forger = await generateSigningKeyPair(agentKey.kid);
    await expect(toolSet(scope, {}, await contextToken(scope, forger))).rejects.toMatchObject({ code: 'AUTHENTICATION_FAILED' });
  });
});
