import { describe, expect, it } from 'vitest';
import {
  BindToolRequest,
  FLOW_PROVIDER_NAME,
  PublishFlowToolRequest,
  RegisterServerRequest,
  flowProviderId,
  sha256Hex,
  type McpServerRecord,
  type RegistryEvent,
  type ReleaseRecord, type ServerNameRecord,
  type ToolDescriptor,
  type ToolDescriptorRecord,
} from '@toolplane/contracts';
import { inMemoryEventStore } from '@toolplane/event-store';
import type { McpGateway } from '../adapters/mcp-gateway.js';
import type { DiscoveredCapabilities } from '../core/snapshot.js';
import { getDescriptor } from './queries.js';
import { publishFlowTool, retireFlowTool } from './flow-tool-commands.js';
import type { RegistryContext } from './registry-context.js';
import { discoverServer, getServer, grantAuthenticationException, registerServer, retireServer } from './server-commands.js';
import { bindTool, unbindTool } from './tool-commands.js';

// publishFlowTool and retireFlowTool on in-memory event stores: the reserved provider, versions that follow the
// definition's (with gaps), idempotent retries, Disabled and Retired, and the MCP operations that must leave the
// reserved provider and namespace alone.

const scope = { tenant: 'acme', workspace: 'dev' };
const operator = 'user:op@example.com';
const found: DiscoveredCapabilities = {
  protocolVersion: '2025-06-18',
  serverInfo: { name: 'flows', version: '1.0.0' },
  tools: [{ name: 'echo', inputSchemaJson: '{"type":"object"}', definitionHash: sha256Hex('echo') }],
  resources: [],
  prompts: [],
};

function registry() {
  const published: RegistryEvent[] = [];
  const readModel: ToolDescriptor[] = [];
  let ids = 0;
  const mcp: Partial<McpGateway> = {
    findExecutable: (executable) => Promise.resolve(executable),
    discover: () => Promise.resolve(found),
    release: () => Promise.resolve(),
  };
  const untouchable = new Proxy({} as RegistryContext['readModels'], {
    get: () => {
      throw new Error('a read model was read by a command');
    },
  });
  const context: RegistryContext = {
    stores: { servers: inMemoryEventStore<McpServerRecord>(), descriptors: inMemoryEventStore<ToolDescriptorRecord>(), names: inMemoryEventStore<ServerNameRecord>(), releases: inMemoryEventStore<ReleaseRecord>(), releaseAppends: () => Promise.resolve([]) },
    readModels: untouchable,
    readModelsCaughtUp: () => Promise.resolve(),
    mcp: mcp as McpGateway,
    publishEvents: (events) => Promise.resolve(void published.push(...events)),
    publishDescriptor: (descriptor) => Promise.resolve(void readModel.push(descriptor)),
    now: () => '2026-11-29T12:00:00.000Z',
    newId: () => `0b9f6a3e-2f4c-4b7a-9c1d-5e6f7a8b9c${String(ids++).padStart(2, '0')}`,
    failureThreshold: 3,
  };
  return { context, published, readModel };
}

const refund = (overrides: Partial<PublishFlowToolRequest> = {}): PublishFlowToolRequest =>
  PublishFlowToolRequest.parse({
    definitionName: 'orders.refund',
    mcpName: 'refund_order',
    title: 'Refund an order',
    description: 'Refunds an order in full.',
    inputSchemaJson: '{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}',
    outputSchemaJson: '{"type":"object","properties":{"refundId":{"type":"string"}}}',
    sideEffectClass: 'WRITE',
    riskClass: 'HIGH',
    approvalRequired: true,
    timeoutMs: 60_000,
    enabled: true,
    definitionVersion: 7,
    ...overrides,
  });

