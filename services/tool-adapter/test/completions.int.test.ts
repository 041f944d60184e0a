// Completions (MCP completion/complete) through the adapter in-process, against real NATS and FerretDB: a bound prompt
// of @modelcontextprotocol/server-everything (`completable-prompt`, whose arguments it completes) is completed for an
// agent the prompt is allowed to, recorded with its events and a receipt naming the operation; it is denied to an agent
// the prompt is not allowed to, for an argument the prompt lacks, and where the tenant's policy would ask a human; a
// bound resource template's variable is completed by the server's template; a server without completions offers none.
import { randomUUID, type KeyObject } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompletionContent, InvocationRequest, LifecycleEvent, ToolDescriptor, eventFilter, type InvocationReply, type Scope } from '@toolplane/contracts';
import { generateSigningKeyPair, type SigningKeyPair } from '@toolplane/auth';
import { everythingStdioTarget, FixtureServer, sandboxScratchDir } from '@toolplane/mcp/testing';
import { connectMessaging, openKv, type Messaging, type ServeHandle, type TypedKv } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { testScope } from '@toolplane/testing';
import { startNatsServer, type NatsServer } from './adapter-harness.js';
import { defaultTenantPolicy, descriptorBucket, toolAdapterService, verifyReceipt } from '../src/mod.js';
import {
  adapterTestEnv,
  agentContextToken,
  agentProfileDocument,
  fixtureServerDocument,
  insertAgentProfile,
  invokeAndAwaitReply,
  newReplyInbox,
  putDescriptor,
  putTenantPolicy,
  receiptSigningKey,
  serveStandInRegistry,
  stdioServerDocument,
  storedInvocation,
  testDescriptor,
  waitFor,
} from '../src/testing.js';

const infra = testScope('adapter_completions');
const tenant = 'acme';
const agentId = 'agent-support';
/** An agent of the same workspace whose profile does not allow the prompt. */
const outsider = 'agent-outsider';
const receiptKeyId = 'adapter-completions-1';
const everythingServerId = randomUUID();
const countingServerId = randomUUID();

let nats: NatsServer;
let agentKey: SigningKeyPair;
let receiptPublicKey: KeyObject;
let adapter: RunningService;
let messaging: Messaging;
let descriptors: TypedKv<ToolDescriptor>;
let registry: ServeHandle;
let tmp: string;

beforeAll(async () => {
  nats = await startNatsServer();
  agentKey = await generateSigningKeyPair('acme-agent-1');
  const receiptKeys = receiptSigningKey();
  receiptPublicKey = receiptKeys.publicKey;
  tmp = await sandboxScratchDir('adapter-completions-');
  adapter = await startService(
    toolAdapterService,
    adapterTestEnv({ natsUrl: nats.url, mongoUrl: infra.mongoUrl, dbName: infra.dbName, trustedKeys: { [tenant]: [agentKey.publicJwk] }, signingKey: receiptKeys.setting, signingKeyId: receiptKeyId }),
  );
  messaging = await connectMessaging({ url: nats.url, name: 'adapter-completions-test' });
  descriptors = await openKv(messaging, descriptorBucket, ToolDescriptor);
  registry = await serveStandInRegistry(messaging, {
    serverFor: (serverId, scope) => {
      if (serverId === countingServerId) return fixtureServerDocument({ serverId, scope, name: 'fixture' }, FixtureServer.countingEcho);
      const target = everythingStdioTarget();
      return stdioServerDocument({ serverId: everythingServerId, scope, name: 'everything' }, { executable: target.command, args: target.args ?? [] });
    },
  });
}, 60_000);

