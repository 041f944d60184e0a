// The SDK against the tool adapter started in-process over real NATS and FerretDB: descriptors in the registry's KV
// read model, a stand-in for the registry's getServer responder, the counting fixture MCP server over stdio (so a
// test can count executions), and agent context tokens signed with a key the adapter trusts.
import { spawn } from 'node:child_process';
import { randomUUID, type KeyObject } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InvocationRequest,
  ToolDescriptor,
  invocationRequestMsgId,
  invocationRequestSubject,
  streams,
  type LifecycleEvent,
  type Scope,
} from '@toolplane/contracts';
import { generateSigningKeyPair, type SigningKeyPair } from '@toolplane/auth';
import { FixtureServer, sandboxScratchDir } from '@toolplane/mcp/testing';
import { connectMessaging, openKv, publish, type Messaging, type ServeHandle, type TypedKv } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { connectStore, type Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { startPrivateNats, type PrivateNats } from './platform-harness.js';
import { descriptorBucket, toolAdapterService } from '@toolplane/tool-adapter';
import {
  adapterTestEnv,
  agentContextToken,
  agentProfileDocument,
  countFileOf,
  countedExecutions,
  fixtureServerDocument,
  insertAgentProfile,
  putDescriptor,
  receiptSigningKey,
  serveStandInRegistry,
  testDescriptor,
} from '@toolplane/tool-adapter/testing';
import { runCli } from '@toolplane/cli';
import { createToolplaneClient, requireSuccess, verifyReceipt, type ClientDiagnostic, type ToolplaneClient } from '@toolplane/client';

const infra = testScope('client');
const tenant = infra.prefix;
const agentId = 'agent-support';
const principal = 'user:alice@acme.example';
const receiptKeyId = 'client-test-adapter';

let agentKey: SigningKeyPair;
let receiptPublicKey: KeyObject;
let adapter: RunningService;
let messaging: Messaging;
let store: Store;
let descriptors: TypedKv<ToolDescriptor>;
let registry: ServeHandle;
let tmp: string;
/** A nats-server of this file's own: the adapter's work-queue consumer is one per stream, and other files start adapters too. */
let nats: PrivateNats;
const serverIds = new Map<string, string>();
const clients: ToolplaneClient[] = [];

beforeAll(async () => {
  agentKey = await generateSigningKeyPair(`${tenant}-agent-1`);
  const receiptKeys = receiptSigningKey();
  receiptPublicKey = receiptKeys.publicKey;
  tmp = await sandboxScratchDir('client-int-');
  nats = await startPrivateNats(tmp);
  adapter = await startService(
    toolAdapterService,
    adapterTestEnv({ natsUrl: nats.url, mongoUrl: infra.mongoUrl, dbName: infra.dbName, trustedKeys: { [tenant]: [agentKey.publicJwk] }, signingKey: receiptKeys.setting, signingKeyId: receiptKeyId }),
  );
  messaging = await connectMessaging({ url: nats.url, name: `${infra.prefix}_client` });
  store = await connectStore({ url: infra.mongoUrl, dbName: infra.dbName, appName: 'client-int-test' });
  descriptors = await openKv(messaging, descriptorBucket, ToolDescriptor);
  // Stands in for the registry's getServer: the counting fixture, counting into a file of the asking workspace.
  registry = await serveStandInRegistry(messaging, {
    tenant,
    serverFor: (serverId, scope) => fixtureServerDocument({ serverId, scope, name: 'fixture' }, FixtureServer.countingEcho, countFileOf(tmp, scope)),
  });
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await registry?.stop();
  await adapter?.stop();
  await messaging?.drain();
  await store?.close();
  await nats?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** Each test works in a workspace of its own, with the agent's profile and three fixture tools. */
async function freshScope(): Promise<Scope> {
  const scope = { tenant, workspace: `w_${randomUUID().slice(0, 8)}` };
  serverIds.set(scope.workspace, randomUUID());
  await insertAgentProfile(messaging, agentProfileDocument(scope, agentId, ['fixture.*']));
  await bindTool(scope, 'fixture.echo', 'echo', { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
  await bindTool(scope, 'fixture.count', 'count_calls', { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false });
  // Declared DESTRUCTIVE: the default tenant policy parks it for an approval nobody gives here.
  await bindTool(scope, 'fixture.purge', 'count_calls', { type: 'object', properties: { n: { type: 'integer' } } }, { sideEffectClass: 'DESTRUCTIVE', riskClass: 'HIGH', idempotency: 'NONE' });
  return scope;
}

/** How often the fixture's count_calls really ran in a workspace. */
function executions(scope: Scope): Promise<number> {
  return countedExecutions(countFileOf(tmp, scope));
}

async function bindTool(scope: Scope, toolId: string, providerToolName: string, inputSchema: object, overrides: Partial<ToolDescriptor> = {}): Promise<void> {
  const retryPolicy = { maxAttempts: 2, initialBackoffMs: 50, maxBackoffMs: 200 };
  await putDescriptor(descriptors, testDescriptor({ scope, toolId, providerToolName, mcpServerId: serverIds.get(scope.workspace), inputSchema }, { retryPolicy, ...overrides }));
}

function tokenFor(scope: Scope, options: { key?: SigningKeyPair; agent?: string; principal?: string } = {}): Promise<string> {
  return agentContextToken(options.key ?? agentKey, scope, { agentId: options.agent ?? agentId, principal: options.principal ?? principal });
}

async function clientFor(scope: Scope, options: { token?: string; dropReplies?: boolean; diagnostics?: ClientDiagnostic[]; recoverAfterMs?: number } = {}): Promise<ToolplaneClient> {
  const client = await createToolplaneClient({
    messaging,
    scope,
    // A function: every request gets a fresh token, as a long-running runtime would do it.
    contextToken: options.token === undefined ? () => tokenFor(scope) : options.token,
    defaultTimeoutMs: 20_000,
    ...(options.recoverAfterMs === undefined ? {} : { recoverAfterMs: options.recoverAfterMs }),
    ...(options.dropReplies === true ? { dropRepliesForTesting: true } : {}),
    ...(options.diagnostics === undefined ? {} : { onDiagnostic: (diagnostic: ClientDiagnostic) => options.diagnostics?.push(diagnostic) }),
  });
  clients.push(client);
  return client;
}

/** The ordered consumers following this workspace's events. */
async function consumersOf(scope: Scope): Promise<string[]> {
  const names: string[] = [];
  for await (const info of messaging.manager.consumers.list(streams.events.name)) {
    const filters = [info.config.filter_subject, ...(info.config.filter_subjects ?? [])];
    if (filters.some((filter) => filter?.startsWith(`tp.v1.evt.${scope.tenant}.${scope.workspace}.`))) names.push(info.name);
  }
  return names;
}

const receiptKeys = () => new Map([[receiptKeyId, receiptPublicKey]]);

/** Runs `toolplane …` in-process as the agent of `scope`: its exit code, standard output and standard error. */
async function toolplaneAsAgent(scope: Scope, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const env = { TOOLPLANE_NATS_URL: nats.url, TOOLPLANE_TENANT: scope.tenant, TOOLPLANE_WORKSPACE: scope.workspace, TOOLPLANE_AGENT_TOKEN: await tokenFor(scope) };
  const code = await runCli(argv, { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readStdin: () => Promise.resolve(''), env });
  return { code, out, err };
}

/** Stops the file's nats-server and starts it again on the same port and store, as a restarted server comes back. */
async function restartNatsAfter(stopped: () => Promise<void>): Promise<void> {
  const port = new URL(nats.url).port;
  const previous = nats;
  await previous.stop();
  await stopped();
  const child = spawn(previous.child.spawnfile, ['--jetstream', '--store_dir', path.join(tmp, 'nats'), '--addr', '127.0.0.1', '--port', port, '--server_name', `e2e-${port}`], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  nats = {
    url: previous.url,
    child,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The next connection status of `type`, in the order the connection reports them. */
function nextStatus(statuses: AsyncIterator<{ type: string }>, type: string): Promise<void> {
  return (async () => {
    for (;;) {
      const next = await statuses.next();
      if (next.done === true) throw new Error(`the connection closed before a ${type} status`);
      if (next.value.type === type) return;
    }
  })();
}

describe('the agent-runtime SDK', () => {
  it('invokes a tool: SUCCESS with untrusted content and a receipt that verifies offline', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const client = await clientFor(scope);
    const result = await client.invoke('fixture.echo', { text: 'hello from the runtime' }, { idempotencyKey: 'echo-1', toolCallId: 'call-echo-1' });
    expect(result).toMatchObject({ status: 'SUCCESS', structuredContent: { text: 'hello from the runtime' }, provenance: 'untrusted-tool-data' });
    expect(result.receipt).toMatchObject({ ...scope, state: 'Observed', idempotencyKey: 'echo-1', toolCallId: 'call-echo-1', principal, agentId, toolId: 'fixture.echo' });
    expect(verifyReceipt(result.receipt, receiptKeys())).toEqual({ valid: true, receipt: result.receipt });
    expect(verifyReceipt({ ...result.receipt, toolId: 'fixture.count' }, receiptKeys()).valid).toBe(false);
    expect(requireSuccess(result)).toBe(result);
  });

  it('returns a call with invalid arguments as DENIED with INVALID_ARGUMENT, and nothing runs', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const client = await clientFor(scope);
    const result = await client.invoke('fixture.count', { n: 'not a number' });
    expect(result.status).toBe('DENIED');
    expect(result.receipt.failure).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(result.structuredContent).toBeUndefined();
    expect(verifyReceipt(result.receipt, receiptKeys()).valid).toBe(true);
    expect(() => requireSuccess(result)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(await executions(scope)).toBe(0);
  });

  it('throws AUTHENTICATION_FAILED for a token signed with a key the adapter does not trust', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const forger = await generateSigningKeyPair(agentKey.kid);
    const client = await clientFor(scope, { token: await tokenFor(scope, { key: forger }) });
    await expect(client.invoke('fixture.count', {}, { idempotencyKey: 'forged-1' })).rejects.toMatchObject({ name: 'ToolplaneError', code: 'AUTHENTICATION_FAILED' });
    await expect(client.lookup('forged-1')).rejects.toMatchObject({ code: 'AUTHENTICATION_FAILED' });
    expect(await executions(scope)).toBe(0);
  });

  it('runs one execution for the same key twice, and both calls get the same receipt', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const client = await clientFor(scope);
    const first = await client.invoke('fixture.count', { n: 1 }, { idempotencyKey: 'count-1' });
    const second = await client.invoke('fixture.count', { n: 1 }, { idempotencyKey: 'count-1' });
    expect(first.status).toBe('SUCCESS');
    expect(second).toEqual(first);
    expect(await executions(scope)).toBe(1);
    // The same key with other arguments is another request under a taken key.
    await expect(client.invoke('fixture.count', { n: 2 }, { idempotencyKey: 'count-1' })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await executions(scope)).toBe(1);
  });

  it('answers CONFLICT every time the same key comes with another request, though the repeat is a duplicate publish', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const client = await clientFor(scope);
    const first = await client.invoke('fixture.echo', { text: 'idem' }, { idempotencyKey: 'b-1' });
    expect(first.status).toBe('SUCCESS');
    // The second try of the conflicting request is a duplicate Nats-Msg-Id: its outcome is learnt by lookup.
    for (let round = 0; round < 2; round += 1) {
      await expect(client.invoke('fixture.echo', { text: 'different' }, { idempotencyKey: 'b-1' })).rejects.toMatchObject({ code: 'CONFLICT', retryable: false });
    }
    // A lookup that names the request it means is refused the other request's result; one that names none gets it.
    await expect(client.lookup('b-1', { request: { toolId: 'fixture.echo', arguments: { text: 'different' } } })).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(client.lookup('b-1', { request: { toolId: 'fixture.count', arguments: { text: 'idem' } } })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await client.lookup('b-1', { request: { toolId: 'fixture.echo', toolVersion: '1', arguments: { text: 'idem' } } })).result).toEqual(first);
    expect((await client.lookup('b-1')).result).toEqual(first);
  });

  it('answers CONFLICT every time for a WRITE under a taken key, and the second entity is never written', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    await bindTool(scope, 'fixture.write', 'count_calls', { type: 'object', properties: { n: { type: 'integer' } } }, { sideEffectClass: 'WRITE', idempotency: 'NONE' });
    const client = await clientFor(scope, { recoverAfterMs: 300 });
    expect((await client.invoke('fixture.write', { n: 1 }, { idempotencyKey: 'w-1' })).status).toBe('SUCCESS');
    for (let round = 0; round < 2; round += 1) {
      await expect(client.invoke('fixture.write', { n: 2 }, { idempotencyKey: 'w-1' })).rejects.toMatchObject({ code: 'CONFLICT' });
    }
    // A client that learns every outcome by lookup is refused the same way.
    const lookingUp = await clientFor(scope, { dropReplies: true, recoverAfterMs: 100 });
    await expect(lookingUp.invoke('fixture.write', { n: 3 }, { idempotencyKey: 'w-1' })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await executions(scope)).toBe(1);
  });

  it('recovers a reply that never arrives by looking the call up, with exactly one execution', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const diagnostics: ClientDiagnostic[] = [];
    const client = await clientFor(scope, { dropReplies: true, recoverAfterMs: 300, diagnostics });
    const result = await client.invoke('fixture.count', { n: 5 }, { durableExecutionId: 'run-1/step-3', agentRevision: '7' });
    expect(result.status).toBe('SUCCESS');
    expect(verifyReceipt(result.receipt, receiptKeys()).valid).toBe(true);
    expect(diagnostics).toContainEqual({ type: 'reply_lost', idempotencyKey: result.receipt.idempotencyKey, reason: 'no_reply_yet' });
    expect(diagnostics.some((diagnostic) => diagnostic.type === 'recovered')).toBe(true);
    expect(await executions(scope)).toBe(1);
    // The key the client derived is the adapter's: lookup by it finds the same receipt.
    expect((await client.lookup(result.receipt.idempotencyKey)).result).toEqual(result);
  });

  it('recovers the outcome of a request whose reply went to an inbox nobody reads, instead of invoking again', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    // A runtime sent the request and crashed before reading the reply.
    const request = InvocationRequest.parse({
      toolId: 'fixture.count',
      arguments: { n: 9 },
      idempotencyKey: 'orphan-1',
      correlationId: 'run-2',
      contextToken: await tokenFor(scope),
      timeoutMs: 20_000,
      replyInbox: 'inbox_nobody_listens',
    });
    await publish(messaging, { subject: invocationRequestSubject(scope), schema: InvocationRequest, message: request, msgId: invocationRequestMsgId(scope, request) });
    // Its restarted incarnation calls again with the same key and arguments.
    const diagnostics: ClientDiagnostic[] = [];
    const client = await clientFor(scope, { diagnostics });
    const result = await client.invoke('fixture.count', { n: 9 }, { idempotencyKey: 'orphan-1', timeoutMs: 20_000 });
    expect(result.status).toBe('SUCCESS');
    expect(diagnostics).toContainEqual({ type: 'reply_lost', idempotencyKey: 'orphan-1', reason: 'duplicate_request' });
    expect(await executions(scope)).toBe(1);
  });

  it('ends the wait with CANCELLED when the signal aborts, and the call can still be looked up', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const client = await clientFor(scope);
    const events = client.events({ types: ['ApprovalRequested'], since: 'all' });
    const controller = new AbortController();
    const call = client.invoke('fixture.purge', { n: 1 }, { idempotencyKey: 'purge-1', signal: controller.signal });
    // The gated call is parked on its approval; the runtime gives up waiting.
    const requested = await events.next();
    expect(requested.value?.type).toBe('ApprovalRequested');
    await events.close();
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: 'CANCELLED' });
    const found = await client.lookup('purge-1');
    expect(found).toMatchObject({ state: 'AwaitingApproval', attempt: 1 });
    expect(found.result).toBeUndefined();
    expect(await executions(scope)).toBe(0);
  });

  it('ends the wait with APPROVAL_PENDING (retryable, naming the key and the approval) when a parked call outlives it', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const client = await createToolplaneClient({ messaging, scope, contextToken: await tokenFor(scope), recoveryGraceMs: 200, recoverAfterMs: 200 });
    clients.push(client);
    const invoking = client.invoke('fixture.purge', { n: 2 }, { idempotencyKey: 'purge-2', timeoutMs: 1_500 });
    await expect(invoking).rejects.toMatchObject({ code: 'APPROVAL_PENDING', retryable: true, details: { idempotencyKey: 'purge-2', state: 'AwaitingApproval' } });
    const parked = await client.lookup('purge-2');
    expect(parked.approvalId).toBeDefined();
    // The error names the approval the call waits for.
    const pending = { code: 'APPROVAL_PENDING', retryable: true, details: { idempotencyKey: 'purge-2', approvalId: parked.approvalId, state: 'AwaitingApproval' } };
    await expect(invoking).rejects.toMatchObject(pending);
    // Re-attaching by key while nobody decided says the same.
    await expect(client.await('purge-2', { timeoutMs: 500 })).rejects.toMatchObject(pending);
    expect(await executions(scope)).toBe(0);
  });

  it('re-attaches to a call by its key: the outcome of a finished call, NOT_FOUND for a key never used, CONFLICT for another request', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const client = await clientFor(scope);
    const result = await client.invoke('fixture.count', { n: 4 }, { idempotencyKey: 'await-1' });
    expect(result.status).toBe('SUCCESS');
    expect(await client.await('await-1', { timeoutMs: 5_000 })).toEqual(result);
    expect(await client.await('await-1', { expect: { toolId: 'fixture.count', arguments: { n: 4 } } })).toEqual(result);
    await expect(client.await('await-1', { expect: { toolId: 'fixture.count', arguments: { n: 5 } } })).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(client.await('never-used', { timeoutMs: 5_000 })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await executions(scope)).toBe(1);
  });

  it('answers lookups only to the agent that made the call', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const client = await clientFor(scope);
    const result = await client.invoke('fixture.echo', { text: 'mine' }, { idempotencyKey: 'private-1' });
    expect((await client.lookup('private-1')).result).toEqual(result);
    const otherAgent = await clientFor(scope, { token: await tokenFor(scope, { agent: 'agent-other' }) });
    await expect(otherAgent.lookup('private-1')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const otherPrincipal = await clientFor(scope, { token: await tokenFor(scope, { principal: 'user:mallory@acme.example' }) });
    await expect(otherPrincipal.lookup('private-1')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // A token of another workspace does not open this one.
    const elsewhere = await clientFor(scope, { token: await tokenFor({ tenant, workspace: 'elsewhere' }) });
    await expect(elsewhere.lookup('private-1')).rejects.toMatchObject({ code: 'AUTHENTICATION_FAILED' });
    await expect(client.lookup('never-used')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('lists the effective tools of the agent, with explanations on request, over a connection of its own (replies under _INBOX_<tenant>.<workspace>)', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    // The reply comes back under the client's default inbox prefix, where NATS permissions can confine the runtime.
    const underPrefix: string[] = [];
    const watching = messaging.connection.subscribe(`_INBOX_${scope.tenant}.${scope.workspace}.>`, {
      callback: (error, message) => {
        if (error === null) underPrefix.push(message.string());
      },
    });
    await messaging.connection.flush();
    const client = await createToolplaneClient({ natsUrl: nats.url, connectionName: `${infra.prefix}_own`, scope, contextToken: await tokenFor(scope) });
    const set = await client.effectiveTools({ restrictions: { maxSideEffectClass: 'READ' }, explain: true });
    expect(set.tools.map((tool) => tool.toolId).sort()).toEqual(['fixture.count', 'fixture.echo']);
    expect(set.hidden?.map((tool) => tool.toolId)).toEqual(['fixture.purge']);
    // The server queued the watcher's copy before the client had its reply: one round trip later it has arrived.
    await messaging.connection.flush();
    watching.unsubscribe();
    expect(underPrefix.filter((data) => data.includes('fixture.purge'))).toHaveLength(1);
    // The client opened the connection, so closing the client closes it.
    await client.close();
    await expect(client.effectiveTools()).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
  });

  it('yields the call’s ToolCallStarted and ToolCallCompleted in order, and closes on break', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const client = await clientFor(scope);
    const seen: LifecycleEvent[] = [];
    const collecting = (async () => {
      for await (const event of client.events({ toolCallId: 'call-events-1', types: ['ToolCallStarted', 'ToolCallCompleted', 'ToolCallFailed'], since: 'all' })) {
        seen.push(event);
        if (event.type !== 'ToolCallStarted') break;
      }
    })();
    await client.invoke('fixture.echo', { text: 'watched' }, { idempotencyKey: 'events-1', toolCallId: 'call-events-1' });
    await collecting;
    // Leaving the loop deleted the stream's consumer on the server.
    expect(await consumersOf(scope)).toEqual([]);
    expect(seen.map((event) => event.type)).toEqual(['ToolCallStarted', 'ToolCallCompleted']);
    expect(seen.every((event) => event.metadata.tenant === scope.tenant && event.metadata.workspace === scope.workspace)).toBe(true);
    // A stream ended by its signal finishes its loop without an error; neither leaves a consumer on the server.
    const controller = new AbortController();
    const following = client.events({ family: 'invocation', signal: controller.signal });
    const draining = (async () => {
      for await (const event of following) seen.push(event);
    })();
    await following.ready();
    expect(await consumersOf(scope)).toHaveLength(1);
    controller.abort();
    await draining;
    expect(await consumersOf(scope)).toEqual([]);
  });

  it('toolplane invoke exits non-zero with CONFLICT both times for a taken key, and calls wait --key prints the one outcome', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const first = await toolplaneAsAgent(scope, 'invoke', 'fixture.count', '--args', '{"n":1}', '--key', 'cli-b-1');
    expect(first).toMatchObject({ code: 0, out: expect.stringMatching(/^status: +SUCCESS$/m) as unknown });
    for (let round = 0; round < 2; round += 1) {
      const conflicting = await toolplaneAsAgent(scope, 'invoke', 'fixture.count', '--args', '{"n":2}', '--key', 'cli-b-1');
      expect(conflicting.code).toBe(1);
      expect(conflicting.err).toMatch(/^CONFLICT: /);
    }
    const waited = await toolplaneAsAgent(scope, '--json', 'calls', 'wait', '--key', 'cli-b-1', '--timeout-ms', '5000');
    expect(waited.code).toBe(0);
    expect(JSON.parse(waited.out)).toMatchObject({ status: 'SUCCESS', receipt: { idempotencyKey: 'cli-b-1' } });
    const unknown = await toolplaneAsAgent(scope, 'calls', 'wait', '--key', 'cli-never-used');
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/^NOT_FOUND: /);
    expect(await executions(scope)).toBe(1);
  });

  it('carries an invoke across a NATS restart with the same key: one execution, never a raw NATS error', { timeout: 90_000 }, async () => {
    const scope = await freshScope();
    const client = await clientFor(scope, { token: await tokenFor(scope) });
    const statuses = messaging.connection.status()[Symbol.asyncIterator]();
    let invoking: Promise<unknown> | undefined;
    await restartNatsAfter(async () => {
      await nextStatus(statuses, 'disconnect');
      // Sent while the connection is down: what the client had begun is cut by the next dial attempts.
      invoking = client.invoke('fixture.count', { n: 11 }, { idempotencyKey: 'across-restart-1', timeoutMs: 60_000 });
      invoking.catch(() => undefined);
      await nextStatus(statuses, 'reconnecting');
      await nextStatus(statuses, 'reconnecting');
    });
    await nextStatus(statuses, 'reconnect');
    const result = await invoking;
    expect(result).toMatchObject({ status: 'SUCCESS', receipt: { idempotencyKey: 'across-restart-1' } });
    expect(await executions(scope)).toBe(1);
  });
});