describe('publishFlowTool', () => {
  it('creates the reserved provider (Local, Published, Active) with the first flow tool, and publishes the descriptor as designed', async () => {
    const { context, published, readModel } = registry();
    const reply = await publishFlowTool(context, scope, refund(), operator);
    expect(reply.created).toBe(true);
    expect(reply.descriptor).toMatchObject({
      toolId: 'flows.orders.refund',
      toolVersion: '7',
      kind: 'Flow',
      providerToolName: 'refund_order',
      mcpServerId: flowProviderId(scope),
      idempotency: 'SUPPORTED_WITH_KEY',
      sandboxKind: 'None',
      secretDependencies: [],
      retryPolicy: { maxAttempts: 1 },
      timeoutMs: 60_000,
      approvalRequired: true,
      sideEffectClass: 'WRITE',
      riskClass: 'HIGH',
      active: true,
      healthy: true,
      boundBy: operator,
    });
    expect(reply.descriptor.definitionHash).toMatch(/^[0-9a-f]{64}$/);
    const provider = await getServer(context, scope, flowProviderId(scope));
    expect(provider).toMatchObject({ name: FLOW_PROVIDER_NAME, transport: 'Local', direction: 'Published', state: 'Active', registeredBy: operator });
    expect(provider.endpointUrl).toBeUndefined();
    expect(provider.command).toBeUndefined();
    expect(published.map((event) => event.type)).toEqual(['McpServerRegistered', 'ToolDescriptorActivated']);
    expect(readModel.map((d) => `${d.toolId}@${d.toolVersion}`)).toEqual(['flows.orders.refund@7']);
  });

  it('answers the same version published the same way as it is, and refuses the same version with other fields', async () => {
    const { context, published } = registry();
    const first = await publishFlowTool(context, scope, refund(), operator);
    const again = await publishFlowTool(context, scope, refund(), operator);
    expect(again).toEqual({ descriptor: first.descriptor, created: false });
    expect(published).toHaveLength(2);
    await expect(publishFlowTool(context, scope, refund({ description: 'other' }), operator)).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(publishFlowTool(context, scope, refund({ enabled: false }), operator)).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('supersedes the older active version with a newer one (versions follow the definition, with gaps), and refuses an older one', async () => {
    const { context } = registry();
    await publishFlowTool(context, scope, refund({ definitionVersion: 3 }), operator);
    const newer = await publishFlowTool(context, scope, refund({ definitionVersion: 40, riskClass: 'CRITICAL' }), operator);
    expect(newer.descriptor).toMatchObject({ toolVersion: '40', riskClass: 'CRITICAL', active: true });
    expect(await getDescriptor(context, scope, { toolId: 'flows.orders.refund', toolVersion: '3' })).toMatchObject({ active: false, inactiveReason: 'Superseded' });
    expect(await getDescriptor(context, scope, { toolId: 'flows.orders.refund' })).toMatchObject({ toolVersion: '40' });
    await expect(publishFlowTool(context, scope, refund({ definitionVersion: 12 }), operator)).rejects.toMatchObject({ code: 'CONFLICT' });
    // A retried publication of the superseded version is answered as it is now.
    expect(await publishFlowTool(context, scope, refund({ definitionVersion: 3 }), operator)).toMatchObject({ created: false, descriptor: { inactiveReason: 'Superseded' } });
  });

  it('publishes a disabled definition as an inactive tool (Disabled) that is still listed, and enabling it publishes a new version', async () => {
    const { context, published } = registry();
    const disabled = await publishFlowTool(context, scope, refund({ enabled: false, definitionVersion: 2 }), operator);
    expect(disabled.descriptor).toMatchObject({ active: false, inactiveReason: 'Disabled' });
    expect(published.at(-1)).toMatchObject({ type: 'ToolDescriptorRetired', data: { toolVersion: '2', reason: 'Disabled' } });
    expect(await publishFlowTool(context, scope, refund({ enabled: false, definitionVersion: 2 }), operator)).toMatchObject({ created: false });
    const enabled = await publishFlowTool(context, scope, refund({ definitionVersion: 5 }), operator);
    expect(enabled.descriptor).toMatchObject({ toolVersion: '5', active: true });
    expect(await getDescriptor(context, scope, { toolId: 'flows.orders.refund', toolVersion: '2' })).toMatchObject({ inactiveReason: 'Disabled' });
  });

  it('refuses a definition name that cannot make a tool id, and schemas that are not JSON objects', async () => {
    const { context } = registry();
    await expect(publishFlowTool(context, scope, refund({ definitionName: 'a:b' }), operator)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(publishFlowTool(context, scope, refund({ inputSchemaJson: '[1]' }), operator)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(publishFlowTool(context, scope, refund({ outputSchemaJson: '{' }), operator)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('retireFlowTool', () => {
  it('retires the active version (Retired), keeps the provider, and answers nothing for a definition never published', async () => {
    const { context, published } = registry();
    expect(await retireFlowTool(context, scope, { definitionName: 'orders.refund' }, operator)).toEqual({});
    await publishFlowTool(context, scope, refund(), operator);
    const retired = await retireFlowTool(context, scope, { definitionName: 'orders.refund' }, operator);
    expect(retired.descriptor).toMatchObject({ toolVersion: '7', active: false, inactiveReason: 'Retired' });
    expect(published.at(-1)).toMatchObject({ type: 'ToolDescriptorRetired', data: { reason: 'Retired' } });
    expect(await retireFlowTool(context, scope, { definitionName: 'orders.refund' }, operator)).toEqual(retired);
    expect(await retireFlowTool(context, scope, { definitionName: 'orders.other' }, operator)).toEqual({});
    expect((await getServer(context, scope, flowProviderId(scope))).state).toBe('Active');
  });

  it('retires a disabled version too', async () => {
    const { context } = registry();
    await publishFlowTool(context, scope, refund({ enabled: false }), operator);
    expect((await retireFlowTool(context, scope, { definitionName: 'orders.refund' }, operator)).descriptor).toMatchObject({ active: false, inactiveReason: 'Retired' });
  });
});

describe('the reserved provider and namespace', () => {
  it('refuse a server named toolplane-flows, a binding under flows., and MCP operations on the provider', async () => {
    const { context } = registry();
    await expect(registerServer(context, scope, RegisterServerRequest.parse({ name: FLOW_PROVIDER_NAME, stdio: { executable: '/usr/bin/mcp' } }), operator)).rejects.toThrow(/reserved/);
    // A server named `flows` binds into the reserved namespace by default: refused, and so is an explicit flows. id.
    const { server } = await registerServer(context, scope, RegisterServerRequest.parse({ name: 'flows', stdio: { executable: '/usr/bin/mcp' } }), operator);
    await discoverServer(context, scope, server.serverId, operator);
    const bind = (overrides: Partial<BindToolRequest>) => BindToolRequest.parse({ serverId: server.serverId, toolName: 'echo', sideEffectClass: 'READ', riskClass: 'LOW', ...overrides });
    await expect(bindTool(context, scope, bind({}), operator)).rejects.toThrow(/reserved flows\. namespace/);
    await expect(bindTool(context, scope, bind({ toolId: 'flows.orders.refund' }), operator)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((await bindTool(context, scope, bind({ toolId: 'mine.echo' }), operator)).created).toBe(true);

    await publishFlowTool(context, scope, refund(), operator);
    const providerId = flowProviderId(scope);
    await expect(discoverServer(context, scope, providerId, operator)).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(retireServer(context, scope, providerId, undefined, operator)).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(unbindTool(context, scope, { serverId: providerId, toolName: 'refund_order', capability: 'tool' }, operator)).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(bindTool(context, scope, { ...bind({}), serverId: providerId, toolName: 'refund_order' }, operator)).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(grantAuthenticationException(context, scope, { serverId: providerId, reason: 'x', expiresAt: '2026-12-01T00:00:00.000Z' }, operator)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await getDescriptor(context, scope, { toolId: 'flows.orders.refund' })).toMatchObject({ active: true });
  });
});
