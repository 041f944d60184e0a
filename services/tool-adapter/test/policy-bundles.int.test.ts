// Server policy bundles in-process against real NATS and FerretDB: bundle CRUD over request/reply with version
// guards and operator roles; a server whose bundle denies WRITE refusing a WRITE the tenant policy allows (the
// bundle named in the reason), the next call after a bundle change allowed, a deleted (missing) bundle refusing;
// a server that cannot be asked refusing as retryable; and the registry's checks (checkPolicyBundle,
// checkToolPublication) answered service to service.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  InvocationRequest,
  POLICY_ADMIN_ROLE,
  ToolDescriptor,
  ToolplaneError,
  adapterCommandSchemas,
  commandSubject,
  hasErrorCode,
  type InvocationReply,
  type PolicyBundleInput,
  type Scope,
} from '@toolplane/contracts';
import { bearerHeaders, generateSigningKeyPair, type SigningKeyPair } from '@toolplane/auth';
import { FixtureServer, sandboxScratchDir } from '@toolplane/mcp/testing';
import { connectMessaging, openKv, request, type Messaging, type ServeHandle, type TypedKv } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { testScope } from '@toolplane/testing';
import { startNatsServer, type NatsServer } from './adapter-harness.js';
import { descriptorBucket, toolAdapterService } from '../src/mod.js';
import {
  adapterTestEnv,
  agentContextToken,
  countFileOf,
  countedExecutions,
  fixtureServerDocument,
  invokeAndAwaitReply,
  newReplyInbox,
  operatorClaims,
  operatorToken,
  putDescriptor,
  receiptSigningKey,
  serveStandInRegistry,
  testDescriptor,
} from '../src/testing.js';

const infra = testScope('policy_bundles');
// The work queue's durable consumer is one per stream: a nats-server of this file's own.
let nats: NatsServer;
const tenant = `t${randomUUID().slice(0, 8)}`;
const agentId = 'agent-support';
const principal = 'user:alice@example.com';

let tenantKey: SigningKeyPair;
let adapter: RunningService;
let messaging: Messaging;
let descriptors: TypedKv<ToolDescriptor>;
let registry: ServeHandle;
let tmp: string;
/** Per workspace: its server's id, and the bundle the server names (undefined: the registry cannot answer for it). */
const servers = new Map<string, { readonly serverId: string; readonly governancePolicyRef: string | undefined }>();

