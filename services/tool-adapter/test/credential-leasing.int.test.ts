// Credential leasing end to end, in-process, over real NATS and FerretDB: the real secret broker (connections
// created, rotated and revoked through its request/reply contracts), the tool adapter with its sealing key, a
// stand-in for the registry's getServer answering with the secret-echo fixture server (stdio: the credential in an
// environment variable; Streamable HTTP: in headers), requests on the invocation work queue, events on the stream.
// NATS is a private nats-server: the work queue's durable consumer is one per stream, and the other in-process
// adapter tests of this workspace would otherwise take this file's requests (and it theirs).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  InvocationRequest,
  LifecycleEvent,
  POLICY_ADMIN_ROLE,
  ToolDescriptor,
  commandSubject,
  eventFilter,
  secretBrokerContracts,
  type InvocationReply,
  type McpServer,
  type Scope,
} from '@toolplane/contracts';
import { bearerHeaders, generateSigningKeyPair, type SigningKeyPair } from '@toolplane/auth';
import { fixtureSandboxProfile, FixtureServer, fixtureServerPath, type HttpServerProcess, sandboxScratchDir, startHttpFixture } from '@toolplane/mcp/testing';
import { connectMessaging, openKv, request, type Messaging, type ServeHandle, type TypedKv } from '@toolplane/messaging';
import { generateKek, generateRecipientKeyPair } from '@toolplane/sealing';
import { secretBrokerService } from '@toolplane/secret-broker';
import { startService, type RunningService } from '@toolplane/service-kit';
import { connectStore, type Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { descriptorBucket, toolAdapterService } from '../src/mod.js';
import {
  agentContextToken,
  agentProfileDocument,
  countFileOf,
  countedExecutions,
  fixtureServerDocument,
  httpServerDocument,
  insertAgentProfile,
  invokeAndAwaitReply,
  newReplyInbox,
  operatorClaims,
  operatorToken,
  putDescriptor,
  receiptSigningKey,
  serveStandInRegistry,
  stdioServerDocument,
  storedInvocation,
  testDescriptor,
  waitFor,
} from '../src/testing.js';
import { startNatsServer, type NatsServer } from './adapter-harness.js';

const infra = testScope('credlease');
const deadlineMs = 30_000;
const tenant = infra.prefix.toLowerCase();
const agentId = 'agent-vault';
const adapterKeys = generateRecipientKeyPair();
/** The stand-in registry answers this server id with the secret-echo fixture over Streamable HTTP. */
const httpServerId = randomUUID();
/** …and this one with the secret-echo fixture over stdio with no connection-backed setting. */
const plainServerId = randomUUID();

let nats: NatsServer;
let natsUrl: string;
let agentKey: SigningKeyPair;
let operatorKey: SigningKeyPair;
let broker: RunningService | undefined;
let adapter: RunningService;
let messaging: Messaging;
let store: Store;
let descriptors: TypedKv<ToolDescriptor>;
let registry: ServeHandle;
let httpFixture: HttpServerProcess;
let tmp: string;
/** Per workspace, the server id its stdio tools are bound to. */
const serverIds = new Map<string, string>();

beforeAll(async () => {
  nats = await startNatsServer();
  natsUrl = nats.url;
  agentKey = await generateSigningKeyPair('vault-agent-1');
  operatorKey = await generateSigningKeyPair('vault-operator-1');
  tmp = await sandboxScratchDir('adapter-credentials-');
  const common = { NATS_URL: natsUrl, MONGODB_URL: infra.mongoUrl, MONGODB_DATABASE: infra.dbName, HTTP_PORT: '0', LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent' };
  broker = await startService(secretBrokerService, {
    ...common,
    SECRET_BROKER_KEKS: JSON.stringify({ current: 'k1', keys: { k1: generateKek() } }),
    SECRET_BROKER_RECIPIENTS: JSON.stringify({ 'tool-adapter': adapterKeys.publicKey }),
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [tenant]: [operatorKey.publicJwk] }),
  });
  adapter = await startService(toolAdapterService, {
    ...common,
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [tenant]: [agentKey.publicJwk] }),
    ADAPTER_SIGNING_KEY: receiptSigningKey().setting,
    TOOL_ADAPTER_SECRET_KEY: adapterKeys.privateKey,
    ADAPTER_SECRET_BROKER_TIMEOUT_MS: '1000',
  });
  messaging = await connectMessaging({ url: natsUrl, name: 'adapter-credentials-test' });
  store = await connectStore({ url: infra.mongoUrl, dbName: infra.dbName, appName: 'adapter-credentials-test' });
  descriptors = await openKv(messaging, descriptorBucket, ToolDescriptor);
  httpFixture = await startHttpFixture(FixtureServer.secretEcho);
  registry = await serveStandInRegistry(messaging, {
    queue: `test-registry-${infra.prefix}`,
    serverFor: (serverId, scope) => {
      if (serverId === httpServerId) return httpServer(scope);
      if (serverId === plainServerId) return fixtureServerDocument({ serverId, scope, name: 'vault' }, FixtureServer.secretEcho, countFileOf(tmp, scope));
      return stdioServer(scope, serverId);
    },
  });
}, 60_000);

