import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  POLICY_ADMIN_ROLE,
  ToolDescriptor,
  ToolplaneError,
  commandFilter,
  commandSubject,
  descriptorBucketSettings,
  descriptorKey,
  flowCommandSchemas,
  flowOperations,
  flowRunnerStream,
  flowToolId,
  hasErrorCode,
  registryCommandSchemas,
  type FlowDefinitionBody,
  type PublishFlowToolRequest,
  type RetireFlowToolRequest,
  type Scope,
  type SideEffectClass,
  type ToolDefinitionSpec,
} from '@toolplane/contracts';
import { bearerHeaders, bearerTokenOf, createTokenVerifier, decodeTokenClaims, generateSigningKeyPair, issueToken } from '@toolplane/auth';
import { connectMessaging, ensureStream, openKv, request, serve, type Messaging, type ServeHandle } from '@toolplane/messaging';
import { testScope, uniqueName } from '@toolplane/testing';
import { serveManagement } from './management.js';

// FlowRunner's management operations on a real nats-server: Flows drafted, published (validated against the
// descriptor read model), activated; ToolDefinitions under ETag CRUD, each change materialized by a request to the
// registry's publishFlowTool / retireFlowTool. The registry's side of those two operations is not started here: a
// recording responder on their subjects stands in for it, answering as the contract says and failing on demand.

const scope = testScope('flow_management');
const tenant = uniqueName('flows').slice(0, 60);
const operatorKey = await generateSigningKeyPair('flow-management-test');
const author = 'user:author@example.com';

function freshScope(label: string): Scope {
  return { tenant, workspace: uniqueName(label).slice(0, 64) };
}

function operatorToken(where: Scope, options: { principal?: string; roles?: string[] } = {}): Promise<string> {
  return issueToken(
    { kind: 'human', tenant: where.tenant, workspaces: [where.workspace], principal: options.principal ?? author, roles: options.roles ?? [POLICY_ADMIN_ROLE] },
    operatorKey.privateKey,
    { kid: operatorKey.kid, expiresIn: '1h' },
  );
}

/** One registry call the stand-in answered: which operation, in which workspace, for whom, with what. */
interface RegistryCall {
  readonly operation: 'publishFlowTool' | 'retireFlowTool';
  readonly scope: string;
  readonly principal: string | undefined;
  readonly body: PublishFlowToolRequest | RetireFlowToolRequest;
}