beforeAll(async () => {
  nats = await startNatsServer();
  tenantKey = await generateSigningKeyPair('tenant-1');
  const receiptKeys = receiptSigningKey();
  tmp = await sandboxScratchDir('policy-bundles-');
  adapter = await startService(
    toolAdapterService,
    adapterTestEnv({ natsUrl: nats.url, mongoUrl: infra.mongoUrl, dbName: infra.dbName, trustedKeys: { [tenant]: [tenantKey.publicJwk] }, signingKey: receiptKeys.setting, signingKeyId: 'policy-bundles-test' }),
  );
  messaging = await connectMessaging({ url: nats.url, name: 'policy-bundles-test' });
  descriptors = await openKv(messaging, descriptorBucket, ToolDescriptor);
  registry = await serveStandInRegistry(messaging, {
    tenant,
    serverFor: (serverId, scope) => {
      const server = servers.get(scope.workspace);
      if (server?.serverId !== serverId || server.governancePolicyRef === undefined) throw new ToolplaneError('NOT_FOUND', `no server ${serverId}`);
      return { ...fixtureServerDocument({ serverId, scope, name: 'fixture' }, FixtureServer.countingEcho, countFileOf(tmp, scope)), governancePolicyRef: server.governancePolicyRef };
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

type Operation = 'getPolicyBundle' | 'listPolicyBundles' | 'putPolicyBundle' | 'deletePolicyBundle' | 'checkPolicyBundle' | 'checkToolPublication' | 'putAgentProfile';
type Body<O extends Operation> = z.input<(typeof adapterCommandSchemas)[O]['request']>;
type Reply<O extends Operation> = z.output<(typeof adapterCommandSchemas)[O]['reply']>;

async function command<O extends Operation>(scope: Scope, operation: O, body: Body<O>, token?: string): Promise<Reply<O>> {
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

const adminOf = (scope: Scope) => operatorToken(tenantKey, operatorClaims(scope, [POLICY_ADMIN_ROLE]));
const readerOf = (scope: Scope) => operatorToken(tenantKey, operatorClaims(scope, ['approver'], 'user:rita@example.com'));

function bundleInput(name: string, overrides: Partial<PolicyBundleInput> = {}): PolicyBundleInput {
  return { name, deniedSideEffectClasses: [], approvalRequiredClasses: [], rateLimits: [], classRaises: [], commands: { block: [], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' }, ...overrides };
}

let workspaces = 0;
/** A workspace whose server names `governancePolicyRef`, with the agent's profile and a non-idempotent WRITE tool. */
async function workspaceNaming(governancePolicyRef: string | undefined): Promise<Scope> {
  workspaces += 1;
  const scope = { tenant, workspace: `w${workspaces}_${randomUUID().slice(0, 8)}` };
  const serverId = randomUUID();
  servers.set(scope.workspace, { serverId, governancePolicyRef });
  await command(scope, 'putAgentProfile', { profile: { agentId, allowedTools: ['fixture.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] } }, await adminOf(scope));
  await putDescriptor(
    descriptors,
    testDescriptor(
      { scope, toolId: 'fixture.write', providerToolName: 'count_calls', mcpServerId: serverId, inputSchema: { type: 'object', properties: { n: { type: 'integer' } } } },
      { sideEffectClass: 'WRITE', riskClass: 'MEDIUM', idempotency: 'NONE' },
    ),
  );
  return scope;
}

async function invoke(scope: Scope, idempotencyKey: string): Promise<InvocationReply> {
  const contextToken = await agentContextToken(tenantKey, scope, { agentId, principal });
  return invokeAndAwaitReply(messaging, scope, InvocationRequest.parse({ toolId: 'fixture.write', arguments: { n: 1 }, idempotencyKey, correlationId: 'run-1', contextToken, replyInbox: newReplyInbox() }));
}

/** The status and failure of a reply, as one comparable value. */
function outcome(reply: InvocationReply): { status: string; code?: string | undefined; message?: string | undefined; retryable?: boolean | undefined } {
  if (!reply.ok) throw new Error(`the call was refused outright: ${reply.error.code} ${reply.error.message}`);
  const failure = reply.data.receipt.failure;
  return { status: reply.data.status, code: failure?.code, message: failure?.message, retryable: failure?.retryable };
}

describe('policy bundles over request/reply', () => {
  it('creates, replaces, lists and deletes bundles, guarded by expectedVersion, written only with the policy-admin role', { timeout: 60_000 }, async () => {
    const scope = await workspaceNaming('default');
    const admin = await adminOf(scope);
    const reader = await readerOf(scope);
    const created = await command(scope, 'putPolicyBundle', { bundle: bundleInput('crud-a', { description: 'first' }), expectedVersion: 0 }, admin);
    expect(created.bundle).toMatchObject({ tenant, name: 'crud-a', description: 'first', version: 1, updatedBy: 'user:ada@example.com' });
    expect(await refusal(command(scope, 'putPolicyBundle', { bundle: bundleInput('crud-a'), expectedVersion: 0 }, admin))).toBe('CONFLICT: policy bundle crud-a: expected none to exist, found version 1');
    expect(await refusal(command(scope, 'putPolicyBundle', { bundle: bundleInput('crud-a') }, reader))).toMatch(/^AUTHORIZATION_DENIED: /);
    expect(await refusal(command(scope, 'putPolicyBundle', { bundle: bundleInput('crud-bad', { commands: { block: ['(x)\\1'], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' } }) }, admin))).toMatch(
      /^INVALID_ARGUMENT: commands\.block\[0\]/,
    );
    expect((await command(scope, 'putPolicyBundle', { bundle: bundleInput('crud-a', { deniedSideEffectClasses: ['WRITE'] }), expectedVersion: 1 }, admin)).bundle.version).toBe(2);
    await command(scope, 'putPolicyBundle', { bundle: bundleInput('crud-b') }, admin);
    expect((await command(scope, 'getPolicyBundle', { name: 'crud-a' }, reader)).bundle).toMatchObject({ deniedSideEffectClasses: ['WRITE'], version: 2 });
    const first = await command(scope, 'listPolicyBundles', { limit: 1 }, reader);
    expect(first.items.map((bundle) => bundle.name)).toEqual(['crud-a']);
    expect((await command(scope, 'listPolicyBundles', { limit: 5, after: first.next ?? '' }, reader)).items.map((bundle) => bundle.name)).toEqual(['crud-b']);
    expect(await command(scope, 'checkPolicyBundle', { name: 'crud-a' })).toEqual({ name: 'crud-a', exists: true, version: 2 });
    expect(await refusal(command(scope, 'deletePolicyBundle', { name: 'crud-a', expectedVersion: 1 }, admin))).toBe('CONFLICT: policy bundle crud-a: expected version 1, found version 2');
    expect(await command(scope, 'deletePolicyBundle', { name: 'crud-a', expectedVersion: 2 }, admin)).toEqual({ name: 'crud-a', deleted: true });
    expect(await refusal(command(scope, 'getPolicyBundle', { name: 'crud-a' }, reader))).toBe(`NOT_FOUND: no policy bundle "crud-a" in tenant ${tenant}`);
    expect(await command(scope, 'checkPolicyBundle', { name: 'crud-a' })).toEqual({ name: 'crud-a', exists: false });
    // `default` with none stored is a bundle that adds nothing: a server may always name it.
    expect(await command(scope, 'checkPolicyBundle', { name: 'default' })).toEqual({ name: 'default', exists: true });
  });
});

describe('calls through a server with a policy bundle', () => {
  it('refuses a WRITE the tenant policy allows while the bundle denies WRITE, naming the bundle; a change bites on the next call; a deleted bundle refuses', { timeout: 90_000 }, async () => {
    const scope = await workspaceNaming('payments-strict');
    const admin = await adminOf(scope);
    const strict = await command(scope, 'putPolicyBundle', { bundle: bundleInput('payments-strict', { deniedSideEffectClasses: ['WRITE'] }) }, admin);

    expect(outcome(await invoke(scope, 'strict-1'))).toEqual({ status: 'DENIED', code: 'AUTHORIZATION_DENIED', message: 'policy bundle "payments-strict" denies WRITE', retryable: false });
    expect(await countedExecutions(countFileOf(tmp, scope))).toBe(0);

    // The put returns once this replica's watched copy has it: the very next call is governed by the new version.
    await command(scope, 'putPolicyBundle', { bundle: bundleInput('payments-strict'), expectedVersion: strict.bundle.version }, admin);
    expect(outcome(await invoke(scope, 'relaxed-1'))).toEqual({ status: 'SUCCESS', code: undefined, message: undefined, retryable: undefined });
    expect(await countedExecutions(countFileOf(tmp, scope))).toBe(1);

    await command(scope, 'deletePolicyBundle', { name: 'payments-strict' }, admin);
    const missing = outcome(await invoke(scope, 'missing-1'));
    expect(missing).toMatchObject({ status: 'DENIED', code: 'AUTHORIZATION_DENIED', retryable: false });
    expect(missing.message).toBe(`the server of fixture.write names policy bundle "payments-strict", which does not exist in tenant ${tenant}`);
    expect(await countedExecutions(countFileOf(tmp, scope))).toBe(1);
  });

  it('governs a server naming `default` with none stored by the profile and tenant policy alone', { timeout: 60_000 }, async () => {
    const scope = await workspaceNaming('default');
    expect(outcome(await invoke(scope, 'default-1')).status).toBe('SUCCESS');
  });

  it('refuses, as retryable, a call whose server the registry cannot answer for, so its bundle is unknown', { timeout: 60_000 }, async () => {
    const scope = await workspaceNaming(undefined);
    const refused = outcome(await invoke(scope, 'unknown-1'));
    expect(refused).toMatchObject({ status: 'DENIED', code: 'TEMPORARY_UNAVAILABLE', retryable: true });
    expect(refused.message).toMatch(/^the policy bundle of the server of fixture\.write cannot be learnt: /);
    expect(await countedExecutions(countFileOf(tmp, scope))).toBe(0);
  });
});

describe('checkToolPublication', () => {
  it('reports the agents of the workspace that list a WRITE tool but are limited to READ', { timeout: 60_000 }, async () => {
    const scope = await workspaceNaming('default');
    const admin = await adminOf(scope);
    await command(scope, 'putAgentProfile', { profile: { agentId: 'reader', allowedTools: ['fixture.*'], deniedTools: [], maxRiskClass: 'HIGH', maxSideEffectClass: 'READ', permissions: [] } }, admin);
    await command(scope, 'putAgentProfile', { profile: { agentId: 'not-listing', allowedTools: ['other.*'], deniedTools: [], maxRiskClass: 'LOW', maxSideEffectClass: 'READ', permissions: [] } }, admin);
    expect(await command(scope, 'checkToolPublication', { toolId: 'fixture.write', sideEffectClass: 'WRITE', riskClass: 'MEDIUM' })).toEqual({
      conflicts: [{ agentId: 'reader', code: 'CLASS_ABOVE_AGENT_MAX', reason: 'fixture.write is WRITE; the agent lists it (pattern fixture.*) but may cause at most READ' }],
    });
    expect(await command(scope, 'checkToolPublication', { toolId: 'fixture.read', sideEffectClass: 'READ', riskClass: 'LOW' })).toEqual({ conflicts: [] });
  });
});