afterAll(async () => {
  await registry?.stop();
  await adapter?.stop();
  await broker?.stop();
  await httpFixture?.stop();
  await messaging?.drain();
  await nats?.stop();
  await store?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** The secret-echo fixture over stdio: ECHO_TOKEN from connection `echo-token`, a plain COUNT_FILE. */
function stdioServer(scope: Scope, serverId: string): McpServer {
  return stdioServerDocument(
    { serverId, scope, name: 'vault' },
    {
      args: [fixtureServerPath(FixtureServer.secretEcho)],
      env: [
        { name: 'ECHO_TOKEN', connectionRef: 'echo-token' },
        { name: 'COUNT_FILE', value: countFileOf(tmp, scope) },
      ],
      sandbox: fixtureSandboxProfile(FixtureServer.secretEcho, { COUNT_FILE: countFileOf(tmp, scope) }),
    },
  );
}

/** The secret-echo fixture over HTTP: header X-Echo-Token from `echo-token`, Authorization from the server's own `server-auth`. */
function httpServer(scope: Scope): McpServer {
  return httpServerDocument(
    { serverId: httpServerId, scope, name: 'vault-http' },
    { endpointUrl: httpFixture.url, headers: [{ name: 'X-Echo-Token', connectionRef: 'echo-token' }], connectionRef: 'server-auth' },
  );
}

function executions(scope: Scope): Promise<number> {
  return countedExecutions(countFileOf(tmp, scope), (line) => line.startsWith('reveal_'));
}

let workspaces = 0;
/** Each test works in a workspace of its own: its own connections, agent profile and tools. */
async function freshScope(): Promise<Scope> {
  workspaces += 1;
  const scope = { tenant, workspace: `w${workspaces}_${randomUUID().slice(0, 8)}` };
  serverIds.set(scope.workspace, randomUUID());
  await insertAgentProfile(messaging, agentProfileDocument(scope, agentId, ['vault.*']));
  await bindTool(scope, 'vault.reveal', 'reveal_env', ['echo-token']);
  return scope;
}

async function bindTool(scope: Scope, toolId: string, providerToolName: string, secretDependencies: string[], overrides: Partial<ToolDescriptor> = {}): Promise<void> {
  const inputSchema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
  await putDescriptor(descriptors, testDescriptor({ scope, toolId, providerToolName, mcpServerId: serverIds.get(scope.workspace), inputSchema }, { definitionHash: 'b'.repeat(64), secretDependencies, ...overrides }));
}

type Operation = keyof typeof secretBrokerContracts;
/** One secret-broker operation in a scope, as the CLI sends it: with an operator token (policy-admin) of the scope. */
async function secrets<K extends Operation>(scope: Scope, operation: K, body: z.input<(typeof secretBrokerContracts)[K]['request']>): Promise<z.output<(typeof secretBrokerContracts)[K]['reply']>> {
  const contract = secretBrokerContracts[operation];
  const token = await operatorToken(operatorKey, operatorClaims(scope, [POLICY_ADMIN_ROLE], 'user:vault-admin'), '10m');
  return request(messaging, {
    subject: commandSubject(scope, 'secrets', operation),
    requestSchema: contract.request,
    replySchema: contract.reply,
    body,
    timeoutMs: 15_000,
    headers: bearerHeaders(token),
  }) as Promise<z.output<(typeof secretBrokerContracts)[K]['reply']>>;
}

/** A bearer token with characters that base64 and URL encoding change, so each encoded form is distinct. */
function canary(): string {
  return `tp-canary/${randomBytes(12).toString('hex')}+k=v&x`;
}

/** Every form of a secret that must not leave the adapter. */
function forms(secret: string): string[] {
  return [secret, Buffer.from(secret).toString('base64'), Buffer.from(secret).toString('base64url'), encodeURIComponent(secret)];
}

function contextToken(scope: Scope): Promise<string> {
  return agentContextToken(agentKey, scope, { agentId, agentRevision: '1' });
}

async function invoke(scope: Scope, toolId: string, args: Record<string, unknown>, idempotencyKey: string): Promise<InvocationReply> {
  const body = InvocationRequest.parse({ correlationId: 'run-1', toolId, arguments: args, idempotencyKey, contextToken: await contextToken(scope), replyInbox: newReplyInbox() });
  return invokeAndAwaitReply(messaging, scope, body, { timeoutMs: deadlineMs });
}

/** Records a scope's lifecycle events (the adapter's and the broker's) from now on. */
async function recordEvents(scope: Scope): Promise<{ readonly events: LifecycleEvent[]; readonly raw: string[]; stop(): void }> {
  const events: LifecycleEvent[] = [];
  const raw: string[] = [];
  const subscription = messaging.connection.subscribe(eventFilter(scope), {
    callback: (error, message) => {
      if (error) return;
      raw.push(message.string());
      events.push(LifecycleEvent.parse(JSON.parse(message.string())));
    },
  });
  await messaging.connection.flush();
  return { events, raw, stop: () => subscription.unsubscribe() };
}

function stored(scope: Scope, idempotencyKey: string) {
  return storedInvocation(messaging, scope, idempotencyKey);
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('credential leasing', () => {
  it('leases a secret into the tool’s environment and scrubs it, in every encoding, from the reply, the events and the document', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const secret = canary();
    await secrets(scope, 'createConnection', { name: 'echo-token', allowedTools: ['vault.reveal'], credential: { kind: 'bearer', token: secret } });
    const recorder = await recordEvents(scope);

    const reply = await invoke(scope, 'vault.reveal', { name: 'ECHO_TOKEN' }, 'reveal-1');
    expect(reply.ok).toBe(true);
    if (!reply.ok) return;
    expect(reply.data.status).toBe('SUCCESS');
    // The tool received exactly the secret: its length and hash, which carry no secret, come back intact.
    expect(reply.data.structuredContent).toMatchObject({ present: true, length: secret.length, sha256: sha256(secret) });
    expect(reply.data.structuredContent?.['value']).toBe('[REDACTED]');
    expect(reply.data.textContent).toContain('[REDACTED]');

    const terminal = await waitFor('ToolCallCompleted', () => recorder.events.find((event) => event.type === 'ToolCallCompleted'));
    await waitFor('the broker’s SecretLeased', () => recorder.events.find((event) => event.type === 'SecretLeased'));
    recorder.stop();
    const document = await stored(scope, 'reveal-1');
    expect(document?.state).toBe('Observed');
    const leaseIds = document?.secretLeaseIds ?? [];
    expect(leaseIds).toHaveLength(1);
    const started = recorder.events.find((event) => event.type === 'ToolCallStarted');
    expect(started?.type === 'ToolCallStarted' && started.data.secretLeaseIds).toEqual(leaseIds);
    expect(terminal.metadata).toMatchObject({ invocationId: reply.data.receipt.invocationId });
    // The broker recorded the same lease, for this invocation and tool.
    const lease = await store.db.collection('secret_leases').findOne({ leaseId: leaseIds[0] });
    expect(lease).toMatchObject({ invocationId: reply.data.receipt.invocationId, toolId: 'vault.reveal' });

    const everything = [JSON.stringify(reply), ...recorder.raw, JSON.stringify(document)].join('\n');
    for (const form of forms(secret)) expect(everything).not.toContain(form);
    expect(await executions(scope)).toBe(1);
  });

  it('scrubs a leased secret from an embedded text resource of the result, keeping the block and its URI', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const secret = canary();
    await bindTool(scope, 'vault.resource', 'reveal_env_resource', ['echo-token']);
    await secrets(scope, 'createConnection', { name: 'echo-token', allowedTools: ['vault.resource'], credential: { kind: 'bearer', token: secret } });
    const reply = await invoke(scope, 'vault.resource', { name: 'ECHO_TOKEN' }, 'resource-1');
    expect(reply.ok).toBe(true);
    if (!reply.ok) return;
    expect(reply.data.status).toBe('SUCCESS');
    const resource = reply.data.content?.find((block) => block.type === 'resource');
    expect(resource).toMatchObject({ type: 'resource', resource: { uri: 'env://ECHO_TOKEN', mimeType: 'text/plain' } });
    const text = resource?.type === 'resource' && 'text' in resource.resource ? resource.resource.text : '';
    expect(text).toContain('value=[REDACTED]');
    // The tool was given the secret (its length, no secret, comes back intact), and it left the result in no form.
    expect(text).toContain(`length=${secret.length}`);
    const document = await stored(scope, 'resource-1');
    const everything = [JSON.stringify(reply), JSON.stringify(document)].join('\n');
    for (const form of forms(secret)) expect(everything).not.toContain(form);
  });

  it('scrubs a leased secret from a failure the tool reports, in the reply, the ToolCallFailed event and the document', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const secret = canary();
    await bindTool(scope, 'vault.fail', 'fail_with_env', ['echo-token']);
    await secrets(scope, 'createConnection', { name: 'echo-token', allowedTools: ['vault.fail'], credential: { kind: 'bearer', token: secret } });
    const recorder = await recordEvents(scope);

    const reply = await invoke(scope, 'vault.fail', { name: 'ECHO_TOKEN' }, 'fail-1');
    expect(reply.ok && reply.data.status).toBe('FAILED');
    const message = reply.ok ? (reply.data.receipt.failure?.message ?? '') : '';
    expect(message).toContain('upstream refused credential [REDACTED]');
    await waitFor('ToolCallFailed', () => recorder.events.find((event) => event.type === 'ToolCallFailed'));
    recorder.stop();
    const everything = [JSON.stringify(reply), ...recorder.raw, JSON.stringify(await stored(scope, 'fail-1'))].join('\n');
    for (const form of forms(secret)) expect(everything).not.toContain(form);
  });

  it('refuses a call whose connection was revoked at CREDENTIAL_BROKER, and the tool never runs', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const secret = canary();
    await secrets(scope, 'createConnection', { name: 'echo-token', allowedTools: ['vault.reveal'], credential: { kind: 'bearer', token: secret } });
    await secrets(scope, 'revokeConnection', { connectionRef: 'echo-token', reason: 'leaked' });
    const recorder = await recordEvents(scope);

    const reply = await invoke(scope, 'vault.reveal', { name: 'ECHO_TOKEN' }, 'revoked');
    expect(reply.ok && reply.data.status).toBe('DENIED');
    expect(reply.ok && reply.data.receipt.failure).toMatchObject({ code: 'AUTHORIZATION_DENIED', retryable: false });
    const document = await stored(scope, 'revoked');
    expect(document).toMatchObject({ state: 'Denied', deniedStage: 'CREDENTIAL_BROKER', secretLeaseIds: [] });
    const denied = await waitFor('InvocationDenied', () => recorder.events.find((event) => event.type === 'InvocationDenied'));
    recorder.stop();
    expect(denied.type === 'InvocationDenied' && denied.data.stage).toBe('CREDENTIAL_BROKER');
    expect(recorder.events.map((event) => event.type)).not.toContain('ToolCallStarted');
    expect(await executions(scope)).toBe(0);
  });

  it('refuses a connection that does not allow the tool, with the broker’s code, before anything runs', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    await secrets(scope, 'createConnection', { name: 'echo-token', allowedTools: ['vault.other'], credential: { kind: 'bearer', token: canary() } });
    const reply = await invoke(scope, 'vault.reveal', { name: 'ECHO_TOKEN' }, 'not-allowed');
    expect(reply.ok && reply.data.receipt.failure?.code).toBe('AUTHORIZATION_DENIED');
    const missing = await freshScope();
    const unknown = await invoke(missing, 'vault.reveal', { name: 'ECHO_TOKEN' }, 'no-connection');
    expect(unknown.ok && unknown.data.status).toBe('DENIED');
    expect(unknown.ok && unknown.data.receipt.failure?.code).toBe('NOT_FOUND');
    expect(await executions(scope)).toBe(0);
    expect(await executions(missing)).toBe(0);
  });

  it('gives the next call a rotated credential, in a process of its own', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const first = canary();
    const second = canary();
    await secrets(scope, 'createConnection', { name: 'echo-token', allowedTools: ['vault.reveal'], credential: { kind: 'bearer', token: first } });
    const before = await invoke(scope, 'vault.reveal', { name: 'ECHO_TOKEN' }, 'before-rotation');
    expect(before.ok && before.data.structuredContent).toMatchObject({ sha256: sha256(first) });

    await secrets(scope, 'rotateConnection', { connectionRef: 'echo-token', credential: { kind: 'bearer', token: second } });
    const after = await invoke(scope, 'vault.reveal', { name: 'ECHO_TOKEN' }, 'after-rotation');
    expect(after.ok && after.data.status).toBe('SUCCESS');
    expect(after.ok && after.data.structuredContent).toMatchObject({ sha256: sha256(second), length: second.length });
    // Another credential set is another pool key: the rotated secret never reaches the old process.
    const instanceOf = (reply: typeof after) => (reply.ok ? reply.data.structuredContent?.['instance'] : undefined);
    expect(instanceOf(before)).toEqual(expect.any(String));
    expect(instanceOf(after)).not.toBe(instanceOf(before));
    for (const form of forms(second)) expect(JSON.stringify(after)).not.toContain(form);
    expect(await executions(scope)).toBe(2);
  });

  it('puts leased credentials in the headers of a Streamable HTTP server: a named header and Authorization from the server’s connection', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const headerSecret = canary();
    const serverSecret = canary();
    await secrets(scope, 'createConnection', { name: 'echo-token', allowedTools: ['vault.header', 'vault.auth'], credential: { kind: 'api-key', apiKey: headerSecret } });
    await secrets(scope, 'createConnection', { name: 'server-auth', allowedTools: ['vault.header', 'vault.auth'], credential: { kind: 'bearer', token: serverSecret } });
    await bindTool(scope, 'vault.header', 'reveal_header', [], { mcpServerId: httpServerId });
    await bindTool(scope, 'vault.auth', 'reveal_header', [], { mcpServerId: httpServerId });

    const header = await invoke(scope, 'vault.header', { name: 'X-Echo-Token' }, 'http-header');
    expect(header.ok && header.data.status).toBe('SUCCESS');
    expect(header.ok && header.data.structuredContent).toMatchObject({ present: true, sha256: sha256(headerSecret), value: '[REDACTED]' });
    const auth = await invoke(scope, 'vault.auth', { name: 'Authorization' }, 'http-authorization');
    expect(auth.ok && auth.data.structuredContent).toMatchObject({ present: true, sha256: sha256(`Bearer ${serverSecret}`) });
    const documents = [await stored(scope, 'http-header'), await stored(scope, 'http-authorization')];
    expect(documents.map((document) => document?.secretLeaseIds.length)).toEqual([2, 2]);
    const everything = [JSON.stringify(header), JSON.stringify(auth), JSON.stringify(documents)].join('\n');
    for (const form of [...forms(headerSecret), ...forms(serverSecret)]) expect(everything).not.toContain(form);
  });

  it('refuses a call when the secret broker does not answer: TEMPORARY_UNAVAILABLE, retryable, nothing run', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    await secrets(scope, 'createConnection', { name: 'echo-token', allowedTools: ['vault.reveal'], credential: { kind: 'bearer', token: canary() } });
    await broker?.stop();
    broker = undefined;
    const reply = await invoke(scope, 'vault.reveal', { name: 'ECHO_TOKEN' }, 'broker-away');
    expect(reply.ok && reply.data.status).toBe('DENIED');
    expect(reply.ok && reply.data.receipt.failure).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', retryable: true });
    expect((await stored(scope, 'broker-away'))?.deniedStage).toBe('CREDENTIAL_BROKER');
    expect(await executions(scope)).toBe(0);
  });
});