/** A recording stand-in for the registry's publishFlowTool and retireFlowTool. */
function recordingRegistry() {
  const calls: RegistryCall[] = [];
  const published = new Map<string, ToolDescriptor>();
  let failures = 0;
  const principalOf = (headers: Readonly<Record<string, readonly string[]>>) => {
    const token = bearerTokenOf(headers);
    return token === undefined ? undefined : decodeTokenClaims(token)?.principal;
  };
  const start = async (m: Messaging): Promise<ServeHandle[]> => [
    await serve(m, {
      subject: commandFilter('registry', { operation: 'publishFlowTool' }),
      queue: 'registry-stand-in',
      requestSchema: registryCommandSchemas.publishFlowTool.request,
      replySchema: registryCommandSchemas.publishFlowTool.reply,
      handler: (body, { subject, headers }) => {
        const where = subject.split('.').slice(3, 5).join('/');
        calls.push({ operation: 'publishFlowTool', scope: where, principal: principalOf(headers), body });
        if (failures > 0) {
          failures -= 1;
          return Promise.reject(new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the registry is restarting'));
        }
        const [t = '', w = ''] = where.split('/');
        const descriptor = flowDescriptor({ tenant: t, workspace: w }, body);
        const key = `${where}/${body.definitionName}`;
        const created = published.get(key)?.toolVersion !== descriptor.toolVersion;
        published.set(key, descriptor);
        return Promise.resolve({ descriptor, created });
      },
    }),
    await serve(m, {
      subject: commandFilter('registry', { operation: 'retireFlowTool' }),
      queue: 'registry-stand-in',
      requestSchema: registryCommandSchemas.retireFlowTool.request,
      replySchema: registryCommandSchemas.retireFlowTool.reply,
      handler: (body, { subject, headers }) => {
        const where = subject.split('.').slice(3, 5).join('/');
        calls.push({ operation: 'retireFlowTool', scope: where, principal: principalOf(headers), body });
        const key = `${where}/${body.definitionName}`;
        const before = published.get(key);
        if (before === undefined) return Promise.resolve({});
        const descriptor: ToolDescriptor = { ...before, active: false, inactiveReason: 'Retired' };
        published.set(key, descriptor);
        return Promise.resolve({ descriptor });
      },
    }),
  ];
  return {
    start,
    calls: (where: Scope) => calls.filter((call) => call.scope === `${where.tenant}/${where.workspace}`),
    failNext: (n: number) => void (failures = n),
  };
}

const at = '2026-03-01T10:00:00.000Z';

function baseDescriptor(where: Scope, toolId: string, toolVersion: string, sideEffectClass: SideEffectClass): ToolDescriptor {
  return {
    tenant: where.tenant,
    workspace: where.workspace,
    toolId,
    toolVersion,
    kind: 'Mcp',
    providerToolName: toolId.split('.').at(-1) ?? toolId,
    description: `The ${toolId} tool.`,
    inputSchemaJson: '{"type":"object"}',
    definitionHash: '0'.repeat(64),
    sideEffectClass,
    riskClass: 'LOW',
    idempotency: 'NONE',
    authorization: { permissions: [], roles: [] },
    secretDependencies: [],
    timeoutMs: 30_000,
    retryPolicy: { maxAttempts: 1, initialBackoffMs: 0, maxBackoffMs: 0 },
    rateLimits: [],
    auditRequirements: { argumentsHash: true, resultHash: true },
    sandboxKind: 'None',
    healthy: true,
    active: true,
    boundBy: author,
    boundAt: at,
    updatedAt: at,
    version: 1,
  };
}

function flowDescriptor(where: Scope, body: PublishFlowToolRequest): ToolDescriptor {
  return {
    ...baseDescriptor(where, flowToolId(body.definitionName), String(body.definitionVersion), body.sideEffectClass),
    kind: 'Flow',
    providerToolName: body.mcpName,
    inputSchemaJson: body.inputSchemaJson,
    outputSchemaJson: body.outputSchemaJson,
    active: body.enabled,
    ...(body.enabled ? {} : { inactiveReason: 'Disabled' as const }),
  };
}

const inputSchema = { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] };
const outputSchema = { type: 'object', properties: { refunded: { type: 'number' } } };

function flowBody(overrides: Partial<FlowDefinitionBody> = {}): FlowDefinitionBody {
  return {
    title: 'Refund an order',
    inputSchema,
    outputSchema,
    steps: [
      { id: 'lookup', kind: 'call', tool: 'shop.get_order', arguments: '{"id": input.orderId}', retry: { maxAttempts: 3, backoffMs: 10 } },
      { id: 'refund', kind: 'call', tool: 'shop.refund', arguments: '{"id": input.orderId, "amount": steps.lookup.total}' },
    ],
    output: '{"refunded": steps.refund.amount}',
    ...overrides,
  };
}

function definitionSpec(overrides: Partial<ToolDefinitionSpec> = {}): z.input<typeof flowCommandSchemas.createDefinition.request>['definition'] {
  return {
    name: 'orders.refund',
    mcpName: 'refund_order',
    description: 'Refunds an order in full.',
    approval: 'Required',
    sideEffectClass: 'WRITE',
    riskClass: 'MEDIUM',
    inputSchema,
    outputSchema,
    timeoutMs: 60_000,
    flow: { flowId: 'refund', follow: 'active' },
    ...overrides,
  };
}

let service: Messaging;
let client: Messaging;
let handles: ServeHandle[] = [];
const registry = recordingRegistry();