afterAll(async () => {
  await registry?.stop();
  await adapter?.stop();
  await messaging?.drain();
  await nats?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** The arguments of server-everything's `completable-prompt`, as a prompt binding makes them an input schema. */
const teamArguments = { type: 'object', properties: { department: { type: 'string' }, name: { type: 'string' } }, required: ['department', 'name'], additionalProperties: false };

let workspaces = 0;
/** A workspace of its own: the prompt bound (as the registry binds prompts: READ, natural), the agent allowed it, the outsider not. */
async function freshScope(): Promise<Scope> {
  workspaces += 1;
  const scope = { tenant, workspace: `c${workspaces}_${randomUUID().slice(0, 8)}` };
  const prompt = { prompt: { target: { kind: 'Skill' as const, ref: 'team-management' } } };
  await putDescriptor(descriptors, testDescriptor({ scope, toolId: 'everything.team', providerToolName: 'completable-prompt', mcpServerId: everythingServerId, inputSchema: teamArguments }, prompt));
  await putDescriptor(descriptors, testDescriptor({ scope, toolId: 'fixture.greeting', providerToolName: 'greeting', mcpServerId: countingServerId, inputSchema: { type: 'object', properties: { who: { type: 'string' } } } }, prompt));
  // A bound resource template: its variables are its input, its server template names it to the server.
  const dynamic = 'demo://resource/dynamic/text/{resourceId}';
  const template = { resource: { knowledgeSource: 'everything-docs', scope: 'WORKSPACE' as const, classification: 'INTERNAL' as const, uriTemplate: dynamic } };
  await putDescriptor(descriptors, testDescriptor({ scope, toolId: 'everything.dynamic', providerToolName: dynamic, mcpServerId: everythingServerId, inputSchema: { type: 'object', properties: { resourceId: { type: 'string' } }, required: ['resourceId'] } }, template));
  await putDescriptor(descriptors, testDescriptor({ scope, toolId: 'everything.echo', providerToolName: 'echo', mcpServerId: everythingServerId, inputSchema: { type: 'object', properties: { message: { type: 'string' } } } }));
  await insertAgentProfile(messaging, agentProfileDocument(scope, agentId, ['everything.*', 'fixture.*']));
  await insertAgentProfile(messaging, agentProfileDocument(scope, outsider, ['fixture.*']));
  return scope;
}

interface Completing {
  readonly toolId?: string;
  readonly capability?: 'prompt' | 'resource';
  readonly argument: { readonly name: string; readonly value: string };
  readonly context?: Record<string, string>;
  readonly key: string;
  readonly agent?: string;
  /** Another Nats-Msg-Id than the request's own: a repeat that JetStream's deduplication lets through. */
  readonly msgId?: string;
}

/** Publishes a completion request as the agent (or another) and awaits its reply. */
async function complete(scope: Scope, completing: Completing): Promise<InvocationReply> {
  const request = InvocationRequest.parse({
    toolId: completing.toolId ?? 'everything.team',
    capability: completing.capability ?? 'prompt',
    arguments: completing.context ?? {},
    completion: { argument: completing.argument },
    idempotencyKey: completing.key,
    correlationId: 'run-1',
    contextToken: await agentContextToken(agentKey, scope, { agentId: completing.agent ?? agentId }),
    replyInbox: newReplyInbox(),
  });
  return invokeAndAwaitReply(messaging, scope, request, { timeoutMs: 30_000, msgId: completing.msgId });
}

/** Collects the lifecycle events of a scope from now on. */
async function recordEvents(scope: Scope): Promise<{ events: LifecycleEvent[]; stop: () => void }> {
  const events: LifecycleEvent[] = [];
  const subscription = messaging.connection.subscribe(eventFilter(scope));
  void (async () => {
    for await (const message of subscription) events.push(LifecycleEvent.parse(JSON.parse(message.string())));
  })();
  await messaging.connection.flush();
  return { events, stop: () => subscription.unsubscribe() };
}

function valuesOf(reply: InvocationReply): CompletionContent['completion'] {
  if (!reply.ok) throw new Error(`no result: ${reply.error.message}`);
  return CompletionContent.parse(reply.data.structuredContent).completion;
}

describe('a completion of a bound prompt', () => {
  it('is offered to an agent allowed the prompt, recorded with its events and a receipt that names the operation', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const recorder = await recordEvents(scope);
    const reply = await complete(scope, { argument: { name: 'department', value: 'E' }, key: 'complete-1' });
    expect(reply.ok && reply.data.status).toBe('SUCCESS');
    if (!reply.ok) return;
    expect(valuesOf(reply).values).toEqual(['Engineering']);
    expect(reply.data.textContent).toBe('Engineering');
    expect(reply.data.provenance).toBe('untrusted-tool-data');
    expect(reply.data.receipt).toMatchObject({ state: 'Observed', toolId: 'everything.team', operation: 'completion', sideEffectClass: 'READ' });
    expect(reply.data.receipt.approvalId).toBeUndefined();
    expect(verifyReceipt(reply.data.receipt, new Map([[receiptKeyId, receiptPublicKey]]))).toMatchObject({ valid: true });

    const mine = await waitFor('the completion’s terminal event', () => {
      const seen = recorder.events.filter((event) => 'invocationId' in event.metadata && event.metadata.invocationId === reply.data.receipt.invocationId);
      return seen.some((event) => event.type === 'ToolCallCompleted') ? seen : undefined;
    });
    recorder.stop();
    expect(mine.map((event) => event.type)).toEqual(['InvocationReceived', 'SandboxLeased', 'ToolCallStarted', 'SandboxReleased', 'ToolCallCompleted']);
    expect(mine[0]?.data).toMatchObject({ operation: 'completion' });
    // Nothing of the completion (its partial value) is in an event.
    expect(JSON.stringify(mine)).not.toContain('Engineering');

    const stored = await storedInvocation(messaging, scope, 'complete-1');
    expect(stored).toMatchObject({ state: 'Observed', completion: { argument: { name: 'department', value: 'E' } }, argumentsJson: '{}' });
  });

  it('passes the arguments already chosen as context, and a partial value of its own is a request of its own', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const sales = await complete(scope, { argument: { name: 'name', value: '' }, context: { department: 'Sales' }, key: 'complete-name-1' });
    expect(valuesOf(sales).values).toEqual(['David', 'Eve', 'Frank']);
    // The same key again is the same call (replayed); with another partial value it is another request: CONFLICT.
    const again = await complete(scope, { argument: { name: 'name', value: '' }, context: { department: 'Sales' }, key: 'complete-name-1', msgId: randomUUID() });
    expect(again.ok && again.data.receipt.invocationId).toBe(sales.ok && sales.data.receipt.invocationId);
    const other = await complete(scope, { argument: { name: 'name', value: 'E' }, context: { department: 'Sales' }, key: 'complete-name-1' });
    expect(other).toMatchObject({ ok: false, error: { code: 'CONFLICT' } });
    expect(valuesOf(await complete(scope, { argument: { name: 'name', value: 'E' }, context: { department: 'Sales' }, key: 'complete-name-2' })).values).toEqual(['Eve']);
  });

  it('is denied to an agent the prompt is not allowed to, as fetching it would be, with its record', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const recorder = await recordEvents(scope);
    const reply = await complete(scope, { argument: { name: 'department', value: 'E' }, key: 'outsider-1', agent: outsider });
    expect(reply.ok && reply.data.status).toBe('DENIED');
    if (!reply.ok) return;
    expect(reply.data.receipt).toMatchObject({ state: 'Denied', operation: 'completion', failure: { code: 'AUTHORIZATION_DENIED' } });
    expect(reply.data.structuredContent).toBeUndefined();
    const mine = await waitFor('the denial', () => {
      const seen = recorder.events.filter((event) => 'invocationId' in event.metadata && event.metadata.invocationId === reply.data.receipt.invocationId);
      return seen.some((event) => event.type === 'InvocationDenied') ? seen : undefined;
    });
    recorder.stop();
    expect(mine.map((event) => event.type)).toEqual(['InvocationReceived', 'InvocationDenied']);
    expect(mine[1]?.data).toMatchObject({ stage: 'AGENT_PERMISSION' });
  });

  it('refuses an argument the prompt does not have, and a tool’s id (a completion completes prompts)', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const unknown = await complete(scope, { argument: { name: 'team', value: '' }, key: 'unknown-arg-1' });
    expect(unknown.ok && unknown.data.receipt).toMatchObject({ state: 'Denied', failure: { code: 'INVALID_ARGUMENT', message: 'everything.team@1 has no argument "team" to complete' } });
    const stray = await complete(scope, { argument: { name: 'department', value: '' }, context: { team: 'x' }, key: 'unknown-arg-2' });
    expect(stray.ok && stray.data.receipt).toMatchObject({ state: 'Denied', failure: { code: 'INVALID_ARGUMENT' } });
    const tool = await complete(scope, { toolId: 'everything.echo', argument: { name: 'message', value: '' }, key: 'tool-1' });
    expect(tool.ok && tool.data.receipt).toMatchObject({ state: 'Denied', failure: { code: 'NOT_FOUND' } });
  });

  it('is never put to a human: where the tenant’s policy would gate the prompt, it is denied at APPROVAL', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const recorder = await recordEvents(scope);
    const now = () => new Date().toISOString();
    await putTenantPolicy(messaging, { ...defaultTenantPolicy(tenant, now()), approvalRequiredClasses: ['READ'], version: 2 });
    try {
      const reply = await waitFor('the gating policy to reach the adapter', async () => {
        const attempt = await complete(scope, { argument: { name: 'department', value: 'S' }, key: `gated-${randomUUID()}` });
        return attempt.ok && attempt.data.status === 'DENIED' ? attempt : undefined;
      });
      expect(reply.ok && reply.data.receipt).toMatchObject({ state: 'Denied', failure: { code: 'AUTHORIZATION_DENIED', message: expect.stringContaining('a completion is never put to one') as unknown } });
      expect(recorder.events.some((event) => event.type === 'ApprovalRequested')).toBe(false);
    } finally {
      recorder.stop();
      await putTenantPolicy(messaging, { ...defaultTenantPolicy(tenant, now()), version: 3 });
    }
  });

  it('of a bound resource template completes its variable by the server’s template', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const reply = await complete(scope, { toolId: 'everything.dynamic', capability: 'resource', argument: { name: 'resourceId', value: '7' }, key: 'template-1' });
    expect(valuesOf(reply).values).toEqual(['7']);
    expect(reply.ok && reply.data.receipt).toMatchObject({ state: 'Observed', toolId: 'everything.dynamic', operation: 'completion' });
    // A prompt's id is not a resource's: a completion names what it completes.
    const mismatched = await complete(scope, { capability: 'resource', argument: { name: 'department', value: '' }, key: 'template-2' });
    expect(mismatched.ok && mismatched.data.receipt).toMatchObject({ state: 'Denied', failure: { code: 'NOT_FOUND' } });
  });

  it('of a server without completions offers no values, and is still recorded', { timeout: 60_000 }, async () => {
    const scope = await freshScope();
    const reply = await complete(scope, { toolId: 'fixture.greeting', argument: { name: 'who', value: 'a' }, key: 'no-completions-1' });
    expect(reply.ok && reply.data.status).toBe('SUCCESS');
    expect(valuesOf(reply)).toEqual({ values: [] });
    expect(reply.ok && reply.data.receipt).toMatchObject({ state: 'Observed', operation: 'completion' });
  });
});
