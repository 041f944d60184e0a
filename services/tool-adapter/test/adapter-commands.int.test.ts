// The tool adapter's operator commands in-process against real NATS and FerretDB: agent profile and tenant policy
// CRUD with version guards and operator tokens, a policy written over request/reply taking effect on the next call,
// the reconciliation of a call that a redelivery after a crash ended Uncertain, and the inspection of calls (their
// redacted arguments, and once ended their results and receipts).
import { randomUUID, type KeyObject } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  ARGUMENT_REDACTION_MARKER,
  InvocationRequest,
  LifecycleEvent,
  POLICY_ADMIN_ROLE,
  ToolDescriptor,
  adapterCommandSchemas,
  canonicalJson,
  commandSubject,
  eventFilter,
  hasErrorCode,
  invocationRequestMsgId,
  invocationRequestSubject,
  type AgentProfile,
  type AgentProfileInput,
  type OperatorClaims,
  type Scope,
  type InvocationReply,
  type InvocationResult,
  type TenantPolicyInput,
  type TenantPolicyReply,
} from '@toolplane/contracts';
import { bearerHeaders, generateSigningKeyPair, type SigningKeyPair } from '@toolplane/auth';
import { runCli, type CliIo } from '@toolplane/cli';
import { FixtureServer, sandboxScratchDir } from '@toolplane/mcp/testing';
import { connectMessaging, openKv, publish, request, type Messaging, type ServeHandle, type TypedKv } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { connectStore, type Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { startNatsServer, type NatsServer } from './adapter-harness.js';
import {
  defaultTenantPolicy,
  descriptorBucket,
  receiptSigner,
  toolAdapterService,
  verifyReceipt,
} from '../src/mod.js';
import {
  adapterTestEnv,
  agentContextToken,
  countFileOf,
  countedExecutions,
  fixtureServerDocument,
  operatorClaims,
  operatorToken,
  putDescriptor,
  invokeAndAwaitReply,
  newReplyInbox,
  receiptSigningKey,
  serveStandInRegistry,
  storeLeftByCrash,
  storedInvocation,
  testDescriptor,
  waitFor,
} from '../src/testing.js';

const infra = testScope('adapter_commands');
/**
 * A nats-server of this file's own: the work queue's durable consumer (`tool-adapter`) is one per stream, so
 * adapters of other test files on a shared server would take this file's requests.
 */
let nats: NatsServer;
// A tenant of this file's own: the policy tests change the tenant policy.
const tenant = `t${randomUUID().slice(0, 8)}`;
const agentId = 'agent-support';
const receiptKeyId = 'adapter-commands-test';

let tenantKey: SigningKeyPair;
let forgerKey: SigningKeyPair;
let receiptPublicKey: KeyObject;
let receiptPrivateKey: KeyObject;
let adapter: RunningService;
let messaging: Messaging;
let store: Store;
let descriptors: TypedKv<ToolDescriptor>;
let registry: ServeHandle;
let tmp: string;
const serverIds = new Map<string, string>();
/** The caller of every call: the agent, on behalf of this principal. */
const caller = { principal: 'user:alice@example.com', agentId, agentRevision: '7', roles: [] };
const boundTools = new Map<string, ToolDescriptor>();

beforeAll(async () => {
  nats = await startNatsServer();
  tenantKey = await generateSigningKeyPair('tenant-1');
  // Same kid, another key: what a forger without the tenant's private key can make.
  forgerKey = await generateSigningKeyPair('tenant-1');
  const receiptKeys = receiptSigningKey();
  receiptPublicKey = receiptKeys.publicKey;
  receiptPrivateKey = receiptKeys.privateKey;
  tmp = await sandboxScratchDir('adapter-commands-');
  adapter = await startService(
    toolAdapterService,
    adapterTestEnv({ natsUrl: nats.url, mongoUrl: infra.mongoUrl, dbName: infra.dbName, trustedKeys: { [tenant]: [tenantKey.publicJwk] }, signingKey: receiptKeys.setting, signingKeyId: receiptKeyId }),
  );
  messaging = await connectMessaging({ url: nats.url, name: 'adapter-commands-test' });
  store = await connectStore({ url: infra.mongoUrl, dbName: infra.dbName, appName: 'adapter-commands-test' });
  descriptors = await openKv(messaging, descriptorBucket, ToolDescriptor);
  // Stands in for the registry's getServer: the counting fixture of the asking workspace.
  registry = await serveStandInRegistry(messaging, {
    tenant,
    serverFor: (serverId, scope) => fixtureServerDocument({ serverId, scope, name: 'fixture' }, FixtureServer.countingEcho, countFileOf(tmp, scope)),
  });
}, 60_000);

afterAll(async () => {
  await registry?.stop();
  await adapter?.stop();
  await messaging?.drain();
  await store?.close();
  await nats?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

let workspaces = 0;
function newWorkspace(): Scope {
  workspaces += 1;
  const scope = { tenant, workspace: `w${workspaces}_${randomUUID().slice(0, 8)}` };
  serverIds.set(scope.workspace, randomUUID());
  return scope;
}

function tokenOf(claims: OperatorClaims, key: SigningKeyPair = tenantKey): Promise<string> {
  return operatorToken(key, claims);
}

const adminOf = (scope: Scope) => tokenOf(operatorClaims(scope, [POLICY_ADMIN_ROLE]));
const readerOf = (scope: Scope) => tokenOf(operatorClaims(scope, ['approver'], 'user:rita@example.com'));

type Operation = Exclude<keyof typeof adapterCommandSchemas, 'effectiveTools' | 'lookupInvocation'>;
type Body<O extends Operation> = z.input<(typeof adapterCommandSchemas)[O]['request']>;
type Reply<O extends Operation> = z.output<(typeof adapterCommandSchemas)[O]['reply']>;

/** Asks the adapter, as the holder of `token` (none: no Authorization header). */
async function command<O extends Operation>(scope: Scope, operation: O, body: Body<O>, token: string | undefined): Promise<Reply<O>> {
  const schemas = adapterCommandSchemas[operation];
  return request(messaging, {
    subject: commandSubject(scope, 'adapter', operation),
    requestSchema: schemas.request as z.ZodType,
    replySchema: schemas.reply as unknown as z.ZodType<Reply<O>>,
    body,
    timeoutMs: 15_000,
    ...(token === undefined ? {} : { headers: bearerHeaders(token) }),
  });
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (hasErrorCode(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error('expected a refusal');
}

function profileInput(agent: string, overrides: Partial<AgentProfileInput> = {}): AgentProfileInput {
  return { agentId: agent, allowedTools: ['fixture.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [], ...overrides };
}

function policyInput(overrides: Partial<TenantPolicyInput> = {}): TenantPolicyInput {
  const { tenant: _tenant, updatedBy: _by, updatedAt: _at, version: _version, ...defaults } = defaultTenantPolicy(tenant, new Date().toISOString());
  return { ...defaults, ...overrides };
}

function executions(scope: Scope): Promise<number> {
  return countedExecutions(countFileOf(tmp, scope));
}

/** Writes a descriptor of the fixture's count_calls into the registry's read model. */
async function bindTool(scope: Scope, toolId: string, overrides: Partial<ToolDescriptor> = {}): Promise<ToolDescriptor> {
  const descriptor = testDescriptor(
    { scope, toolId, providerToolName: 'count_calls', mcpServerId: serverIds.get(scope.workspace), inputSchema: { type: 'object', properties: { n: { type: 'integer' } } } },
    { description: 'Counts its calls.', ...overrides },
  );
  await putDescriptor(descriptors, descriptor);
  boundTools.set(`${scope.workspace} ${toolId}`, descriptor);
  return descriptor;
}

/** A workspace whose agent profile is written over request/reply, with a READ and a non-idempotent WRITE tool. */
async function preparedWorkspace(): Promise<Scope> {
  const scope = newWorkspace();
  await command(scope, 'putAgentProfile', { profile: profileInput(agentId), expectedVersion: 0 }, await adminOf(scope));
  await bindTool(scope, 'fixture.count');
  await bindTool(scope, 'fixture.write', { sideEffectClass: 'WRITE', riskClass: 'MEDIUM', idempotency: 'NONE' });
  return scope;
}

async function invoke(scope: Scope, toolId: string, idempotencyKey: string, replyInbox = newReplyInbox()): Promise<InvocationReply> {
  const contextToken = await agentContextToken(tenantKey, scope, { agentId, principal: caller.principal });
  return invokeAndAwaitReply(messaging, scope, InvocationRequest.parse({ toolId, arguments: { n: 1 }, idempotencyKey, correlationId: 'run-1', contextToken, replyInbox }));
}

/**
 * Leaves a call as a crash during execution would: the document Executing (built by the core, as the adapter builds
 * it) with its processing lease expired. The request's redelivery then finds it.
 */
function leftExecuting(scope: Scope, toolId: string, idempotencyKey: string, replyInbox: string) {
  const descriptor = boundTools.get(`${scope.workspace} ${toolId}`);
  if (descriptor === undefined) throw new Error(`no tool ${toolId}`);
  const signReceipt = receiptSigner({ keyId: receiptKeyId, privateKey: receiptPrivateKey });
  return storeLeftByCrash(messaging, { scope, descriptor, caller, arguments: { n: 1 }, idempotencyKey, replyInbox, signReceipt });
}

function stored(scope: Scope, idempotencyKey: string) {
  return storedInvocation(messaging, scope, idempotencyKey);
}

describe('agent profiles over request/reply', () => {
  it('creates, replaces, lists and deletes, each write guarded by expectedVersion and recorded with its author', { timeout: 60_000 }, async () => {
    const scope = newWorkspace();
    const admin = await adminOf(scope);
    const created = await command(scope, 'putAgentProfile', { profile: profileInput('agent-a', { description: 'first' }), expectedVersion: 0 }, admin);
    expect(created.profile).toMatchObject({ ...scope, agentId: 'agent-a', description: 'first', version: 1, updatedBy: 'user:ada@example.com' });
    expect(await refusal(command(scope, 'putAgentProfile', { profile: profileInput('agent-a'), expectedVersion: 0 }, admin))).toBe(
      'CONFLICT: agent profile agent-a: expected none to exist, found version 1',
    );
    // A replacement drops what it leaves out (the description).
    const replaced = await command(scope, 'putAgentProfile', { profile: profileInput('agent-a', { maxRiskClass: 'LOW' }), expectedVersion: 1 }, admin);
    expect(replaced.profile.version).toBe(2);
    expect(replaced.profile.maxRiskClass).toBe('LOW');
    expect(replaced.profile).not.toHaveProperty('description');
    expect(await refusal(command(scope, 'putAgentProfile', { profile: profileInput('agent-a'), expectedVersion: 1 }, admin))).toBe(
      'CONFLICT: agent profile agent-a: expected version 1, found version 2',
    );
    // Without expectedVersion a put overwrites whatever is stored.
    expect((await command(scope, 'putAgentProfile', { profile: profileInput('agent-a', { maxRiskClass: 'MEDIUM' }) }, admin)).profile.version).toBe(3);
    await command(scope, 'putAgentProfile', { profile: profileInput('agent-b') }, admin);
    await command(scope, 'putAgentProfile', { profile: profileInput('agent-c') }, admin);

    expect(await command(scope, 'getAgentProfile', { agentId: 'agent-a' }, admin)).toEqual({ profile: { ...replaced.profile, maxRiskClass: 'MEDIUM', version: 3, updatedAt: expect.any(String) as string } });
    const first = await command(scope, 'listAgentProfiles', { limit: 2 }, admin);
    expect(first.items.map((profile) => profile.agentId)).toEqual(['agent-a', 'agent-b']);
    expect(first.next).not.toBeNull();
    const second = await command(scope, 'listAgentProfiles', { limit: 2, after: first.next ?? '' }, admin);
    expect(second).toMatchObject({ items: [{ agentId: 'agent-c' }], next: null });

    expect(await refusal(command(scope, 'deleteAgentProfile', { agentId: 'agent-a', expectedVersion: 2 }, admin))).toBe('CONFLICT: agent profile agent-a: expected version 2, found version 3');
    expect(await command(scope, 'deleteAgentProfile', { agentId: 'agent-a', expectedVersion: 3 }, admin)).toEqual({ agentId: 'agent-a', deleted: true });
    expect(await refusal(command(scope, 'getAgentProfile', { agentId: 'agent-a' }, admin))).toBe(`NOT_FOUND: no agent profile agent-a in ${scope.tenant}/${scope.workspace}`);
    expect(await command(scope, 'deleteAgentProfile', { agentId: 'agent-a' }, admin)).toEqual({ agentId: 'agent-a', deleted: false });
    expect((await command(scope, 'listAgentProfiles', { limit: 10 }, admin)).items.map((profile) => profile.agentId)).toEqual(['agent-b', 'agent-c']);
    // Re-created after a delete: "create only" sees no profile; versions keep counting past the delete.
    expect((await command(scope, 'putAgentProfile', { profile: profileInput('agent-a'), expectedVersion: 0 }, admin)).profile.version).toBe(5);
  });

  it('a deleted profile no longer lets its agent call tools', { timeout: 60_000 }, async () => {
    const scope = await preparedWorkspace();
    expect((await invoke(scope, 'fixture.count', 'before-delete')).ok).toBe(true);
    await command(scope, 'deleteAgentProfile', { agentId }, await adminOf(scope));
    const reply = await invoke(scope, 'fixture.count', 'after-delete');
    expect(reply.ok && reply.data.status).toBe('DENIED');
    expect(reply.ok && reply.data.receipt.failure?.code).toBe('AUTHORIZATION_DENIED');
    expect(await executions(scope)).toBe(1);
  });
});

describe('operator tokens on the commands', () => {
  it('lets a reader without the role read but not write, and refuses missing, forged and other-workspace tokens', { timeout: 60_000 }, async () => {
    const scope = newWorkspace();
    await command(scope, 'putAgentProfile', { profile: profileInput('agent-a') }, await adminOf(scope));
    const reader = await readerOf(scope);
    expect((await command(scope, 'getAgentProfile', { agentId: 'agent-a' }, reader)).profile.agentId).toBe('agent-a');
    expect((await command(scope, 'getTenantPolicy', {}, reader)).policy.tenant).toBe(tenant);
    expect(await refusal(command(scope, 'putAgentProfile', { profile: profileInput('agent-a') }, reader))).toBe(
      `AUTHORIZATION_DENIED: operator user:rita@example.com lacks the role ${POLICY_ADMIN_ROLE} this operation needs`,
    );
    expect(await refusal(command(scope, 'deleteAgentProfile', { agentId: 'agent-a' }, reader))).toMatch(/^AUTHORIZATION_DENIED: /);
    expect(await refusal(command(scope, 'putTenantPolicy', { policy: policyInput() }, reader))).toMatch(/^AUTHORIZATION_DENIED: /);
    expect(await refusal(command(scope, 'reconcile', { toolCallId: randomUUID(), outcome: 'failed', reason: 'checked' }, reader))).toMatch(/^AUTHORIZATION_DENIED: /);

    expect(await refusal(command(scope, 'getAgentProfile', { agentId: 'agent-a' }, undefined))).toBe('AUTHENTICATION_FAILED: no operator token: send one as "Authorization: Bearer <token>"');
    const forged = await tokenOf(operatorClaims(scope, [POLICY_ADMIN_ROLE]), forgerKey);
    expect(await refusal(command(scope, 'putAgentProfile', { profile: profileInput('agent-a') }, forged))).toBe('AUTHENTICATION_FAILED: token refused: the signature does not verify');
    const elsewhere = await tokenOf(operatorClaims(newWorkspace(), [POLICY_ADMIN_ROLE]));
    expect(await refusal(command(scope, 'getAgentProfile', { agentId: 'agent-a' }, elsewhere))).toBe(`AUTHENTICATION_FAILED: token refused: it does not cover workspace ${scope.workspace}`);
    expect(await refusal(command(scope, 'deleteAgentProfile', { agentId: 'agent-a' }, elsewhere))).toMatch(/^AUTHENTICATION_FAILED: /);
    // Nothing those requests asked for happened.
    expect((await command(scope, 'getAgentProfile', { agentId: 'agent-a' }, reader)).profile.version).toBe(1);
  });
});

describe('the tenant policy over request/reply', () => {
  it('answers the default until one is written; a written kill switch denies the next call; stale versions conflict', { timeout: 60_000 }, async () => {
    const scope = await preparedWorkspace();
    const admin = await adminOf(scope);
    const initial = await command(scope, 'getTenantPolicy', {}, admin);
    expect(initial).toMatchObject({ isDefault: true, policy: { tenant, version: 1 } });
    expect((await invoke(scope, 'fixture.count', 'before-kill')).ok).toBe(true);

    expect(await refusal(command(scope, 'putTenantPolicy', { policy: policyInput({ commands: { block: ['(a)\\1'], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' } }), expectedVersion: 0 }, admin))).toMatch(
      /^INVALID_ARGUMENT: commands\.block\[0\] "\(a\)\\\\1" cannot be used: /,
    );
    const killSwitch = { target: 'TOOL' as const, tools: 'fixture.count', reason: 'incident 7', engagedBy: 'user:someone-else', engagedAt: '2020-01-01T00:00:00.000Z' };
    const written = await command(scope, 'putTenantPolicy', { policy: policyInput({ killSwitches: [killSwitch] }), expectedVersion: 0 }, admin);
    expect(written.isDefault).toBe(false);
    expect(written.policy).toMatchObject({ tenant, version: 1, updatedBy: 'user:ada@example.com' });
    // Who engaged a switch is the token's principal, never what the body claims.
    expect(written.policy.killSwitches).toEqual([{ ...killSwitch, engagedBy: 'user:ada@example.com', engagedAt: written.policy.updatedAt }]);
    expect(await command(scope, 'getTenantPolicy', {}, admin)).toEqual(written);

    const denied = await invoke(scope, 'fixture.count', 'after-kill');
    expect(denied.ok && denied.data.status).toBe('DENIED');
    expect(denied.ok && denied.data.receipt.failure?.message).toContain('incident 7');
    expect(await executions(scope)).toBe(1);

    expect(await refusal(command(scope, 'putTenantPolicy', { policy: policyInput(), expectedVersion: 0 }, admin))).toBe(`CONFLICT: the policy of tenant ${tenant}: expected none to exist, found version 1`);
    const released = await command(scope, 'putTenantPolicy', { policy: policyInput(), expectedVersion: 1 }, admin);
    expect(released.policy).toMatchObject({ version: 2, killSwitches: [] });
    expect(await refusal(command(scope, 'putTenantPolicy', { policy: policyInput(), expectedVersion: 1 }, admin))).toBe(`CONFLICT: the policy of tenant ${tenant}: expected version 1, found version 2`);
    expect((await invoke(scope, 'fixture.count', 'after-release')).ok && (await executions(scope))).toBe(2);
  });
});

describe('reconciling an Uncertain call', () => {
  it('settles it as observed or failed with the operator recorded, re-signs the receipt, publishes the end, and refuses a second time', { timeout: 60_000 }, async () => {
    const scope = await preparedWorkspace();
    const admin = await adminOf(scope);
    const settled: Record<string, string> = {};
    for (const outcome of ['observed', 'failed'] as const) {
      const key = `crash-write-${outcome}`;
      const replyInbox = `inbox_${randomUUID().replaceAll('-', '')}`;
      const interrupted = await leftExecuting(scope, 'fixture.write', key, replyInbox);
      // The redelivered request finds it Executing with its handler gone: a non-idempotent write ends Uncertain.
      const uncertain = await invoke(scope, 'fixture.write', key, replyInbox);
      expect(uncertain.ok && uncertain.data.status).toBe('UNCERTAIN');

      const events: LifecycleEvent[] = [];
      const subscription = messaging.connection.subscribe(eventFilter(scope));
      void (async () => {
        for await (const message of subscription) events.push(LifecycleEvent.parse(JSON.parse(message.string())));
      })();
      await messaging.connection.flush();
      const { result } = await command(scope, 'reconcile', { toolCallId: interrupted.toolCallId, outcome, reason: 'checked the provider: ticket 12' }, admin);
      expect(result.status).toBe(outcome === 'observed' ? 'SUCCESS' : 'FAILED');
      expect(result.receipt).toMatchObject({ toolCallId: interrupted.toolCallId, invocationId: interrupted.invocationId, state: outcome === 'observed' ? 'Observed' : 'Failed' });
      const verification = verifyReceipt(result.receipt, new Map([[receiptKeyId, receiptPublicKey]]));
      expect(verification.valid).toBe(true);

      const document = await stored(scope, key);
      expect(document).toMatchObject({ state: outcome === 'observed' ? 'Observed' : 'Failed', reconciliation: { outcome, by: 'user:ada@example.com', reason: 'checked the provider: ticket 12' } });
      expect(document?.receipt).toEqual(result.receipt);
      expect(document?.leaseUntil).toBeUndefined();
      const terminal = outcome === 'observed' ? 'ToolCallCompleted' : 'ToolCallFailed';
      const deadline = Date.now() + 15_000;
      while (!events.some((event) => event.type === terminal) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      subscription.unsubscribe();
      expect(events.filter((event) => 'toolCallId' in event.metadata && event.metadata.toolCallId === interrupted.toolCallId).map((event) => event.type)).toContain(terminal);

      expect(await refusal(command(scope, 'reconcile', { toolCallId: interrupted.toolCallId, outcome, reason: 'again' }, admin))).toBe(
        `CONFLICT: only an Uncertain invocation can be reconciled; this one is ${outcome === 'observed' ? 'Observed' : 'Failed'}`,
      );
      settled[outcome] = result.receipt.state;
    }
    expect(settled).toEqual({ observed: 'Observed', failed: 'Failed' });
    // Nothing ran: reconciliation records what the operator found, it never executes.
    expect(await executions(scope)).toBe(0);
    expect(await refusal(command(scope, 'reconcile', { toolCallId: randomUUID(), outcome: 'failed', reason: 'x' }, admin))).toMatch(/^NOT_FOUND: no call /);
  });
});

describe('the toolplane CLI against the adapter', () => {
  async function toolplane(scope: Scope, token: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const io: CliIo = { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readStdin: () => Promise.resolve(''), env: { TOOLPLANE_TOKEN: token } };
    const code = await runCli(['--nats', nats.url, '--tenant', scope.tenant, '--workspace', scope.workspace, '--timeout', '15000', ...argv], io);
    return { code, out, err };
  }

  it('engages and releases a kill switch (get, change, put by version), reads profiles, and reconciles a call', { timeout: 60_000 }, async () => {
    const scope = await preparedWorkspace();
    const admin = await adminOf(scope);
    const before = await command(scope, 'getTenantPolicy', {}, admin);

    const engaged = await toolplane(scope, admin, '--json', 'policies', 'kill-switch', 'engage', '--target', 'tool', '--tools', 'fixture.count', '--reason', 'incident 9');
    expect(engaged.err).toBe('');
    const engagedPolicy = (JSON.parse(engaged.out) as TenantPolicyReply).policy;
    expect(engagedPolicy.version).toBe(before.isDefault ? 1 : before.policy.version + 1);
    expect(engagedPolicy.killSwitches).toContainEqual({ target: 'TOOL', tools: 'fixture.count', reason: 'incident 9', engagedBy: 'user:ada@example.com', engagedAt: engagedPolicy.updatedAt });
    const denied = await invoke(scope, 'fixture.count', 'cli-killed');
    expect(denied.ok && denied.data.receipt.failure?.message).toContain('incident 9');

    const released = await toolplane(scope, admin, 'policies', 'kill-switch', 'release', '--target', 'tool', '--tools', 'fixture.count');
    expect(released.err).toBe('');
    expect(released.out).toMatch(new RegExp(`version:\\s+${engagedPolicy.version + 1}\\n`));
    expect((await invoke(scope, 'fixture.count', 'cli-released')).ok && (await executions(scope))).toBe(1);
    // Released twice: nothing is engaged for those tools any more.
    expect((await toolplane(scope, admin, 'policies', 'kill-switch', 'release', '--target', 'tool', '--tools', 'fixture.count')).err).toBe('NOT_FOUND: no kill switch is engaged for tools fixture.count\n');

    const profile = JSON.parse((await toolplane(scope, await readerOf(scope), '--json', 'policies', 'agent', 'get', agentId)).out) as AgentProfile;
    expect(profile).toMatchObject({ agentId, version: 1 });
    // What `get --json` printed goes back in as it is; a reader may not write it.
    const edited = JSON.stringify({ ...profile, deniedTools: ['fixture.write'] });
    expect((await toolplane(scope, await readerOf(scope), 'policies', 'agent', 'put', '--json-input', edited)).err).toMatch(/^AUTHORIZATION_DENIED: /);
    const put = await toolplane(scope, admin, '--json', 'policies', 'agent', 'put', '--json-input', edited, '--expected-version', '1');
    expect(JSON.parse(put.out)).toMatchObject({ deniedTools: ['fixture.write'], version: 2 });
    expect((await toolplane(scope, admin, 'policies', 'agent', 'put', '--json-input', edited, '--expected-version', '1')).err).toBe(`CONFLICT: agent profile ${agentId}: expected version 1, found version 2\n`);
    await command(scope, 'putAgentProfile', { profile: profileInput(agentId) }, admin);

    const replyInbox = `inbox_${randomUUID().replaceAll('-', '')}`;
    const interrupted = await leftExecuting(scope, 'fixture.write', 'cli-uncertain', replyInbox);
    expect((await invoke(scope, 'fixture.write', 'cli-uncertain', replyInbox)).ok).toBe(true);
    const reconciled = await toolplane(scope, admin, '--json', 'calls', 'reconcile', interrupted.toolCallId, '--outcome', 'failed', '--reason', 'nothing reached the provider');
    expect(reconciled.err).toBe('');
    const result = JSON.parse(reconciled.out) as InvocationResult;
    expect(result.receipt).toMatchObject({ toolCallId: interrupted.toolCallId, state: 'Failed' });
    expect(verifyReceipt(result.receipt, new Map([[receiptKeyId, receiptPublicKey]])).valid).toBe(true);
    expect((await stored(scope, 'cli-uncertain'))?.reconciliation).toMatchObject({ outcome: 'failed', by: 'user:ada@example.com' });
  });

  /** Runs the CLI with only the flags given (no token, no scope): what a verifier of receipts has. */
  async function plainToolplane(stdin: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const io: CliIo = { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readStdin: () => Promise.resolve(stdin), env: {} };
    const code = await runCli(['--nats', nats.url, '--timeout', '15000', ...argv], io);
    return { code, out, err };
  }

  it('publishes the receipt key, verifies a real receipt with it (fetched or from a file) and refuses a tampered one', { timeout: 60_000 }, async () => {
    const scope = await preparedWorkspace();
    const reply = await invoke(scope, 'fixture.count', 'cli-receipt');
    if (!reply.ok) throw new Error(`the call failed: ${reply.error.message}`);

    // The keys answer on any scope, without a token: the receipt-signing key's public half, by its key id.
    const keys = await plainToolplane('', '--tenant', scope.tenant, '--workspace', scope.workspace, 'receipts', 'keys');
    expect(keys).toMatchObject({ code: 0, err: '' });
    const jwks = JSON.parse(keys.out) as { keys: Record<string, unknown>[] };
    expect(jwks).toEqual({ keys: [{ ...receiptPublicKey.export({ format: 'jwk' }), kid: receiptKeyId, alg: 'Ed25519', use: 'sig' }] });

    // What `invoke --json` prints, verified with the keys asked of the adapter on the receipt's own scope.
    const invokeOutput = JSON.stringify(reply.data, null, 2);
    const fetched = await plainToolplane(invokeOutput, 'receipts', 'verify');
    expect(fetched).toMatchObject({ code: 0, err: '' });
    expect(fetched.out).toMatch(new RegExp(`^valid\n(.*\n)*tool call: +${reply.data.receipt.toolCallId}\n`));
    const keysFile = path.join(tmp, 'receipt-keys.json');
    const receiptFile = path.join(tmp, 'receipt.json');
    await writeFile(keysFile, keys.out);
    await writeFile(receiptFile, JSON.stringify(reply.data.receipt));
    expect(await plainToolplane('', 'receipts', 'verify', receiptFile, '--keys', keysFile)).toMatchObject({ code: 0, err: '' });

    // One changed field, or a signature by another key under the same key id, is refused.
    const tampered = JSON.stringify({ ...reply.data, receipt: { ...reply.data.receipt, principal: 'user:mallory@example.com' } });
    expect(await plainToolplane(tampered, 'receipts', 'verify', '-', '--keys', keysFile)).toEqual({ code: 1, out: '', err: 'AUTHENTICATION_FAILED: the receipt is not authentic: the signature does not match the receipt\n' });
    const forged = receiptSigner({ keyId: receiptKeyId, privateKey: receiptSigningKey().privateKey });
    const { signature: _signature, ...unsigned } = reply.data.receipt;
    expect((await plainToolplane(JSON.stringify(forged(unsigned)), 'receipts', 'verify')).err).toBe('AUTHENTICATION_FAILED: the receipt is not authentic: the signature does not match the receipt\n');
    expect((await plainToolplane('{"status":"SUCCESS"}', 'receipts', 'verify')).err).toMatch(/^INVALID_ARGUMENT: no receipt in the input/);
  });
});

describe('inspecting a call', () => {
  const R = ARGUMENT_REDACTION_MARKER;
  /** A gated tool whose input schema marks `pin` write-only. */
  const wipeSchema = { type: 'object', properties: { n: { type: 'integer' }, pin: { type: 'string', writeOnly: true }, target: { type: 'string' } } };

  async function sendAsAgent(scope: Scope, toolId: string, args: Record<string, unknown>, idempotencyKey: string): Promise<InvocationRequest> {
    const contextToken = await agentContextToken(tenantKey, scope, { agentId, principal: caller.principal });
    const sent = InvocationRequest.parse({ toolId, arguments: args, idempotencyKey, correlationId: 'run-1', contextToken, replyInbox: newReplyInbox() });
    await publish(messaging, { subject: invocationRequestSubject(scope), schema: InvocationRequest, message: sent, msgId: invocationRequestMsgId(scope, sent) });
    return sent;
  }

  it('shows a parked call its arguments redacted and no result, an ended one its result and receipt, to any operator of the scope only', { timeout: 60_000 }, async () => {
    const scope = await preparedWorkspace();
    await bindTool(scope, 'fixture.wipe', { sideEffectClass: 'DESTRUCTIVE', riskClass: 'HIGH', inputSchemaJson: JSON.stringify(wipeSchema) });
    // Any operator of the scope may inspect: this one has no role the policy names.
    const reader = await tokenOf(operatorClaims(scope, [], 'user:otto@example.com'));

    // DESTRUCTIVE is gated by the default policy: the call parks for an approval and never runs.
    await sendAsAgent(scope, 'fixture.wipe', { n: 1, pin: '4711', target: 'disk-7', auth: { apiKey: 'sk-live-abc' } }, 'inspect-gated');
    const parked = await waitFor('the call to park', async () => {
      const document = await stored(scope, 'inspect-gated');
      return document?.state === 'AwaitingApproval' ? document : undefined;
    });
    const inspectedParked = await command(scope, 'inspectInvocation', { toolCallId: parked.toolCallId }, reader);
    expect(inspectedParked).toEqual({
      toolCallId: parked.toolCallId,
      invocationId: parked.invocationId,
      attempt: 1,
      state: 'AwaitingApproval',
      toolId: 'fixture.wipe',
      toolVersion: '1',
      approvalId: parked.approvalId,
      arguments: { text: canonicalJson({ auth: { apiKey: R }, n: 1, pin: R, target: 'disk-7' }), redacted: ['/auth/apiKey', '/pin'], truncated: false },
    });
    expect(JSON.stringify(inspectedParked)).not.toMatch(/4711|sk-live-abc/);

    // A READ call's hot path indexes nothing: by ToolCallId alone it is not found, by its idempotency key at once.
    const contextToken = await agentContextToken(tenantKey, scope, { agentId, principal: caller.principal });
    const reply = await invokeAndAwaitReply(messaging, scope, InvocationRequest.parse({ toolId: 'fixture.count', arguments: { n: 2, password: 'hunter2', note: 'hello' }, idempotencyKey: 'inspect-read', correlationId: 'run-1', contextToken, replyInbox: newReplyInbox() }));
    if (!reply.ok) throw new Error(`the read call failed: ${reply.error.message}`);
    expect(await refusal(command(scope, 'inspectInvocation', { toolCallId: reply.data.receipt.toolCallId }, reader))).toMatch(/^NOT_FOUND: .*name its idempotency key/);
    const inspectedRead = await command(scope, 'inspectInvocation', { toolCallId: reply.data.receipt.toolCallId, idempotencyKey: 'inspect-read' }, reader);
    // A key that holds another call does not answer for this one.
    expect(await refusal(command(scope, 'inspectInvocation', { toolCallId: reply.data.receipt.toolCallId, idempotencyKey: 'inspect-gated' }, reader))).toMatch(/^NOT_FOUND: .*under that idempotency key/);
    expect(inspectedRead).toEqual({
      toolCallId: reply.data.receipt.toolCallId,
      invocationId: reply.data.receipt.invocationId,
      attempt: 1,
      state: 'Observed',
      toolId: 'fixture.count',
      toolVersion: '1',
      arguments: { text: canonicalJson({ n: 2, note: 'hello', password: R }), redacted: ['/password'], truncated: false },
      // The very result, content and signed receipt, the call's reply carried.
      result: reply.data,
    });
    expect(inspectedRead.result?.structuredContent).toEqual({ count: 1 });
    expect(verifyReceipt(inspectedRead.result?.receipt ?? reply.data.receipt, new Map([[receiptKeyId, receiptPublicKey]])).valid).toBe(true);

    expect(await refusal(command(scope, 'inspectInvocation', { toolCallId: 'no-such-call' }, reader))).toMatch(/^NOT_FOUND: no call no-such-call parked for an approval or ended Uncertain/);
    expect(await refusal(command(scope, 'inspectInvocation', { toolCallId: parked.toolCallId }, undefined))).toBe('AUTHENTICATION_FAILED: no operator token: send one as "Authorization: Bearer <token>"');
    const elsewhere = newWorkspace();
    const otherOperator = await tokenOf(operatorClaims(elsewhere, [POLICY_ADMIN_ROLE]));
    expect(await refusal(command(scope, 'inspectInvocation', { toolCallId: parked.toolCallId }, otherOperator))).toBe(`AUTHENTICATION_FAILED: token refused: it does not cover workspace ${scope.workspace}`);
    // On its own workspace's subject that operator finds nothing by this workspace's ToolCallId.
    expect(await refusal(command(elsewhere, 'inspectInvocation', { toolCallId: parked.toolCallId }, otherOperator))).toMatch(/^NOT_FOUND: /);
  });

  it('redacts the names the tenant policy lists, and prints the inspection with the CLI', { timeout: 60_000 }, async () => {
    const scope = await preparedWorkspace();
    const admin = await adminOf(scope);
    const current = await command(scope, 'getTenantPolicy', {}, admin);
    const { tenant: _tenant, updatedBy: _by, updatedAt: _at, version, ...rest } = current.policy;
    await command(scope, 'putTenantPolicy', { policy: { ...rest, sensitiveArgumentFields: ['TicketRef'] }, expectedVersion: current.isDefault ? 0 : version }, admin);

    await sendAsAgent(scope, 'fixture.count', { n: 3, ticketref: 'T-99', nested: { TICKETREF: 'T-100' } }, 'inspect-policy');
    const ended = await waitFor('the call to end', async () => {
      const document = await stored(scope, 'inspect-policy');
      return document?.state === 'Observed' ? document : undefined;
    });
    // The policy reaches this replica's watched copy milliseconds after the write: wait for the redaction.
    const inspected = await waitFor('the policy to redact', async () => {
      const reply = await command(scope, 'inspectInvocation', { toolCallId: ended.toolCallId, idempotencyKey: 'inspect-policy' }, admin);
      return reply.arguments.redacted.length === 2 ? reply : undefined;
    });
    expect(inspected.arguments.text).toBe(canonicalJson({ n: 3, nested: { TICKETREF: R }, ticketref: R }));

    let out = '';
    let err = '';
    const io: CliIo = { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readStdin: () => Promise.resolve(''), env: { TOOLPLANE_TOKEN: admin } };
    const code = await runCli(['--nats', nats.url, '--tenant', scope.tenant, '--workspace', scope.workspace, '--timeout', '15000', 'calls', 'inspect', ended.toolCallId, '--key', 'inspect-policy'], io);
    expect({ code, err }).toEqual({ code: 0, err: '' });
    expect(out).toContain(`--- arguments (untrusted, sensitive fields redacted) ---\n${inspected.arguments.text}\n`);
    expect(out).toContain('--- result (untrusted tool data) ---\n{\n  "count": 1\n}\n--- receipt ---\n');
    expect(out).not.toMatch(/T-99|T-100/);
  });
});