/** Sends one management operation with an operator token of the scope (another token, or none with null). */
async function call<K extends keyof typeof flowCommandSchemas>(
  where: Scope,
  operation: K,
  body: z.input<(typeof flowCommandSchemas)[K]['request']>,
  token?: string | null,
): Promise<z.output<(typeof flowCommandSchemas)[K]['reply']>> {
  const bearer = token === undefined ? await operatorToken(where) : token;
  const schemas = flowCommandSchemas[operation];
  return request(client, {
    subject: commandSubject(where, 'flows', flowOperations[operation]),
    requestSchema: schemas.request,
    replySchema: schemas.reply,
    body: body,
    timeoutMs: 20_000,
    ...(bearer === null ? {} : { headers: bearerHeaders(bearer) }),
  }) as Promise<z.output<(typeof flowCommandSchemas)[K]['reply']>>;
}

/** The error a promise fails with, as code and message ('OK' if it does not fail). */
async function failure(work: Promise<unknown>): Promise<{ code: string; message: string; details?: Record<string, unknown> }> {
  try {
    await work;
  } catch (error) {
    if (hasErrorCode(error)) return { code: error.code, message: error.message, ...((error as { details?: Record<string, unknown> }).details === undefined ? {} : { details: (error as { details?: Record<string, unknown> }).details }) };
    throw error;
  }
  return { code: 'OK', message: '' };
}

/** Writes the active descriptors a scope's flows call into the registry's read model, as the registry would. */
async function bindShopTools(where: Scope): Promise<void> {
  const kv = await openKv(client, descriptorBucketSettings, ToolDescriptor);
  for (const [toolId, cls] of [
    ['shop.get_order', 'READ'],
    ['shop.refund', 'WRITE'],
  ] as const) {
    const descriptor = baseDescriptor(where, toolId, '1', cls);
    await kv.put(descriptorKey(where, toolId, '1'), descriptor);
  }
}

/** A workspace with flow `refund` version 1 published and active. */
async function workspaceWithActiveFlow(label: string): Promise<Scope> {
  const where = freshScope(label);
  await bindShopTools(where);
  await call(where, 'saveFlowDraft', { flowId: 'refund', body: flowBody() });
  await call(where, 'publishFlow', { flowId: 'refund' });
  await call(where, 'activateFlow', { flowId: 'refund', version: 1 });
  return where;
}

beforeAll(async () => {
  service = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_service` });
  client = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_client` });
  await ensureStream(service, flowRunnerStream);
  const verifier = createTokenVerifier({ [tenant]: [operatorKey.publicJwk] }, { clockToleranceSeconds: 5 });
  // Two replicas in one queue group, as a deployment runs them.
  handles = [...(await serveManagement({ messaging: service, verifier })), ...(await serveManagement({ messaging: client, verifier })), ...(await registry.start(service))];
});

afterAll(async () => {
  for (const handle of handles) await handle.stop();
  await client?.drain();
  await service?.drain();
});