describe('an adapter without a sealing key', () => {
  it('refuses a call that needs credentials, saying why, and still runs one that needs none', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    await bindTool(scope, 'vault.plain', 'reveal_env', [], { mcpServerId: plainServerId });
    // The only adapter consuming the work queue from here on is one without TOOL_ADAPTER_SECRET_KEY.
    await adapter.stop();
    adapter = await startService(toolAdapterService, {
      NATS_URL: natsUrl,
      MONGODB_URL: infra.mongoUrl,
      MONGODB_DATABASE: infra.dbName,
      HTTP_PORT: '0',
      LOG_LEVEL: 'silent',
      TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [tenant]: [agentKey.publicJwk] }),
    });
    const refused = await invoke(scope, 'vault.reveal', { name: 'ECHO_TOKEN' }, 'no-key');
    expect(refused.ok && refused.data.status).toBe('DENIED');
    expect(refused.ok && refused.data.receipt.failure?.message).toContain('TOOL_ADAPTER_SECRET_KEY');
    expect((await stored(scope, 'no-key'))?.deniedStage).toBe('CREDENTIAL_BROKER');
    expect(await executions(scope)).toBe(0);
    // A tool whose server names no connection needs no lease and runs as before.
    const plain = await invoke(scope, 'vault.plain', { name: 'COUNT_FILE' }, 'no-key-plain');
    expect(plain.ok && plain.data.status).toBe('SUCCESS');
    expect(plain.ok && plain.data.structuredContent).toMatchObject({ present: true, value: countFileOf(tmp, scope) });
    expect(await executions(scope)).toBe(1);
  });
});

describe('the sealing key setting', () => {
  it('stops the start with one line naming TOOL_ADAPTER_SECRET_KEY, never echoing it', async () => {
    const bad = 'definitely-not-a-key-value';
    const failure = await startService(toolAdapterService, { NATS_URL: natsUrl, MONGODB_URL: infra.mongoUrl, TOOL_ADAPTER_SECRET_KEY: bad }).then(
      () => new Error('started'),
      (error: unknown) => error as Error,
    );
    expect(failure.message).toContain('TOOL_ADAPTER_SECRET_KEY');
    expect(failure.message).not.toContain(bad);
    expect(failure.message.split('\n')).toHaveLength(1);
  });
});
