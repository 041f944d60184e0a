import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLOW_PROVIDER_NAME, flowProviderId, registryCommandSchemas as schemas, type PublishFlowToolRequest } from '@toolplane/contracts';
import { createDescriptorCache, type DescriptorCache, type Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import { testScope } from '@toolplane/testing';
import { call, codeOf, connectClient, eventually, freshScope, operatorToken, startRegistry, storedEvents, testOperator } from './harness.js';

// FlowRunner's materialization on a real registry: publishFlowTool and retireFlowTool over NATS with an operator
// token, the reserved Local provider, the descriptor KV bucket and lifecycle events they feed, and a watch that
// leaves the Local provider alone.

const scope = testScope('registry_flow_tools');
const here = freshScope('flows');

let registry: RunningService;
let client: Messaging;
let cache: DescriptorCache;

const refund = (overrides: Partial<PublishFlowToolRequest> = {}): PublishFlowToolRequest => ({
  definitionName: 'orders.refund',
  mcpName: 'refund_order',
  description: 'Refunds an order.',
  inputSchemaJson: '{"type":"object","properties":{"orderId":{"type":"string"}}}',
  outputSchemaJson: '{"type":"object"}',
  sideEffectClass: 'WRITE',
  riskClass: 'HIGH',
  approvalRequired: true,
  timeoutMs: 30_000,
  enabled: true,
  definitionVersion: 11,
  ...overrides,
});

beforeAll(async () => {
  // The watch runs (every 400 ms): it must never ping or discover the Local provider.
  registry = await startRegistry(scope);
  client = await connectClient(scope, 'flows');
  cache = await createDescriptorCache(client);
  await cache.ready;
});

afterAll(async () => {
  await client?.close();
  await registry?.stop();
});

describe('flow tools on a real registry', () => {
  it('publish, republish, supersede, disable and retire through the registry, into the KV read model and the events', async () => {
    const first = await call(client, here, 'publishFlowTool', schemas.publishFlowTool, refund());
    expect(first).toMatchObject({ created: true, descriptor: { toolId: 'flows.orders.refund', toolVersion: '11', kind: 'Flow', active: true, boundBy: testOperator, mcpServerId: flowProviderId(here) } });
    expect(await call(client, here, 'publishFlowTool', schemas.publishFlowTool, refund())).toEqual({ descriptor: first.descriptor, created: false });
    await eventually('the published tool in the KV read model', () => cache.resolve(here, 'flows.orders.refund'), 10_000);
    expect(cache.resolve(here, 'flows.orders.refund')).toMatchObject({ toolVersion: '11', active: true, approvalRequired: true });

    const provider = await call(client, here, 'getServer', schemas.getServer, { serverId: flowProviderId(here) }, 30_000, null);
    expect(provider.server).toMatchObject({ name: FLOW_PROVIDER_NAME, transport: 'Local', direction: 'Published', state: 'Active' });

    const disabled = await call(client, here, 'publishFlowTool', schemas.publishFlowTool, refund({ definitionVersion: 15, enabled: false }));
    expect(disabled.descriptor).toMatchObject({ toolVersion: '15', active: false, inactiveReason: 'Disabled' });
    const versions = () => cache.list(here).map((d) => [d.toolVersion, d.active, d.inactiveReason ?? null]);
    await eventually('both versions in the KV read model', () => (versions().length === 2 && versions()[0]?.[1] === false ? true : undefined), 10_000);
    expect(versions()).toEqual([
      ['11', false, 'Superseded'],
      ['15', false, 'Disabled'],
    ]);
    expect((await call(client, here, 'getDescriptor', schemas.getDescriptor, { toolId: 'flows.orders.refund', toolVersion: '15' })).descriptor.inactiveReason).toBe('Disabled');

    const retired = await call(client, here, 'retireFlowTool', schemas.retireFlowTool, { definitionName: 'orders.refund' });
    expect(retired.descriptor).toMatchObject({ toolVersion: '15', inactiveReason: 'Retired' });
    expect(await call(client, here, 'retireFlowTool', schemas.retireFlowTool, { definitionName: 'orders.never' })).toEqual({});
    await eventually('the retirement in the KV read model', () => (cache.resolve(here, 'flows.orders.refund', '15')?.inactiveReason === 'Retired' ? true : undefined), 10_000);

    const types = (await storedEvents(client, here)).map((event) => `${event.type}${'reason' in event.data ? `:${String(event.data.reason)}` : ''}`);
    expect(types).toEqual(['McpServerRegistered', 'ToolDescriptorActivated', 'ToolDescriptorRetired:Disabled', 'ToolDescriptorRetired:Superseded', 'ToolDescriptorRetired:Retired']);
  });

  it('refuses the reserved name and namespace and MCP operations on the provider, and needs policy-admin', async () => {
    await call(client, here, 'publishFlowTool', schemas.publishFlowTool, refund({ definitionName: 'orders.lookup', definitionVersion: 3 }));
    expect(await codeOf(call(client, here, 'register', schemas.register, { name: FLOW_PROVIDER_NAME, stdio: { executable: process.execPath } }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(call(client, here, 'discover', schemas.discover, { serverId: flowProviderId(here) }))).toBe('CONFLICT');
    expect(await codeOf(call(client, here, 'retire', schemas.retire, { serverId: flowProviderId(here) }))).toBe('CONFLICT');
    expect(await codeOf(call(client, here, 'unbind', schemas.unbind, { serverId: flowProviderId(here), toolName: 'refund_order' }))).toBe('CONFLICT');
    const reader = await operatorToken(here, { roles: [] });
    expect(await codeOf(call(client, here, 'publishFlowTool', schemas.publishFlowTool, refund({ definitionVersion: 99 }), 30_000, reader))).toBe('AUTHORIZATION_DENIED');
    expect(await codeOf(call(client, here, 'publishFlowTool', schemas.publishFlowTool, refund({ definitionVersion: 99 }), 30_000, null))).toBe('AUTHENTICATION_FAILED');
  });

  it('leaves the Local provider out of the watch: still Active with no health failures after several rounds', async () => {
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const { server } = await call(client, here, 'getServer', schemas.getServer, { serverId: flowProviderId(here) }, 30_000, null);
    expect(server).toMatchObject({ state: 'Active', health: { consecutiveFailures: 0 } });
    expect(server.health.lastCheckedAt).toBeUndefined();
    const listed = await call(client, here, 'listServers', schemas.listServers, {});
    expect(listed.servers.find((s) => s.serverId === flowProviderId(here))).toMatchObject({ transport: 'Local', state: 'Active' });
  });
});