describe('Flows', () => {
  it('drafts, edits the draft, publishes it (immutable), starts the next draft, and activates one version at a time', async () => {
    const where = freshScope('lifecycle');
    await bindShopTools(where);
    const first = await call(where, 'saveFlowDraft', { flowId: 'refund', body: flowBody({ output: '{"refunded": 0}' }) });
    expect(first).toMatchObject({ saved: true, flow: { flowId: 'refund', version: 1, status: 'Draft', active: false, createdBy: author, tenant: where.tenant, workspace: where.workspace } });
    const edited = await call(where, 'saveFlowDraft', { flowId: 'refund', body: flowBody() });
    expect(edited.flow).toMatchObject({ version: 1, status: 'Draft' });
    expect(edited.flow.bodyHash).not.toBe(first.flow.bodyHash);
    expect((await call(where, 'saveFlowDraft', { flowId: 'refund', body: flowBody() })).saved).toBe(false);

    const published = await call(where, 'publishFlow', { flowId: 'refund' });
    expect(published).toMatchObject({ published: true, flow: { version: 1, status: 'Published', publishedBy: author } });
    expect((await call(where, 'publishFlow', { flowId: 'refund', version: 1 })).published).toBe(false);
    expect(await failure(call(where, 'saveFlowDraft', { flowId: 'refund', version: 1, body: flowBody({ output: '{"refunded": 1}' }) }))).toMatchObject({ code: 'CONFLICT' });

    const second = await call(where, 'saveFlowDraft', { flowId: 'refund', body: flowBody({ output: '{"refunded": 2}' }) });
    expect(second.flow).toMatchObject({ version: 2, status: 'Draft' });
    expect(await failure(call(where, 'activateFlow', { flowId: 'refund', version: 2 }))).toMatchObject({ code: 'CONFLICT' });
    expect(await call(where, 'activateFlow', { flowId: 'refund', version: 1 })).toMatchObject({ activated: true, flow: { version: 1, active: true } });
    await call(where, 'publishFlow', { flowId: 'refund' });
    expect(await call(where, 'activateFlow', { flowId: 'refund', version: 2 })).toMatchObject({ activated: true, previousVersion: 1, flow: { version: 2, active: true } });

    const read = await call(where, 'getFlow', { flowId: 'refund' });
    expect(read.flow.version).toBe(2);
    expect(read.versions.map((v) => [v.version, v.status, v.active])).toEqual([
      [1, 'Published', false],
      [2, 'Published', true],
    ]);
    expect((await call(where, 'getFlow', { flowId: 'refund', version: 1 })).flow.body.output).toBe('{"refunded": steps.refund.amount}');
    expect(await failure(call(where, 'getFlow', { flowId: 'nothing' }))).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('validates the whole body on publish with typed errors: an unknown tool is NOT_FOUND, a retried WRITE INVALID_ARGUMENT, naming the step', async () => {
    const where = freshScope('validation');
    await bindShopTools(where);
    await call(where, 'saveFlowDraft', { flowId: 'unknown', body: flowBody({ steps: [{ id: 'ghost', kind: 'call', tool: 'shop.ghost', arguments: '{}' }], output: '{}' }) });
    const unknown = await failure(call(where, 'publishFlow', { flowId: 'unknown' }));
    expect(unknown.code).toBe('NOT_FOUND');
    expect(unknown.message).toContain('"ghost"');
    await call(where, 'saveFlowDraft', {
      flowId: 'retried',
      body: flowBody({ steps: [{ id: 'refund', kind: 'call', tool: 'shop.refund', arguments: '{}', retry: { maxAttempts: 2, backoffMs: 0 } }], output: '{}' }),
    });
    const retried = await failure(call(where, 'publishFlow', { flowId: 'retried' }));
    expect(retried.code).toBe('INVALID_ARGUMENT');
    expect(retried.message).toMatch(/"refund".*READ/);
    expect((await call(where, 'getFlow', { flowId: 'retried' })).flow.status).toBe('Draft');
    // A tool of another workspace is not one of this workspace's.
    const elsewhere = freshScope('validation_other');
    await call(elsewhere, 'saveFlowDraft', { flowId: 'refund', body: flowBody() });
    expect((await failure(call(elsewhere, 'publishFlow', { flowId: 'refund' }))).code).toBe('NOT_FOUND');
  });

  it('lists the workspace flows by id, a page at a time', async () => {
    const where = freshScope('flow_list');
    await bindShopTools(where);
    for (const flowId of ['c-flow', 'a-flow', 'b-flow']) await call(where, 'saveFlowDraft', { flowId, body: flowBody() });
    await call(where, 'publishFlow', { flowId: 'b-flow' });
    await call(where, 'activateFlow', { flowId: 'b-flow', version: 1 });
    const firstPage = await call(where, 'listFlows', { limit: 2 });
    expect(firstPage.flows.map((flow) => flow.flowId)).toEqual(['a-flow', 'b-flow']);
    expect(firstPage.flows[1]).toMatchObject({ latestVersion: 1, activeVersion: 1, publishedVersions: 1, title: 'Refund an order' });
    expect(firstPage.next).toBe('b-flow');
    const secondPage = await call(where, 'listFlows', { limit: 2, after: 'b-flow' });
    expect(secondPage).toMatchObject({ flows: [{ flowId: 'c-flow', draftVersion: 1 }], next: null });
    expect((await call(freshScope('flow_list_empty'), 'listFlows', {})).flows).toEqual([]);
  });
});

describe('ToolDefinitions', () => {
  it('creates if absent, reads with an etag, updates and deletes only If-Match, and materializes every change in the registry', async () => {
    const where = await workspaceWithActiveFlow('crud');
    const created = await call(where, 'createDefinition', { definition: definitionSpec() });
    expect(created).toMatchObject({ created: true, etag: '"1"', definition: { name: 'orders.refund', enabled: true, version: 1, createdBy: author }, tool: { toolId: 'flows.orders.refund', toolVersion: '1', active: true } });
    expect(registry.calls(where).at(-1)).toEqual({
      operation: 'publishFlowTool',
      scope: `${where.tenant}/${where.workspace}`,
      principal: author,
      body: {
        definitionName: 'orders.refund',
        mcpName: 'refund_order',
        description: 'Refunds an order in full.',
        inputSchemaJson: '{"properties":{"orderId":{"type":"string"}},"required":["orderId"],"type":"object"}',
        outputSchemaJson: '{"properties":{"refunded":{"type":"number"}},"type":"object"}',
        sideEffectClass: 'WRITE',
        riskClass: 'MEDIUM',
        approvalRequired: true,
        timeoutMs: 60_000,
        enabled: true,
        definitionVersion: 1,
      },
    });
    // The same create again (a retry) is answered with what exists; another one is CONFLICT naming the etag.
    expect(await call(where, 'createDefinition', { definition: definitionSpec() })).toMatchObject({ created: false, etag: '"1"' });
    expect(await failure(call(where, 'createDefinition', { definition: definitionSpec({ description: 'Another.' }) }))).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('"1"') as string });

    const read = await call(where, 'getDefinition', { name: 'orders.refund' });
    expect(read).toMatchObject({ etag: '"1"', definition: { mcpName: 'refund_order', flow: { flowId: 'refund', follow: 'active' } } });

    const disabled = await call(where, 'updateDefinition', { name: 'orders.refund', ifMatch: read.etag, definition: definitionSpec({ enabled: false }) });
    expect(disabled).toMatchObject({ etag: '"2"', definition: { enabled: false }, tool: { toolVersion: '2', active: false, inactiveReason: 'Disabled' } });
    const stale = await failure(call(where, 'updateDefinition', { name: 'orders.refund', ifMatch: '"1"', definition: definitionSpec() }));
    expect(stale).toMatchObject({ code: 'CONFLICT', details: { etag: '"2"' } });
    expect(stale.message).toContain('current etag "2"');
    // Shells strip the quotes: the bare version is the same tag.
    expect((await call(where, 'updateDefinition', { name: 'orders.refund', ifMatch: '2', definition: definitionSpec() })).etag).toBe('"3"');

    expect(await failure(call(where, 'deleteDefinition', { name: 'orders.refund', ifMatch: '"2"' }))).toMatchObject({ code: 'CONFLICT', details: { etag: '"3"' } });
    const deleted = await call(where, 'deleteDefinition', { name: 'orders.refund', ifMatch: '"3"' });
    expect(deleted).toMatchObject({ etag: '"4"', definition: { deleted: true }, tool: { toolId: 'flows.orders.refund', active: false, inactiveReason: 'Retired' } });
    expect(registry.calls(where).at(-1)).toMatchObject({ operation: 'retireFlowTool', principal: author, body: { definitionName: 'orders.refund' } });
    expect(await failure(call(where, 'getDefinition', { name: 'orders.refund' }))).toMatchObject({ code: 'NOT_FOUND' });
    expect((await call(where, 'listDefinitions', {})).definitions).toEqual([]);

    // A deleted name can be created again, under a new etag (and a newer tool version).
    const again = await call(where, 'createDefinition', { definition: definitionSpec() });
    expect(again).toMatchObject({ created: true, etag: '"5"', tool: { toolVersion: '5', active: true } });
  });

  it('requires equal schemas when saved enabled and on enable, and lets a disabled definition be edited', async () => {
    const where = await workspaceWithActiveFlow('schemas');
    const otherInput = { type: 'object', properties: { id: { type: 'integer' } } };
    const onSave = await failure(call(where, 'createDefinition', { definition: definitionSpec({ inputSchema: otherInput }) }));
    expect(onSave.code).toBe('INVALID_ARGUMENT');
    expect(onSave.message).toMatch(/^schema mismatch: the input schema of definition orders\.refund differs from version 1 of flow refund/);
    expect(registry.calls(where).filter((c) => c.operation === 'publishFlowTool')).toEqual([]);

    const disabled = await call(where, 'createDefinition', { definition: definitionSpec({ enabled: false, inputSchema: otherInput }) });
    expect(disabled).toMatchObject({ etag: '"1"', tool: { active: false, inactiveReason: 'Disabled' } });
    const edited = await call(where, 'updateDefinition', { name: 'orders.refund', ifMatch: '"1"', definition: definitionSpec({ enabled: false, inputSchema: otherInput, title: 'Refund' }) });
    expect(edited.etag).toBe('"2"');
    const onEnable = await failure(call(where, 'updateDefinition', { name: 'orders.refund', ifMatch: '"2"', definition: definitionSpec({ inputSchema: otherInput }) }));
    expect(onEnable).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('schema mismatch') as string });
    expect((await call(where, 'updateDefinition', { name: 'orders.refund', ifMatch: '"2"', definition: definitionSpec() })).definition.enabled).toBe(true);

    // A pinned draft version and a flow that does not exist cannot be resolved.
    await call(where, 'saveFlowDraft', { flowId: 'refund', body: flowBody({ output: '{"refunded": 3}' }) });
    expect(await failure(call(where, 'createDefinition', { definition: definitionSpec({ name: 'orders.pinned', mcpName: 'pinned', flow: { flowId: 'refund', version: 2 } }) }))).toMatchObject({ code: 'CONFLICT' });
    expect(await failure(call(where, 'createDefinition', { definition: definitionSpec({ name: 'orders.none', mcpName: 'none', flow: { flowId: 'ghost', follow: 'active' } }) }))).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('refuses to activate a Flow version that would break an enabled definition following the active version, naming it', async () => {
    const where = await workspaceWithActiveFlow('breaking');
    await call(where, 'createDefinition', { definition: definitionSpec() });
    const breaking = flowBody({ outputSchema: { type: 'object', properties: { refunded: { type: 'integer' } } } });
    await call(where, 'saveFlowDraft', { flowId: 'refund', body: breaking });
    await call(where, 'publishFlow', { flowId: 'refund' });
    const refused = await failure(call(where, 'activateFlow', { flowId: 'refund', version: 2 }));
    expect(refused.code).toBe('CONFLICT');
    expect(refused.message).toContain('orders.refund');
    expect((await call(where, 'getFlow', { flowId: 'refund' })).flow.version).toBe(1);
    // Once the follower is disabled, the activation goes through.
    await call(where, 'updateDefinition', { name: 'orders.refund', ifMatch: '"1"', definition: definitionSpec({ enabled: false }) });
    expect((await call(where, 'activateFlow', { flowId: 'refund', version: 2 })).activated).toBe(true);
  });

  it('surfaces a registry failure after the change was stored as TEMPORARY_UNAVAILABLE with its etag, and the next save repairs it', async () => {
    const where = await workspaceWithActiveFlow('repair');
    registry.failNext(1);
    const failed = await failure(call(where, 'createDefinition', { definition: definitionSpec() }));
    expect(failed).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { etag: '"1"', reason: 'TOOL_NOT_MATERIALIZED', registryCode: 'TEMPORARY_UNAVAILABLE' } });
    expect((await call(where, 'getDefinition', { name: 'orders.refund' })).etag).toBe('"1"');
    const before = registry.calls(where).length;
    // Saving the same definition again records nothing and publishes what the record holds.
    const repaired = await call(where, 'updateDefinition', { name: 'orders.refund', ifMatch: '"1"', definition: definitionSpec() });
    expect(repaired).toMatchObject({ etag: '"1"', tool: { toolVersion: '1', active: true } });
    expect(registry.calls(where).slice(before)).toMatchObject([{ operation: 'publishFlowTool', body: { definitionVersion: 1 } }]);
  });

  it('keeps MCP names unique in the workspace and lists definitions by name, by flow and by enablement', async () => {
    const where = await workspaceWithActiveFlow('listing');
    await call(where, 'createDefinition', { definition: definitionSpec({ name: 'orders.b', mcpName: 'b' }) });
    await call(where, 'createDefinition', { definition: definitionSpec({ name: 'orders.a', mcpName: 'a', enabled: false }) });
    await call(where, 'createDefinition', { definition: definitionSpec({ name: 'orders.c', mcpName: 'c', flow: { flowId: 'refund', version: 1 } }) });
    expect(await failure(call(where, 'createDefinition', { definition: definitionSpec({ name: 'orders.d', mcpName: 'b' }) }))).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('orders.b') as string });
    const firstPage = await call(where, 'listDefinitions', { limit: 2 });
    expect(firstPage.definitions.map((d) => [d.name, d.etag])).toEqual([
      ['orders.a', '"1"'],
      ['orders.b', '"1"'],
    ]);
    expect(firstPage.next).toBe('orders.b');
    expect((await call(where, 'listDefinitions', { after: 'orders.b' })).definitions.map((d) => d.name)).toEqual(['orders.c']);
    expect((await call(where, 'listDefinitions', { enabled: true })).definitions.map((d) => d.name)).toEqual(['orders.b', 'orders.c']);
    expect((await call(where, 'listDefinitions', { flowId: 'other' })).definitions).toEqual([]);
  });

  it('gives exactly one of many concurrent creates of a name, across replicas', async () => {
    const where = await workspaceWithActiveFlow('race');
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => failure(call(where, 'createDefinition', { definition: definitionSpec({ description: `Writer ${i}.` }) }))));
    expect(results.filter((result) => result.code === 'OK')).toHaveLength(1);
    expect(results.filter((result) => result.code === 'CONFLICT')).toHaveLength(7);
    expect((await call(where, 'getDefinition', { name: 'orders.refund' })).etag).toBe('"1"');
  });
});

describe('who may ask', () => {
  it('needs an operator token of the scope; changes need the policy-admin role; the token principal is recorded', async () => {
    const where = await workspaceWithActiveFlow('tokens');
    expect((await failure(call(where, 'listFlows', {}, null))).code).toBe('AUTHENTICATION_FAILED');
    const otherWorkspace = await operatorToken(freshScope('tokens_other'));
    expect((await failure(call(where, 'getFlow', { flowId: 'refund' }, otherWorkspace))).code).toBe('AUTHENTICATION_FAILED');
    const reader = await operatorToken(where, { principal: 'user:reader@example.com', roles: [] });
    expect((await call(where, 'getFlow', { flowId: 'refund' }, reader)).flow.version).toBe(1);
    expect((await failure(call(where, 'createDefinition', { definition: definitionSpec() }, reader))).code).toBe('AUTHORIZATION_DENIED');
    expect((await failure(call(where, 'saveFlowDraft', { flowId: 'refund', body: flowBody() }, reader))).code).toBe('AUTHORIZATION_DENIED');
    const admin = await operatorToken(where, { principal: 'user:admin@example.com' });
    const created = await call(where, 'createDefinition', { definition: definitionSpec() }, admin);
    expect(created.definition).toMatchObject({ createdBy: 'user:admin@example.com', updatedBy: 'user:admin@example.com' });
    expect(registry.calls(where).at(-1)?.principal).toBe('user:admin@example.com');
  });
});
