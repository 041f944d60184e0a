import { describe, expect, it } from 'vitest';
import type { ToolDescriptorRecord} from '@toolplane/contracts';
import { McpServerRecord, PublishFlowToolRequest, flowProviderId } from '@toolplane/contracts';
import { foldEvents, handleCommand, inMemoryEventStore } from '@toolplane/event-store';
import { at, later, scope } from '../../test/core-fixtures.js';
import { decideDescriptor, descriptorDecider } from './descriptor-aggregate.js';
import { flowProviderRegistration, flowToolDefinitionHash, flowToolDescriptor, flowToolVersions, isFlowProvider, planFlowPublish, retirableFlowVersions } from './flow-tools.js';
import { decideServer, serverDecider, validateRegistration } from './server-aggregate.js';
import { descriptorLifecycleEvents } from './wire-events.js';

const request = (overrides: Partial<PublishFlowToolRequest> = {}): PublishFlowToolRequest =>
  PublishFlowToolRequest.parse({
    definitionName: 'orders.refund',
    mcpName: 'refund_order',
    description: 'Refunds an order.',
    inputSchemaJson: '{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}}}',
    outputSchemaJson: '{"type":"object"}',
    sideEffectClass: 'WRITE',
    riskClass: 'MEDIUM',
    approvalRequired: false,
    timeoutMs: 30_000,
    enabled: true,
    definitionVersion: 4,
    ...overrides,
  });

describe('the reserved flow provider', () => {
  it('is created Active at once, Local and Published, once: a second ensure records nothing', async () => {
    const store = inMemoryEventStore<McpServerRecord>();
    const registration = flowProviderRegistration(scope, 'user:op');
    const first = await handleCommand(store, serverDecider, 'p', [{ type: 'EnsureLocalProvider', registration, at }]);
    expect(first.newState.server).toMatchObject({ serverId: flowProviderId(scope), transport: 'Local', direction: 'Published', state: 'Active' });
    expect(isFlowProvider(first.newState.server!)).toBe(true);
    const again = await handleCommand(store, serverDecider, 'p', [
      { type: 'EnsureLocalProvider', registration, at: later(1) },
      { type: 'RecordBinding', toolName: 'refund_order', toolId: 'flows.orders.refund', toolVersion: '4', at: later(1) },
      { type: 'RecordBinding', toolName: 'refund_order', toolId: 'flows.orders.refund', toolVersion: '4', at: later(1) },
      { type: 'RecordBinding', toolName: 'refund_order', toolId: 'flows.orders.refund', toolVersion: '9', at: later(1) },
    ]);
    expect(again.newEvents.map((event) => event.type)).toEqual(['ToolBindingRecorded', 'ToolBindingRecorded']);
    const { events } = await store.readStream('p');
    for (const event of events) expect(McpServerRecord.parse(event)).toEqual(event);
    expect(flowToolVersions(foldEvents(serverDecider, events).bindings, 'flows.orders.refund')).toEqual(['4', '9']);
  });

  it('is a Local registration with nothing to reach; other transports are not created without a registration', () => {
    expect(() => validateRegistration({ ...flowProviderRegistration(scope, 'u'), endpointUrl: 'https://x.example' })).toThrow(/no command, endpoint/);
    expect(() => validateRegistration({ ...flowProviderRegistration(scope, 'u'), direction: 'Consumed' })).toThrow(/Published/);
    expect(() => decideServer({ type: 'EnsureLocalProvider', registration: { ...flowProviderRegistration(scope, 'u'), transport: 'Stdio' }, at }, undefined)).toThrow(/Local/);
  });
});

describe('flow tool descriptors', () => {
  it('hash the public fields, not the version or the enablement', () => {
    expect(flowToolDefinitionHash(request({ definitionVersion: 9, enabled: false }))).toBe(flowToolDefinitionHash(request()));
    // Schemas are hashed as JSON values: key order and spacing do not matter.
    expect(flowToolDefinitionHash(request({ inputSchemaJson: '{ "properties": {"b":{"type":"number"},"a":{"type":"string"}}, "type": "object" }' }))).toBe(flowToolDefinitionHash(request()));
    expect(flowToolDefinitionHash(request({ approvalRequired: true }))).not.toBe(flowToolDefinitionHash(request()));
  });

  it('are published by the decider once per version; a disabled one is published inactive and announced as retired (Disabled)', async () => {
    const store = inMemoryEventStore<ToolDescriptorRecord>();
    const disabled = flowToolDescriptor(scope, request({ enabled: false }), 'user:op', at);
    const handled = await handleCommand(store, descriptorDecider, 'd', { type: 'PublishFlowTool', descriptor: disabled });
    expect(handled.newState).toMatchObject({ kind: 'Flow', active: false, inactiveReason: 'Disabled' });
    expect(descriptorLifecycleEvents(handled.newEvents, disabled, { scope, aggregate: 'd', seq: 1 }).map((e) => [e.type, (e.data as { reason?: string }).reason])).toEqual([['ToolDescriptorRetired', 'Disabled']]);
    await expect(handleCommand(store, descriptorDecider, 'd', { type: 'PublishFlowTool', descriptor: disabled })).rejects.toMatchObject({ code: 'CONFLICT' });
    // Superseding leaves a disabled version as it is; retiring its definition ends it (Retired).
    expect((await handleCommand(store, descriptorDecider, 'd', { type: 'RetireDescriptor', reason: 'Superseded', at: later(1) })).newEvents).toEqual([]);
    const retired = await handleCommand(store, descriptorDecider, 'd', { type: 'RetireDescriptor', reason: 'Retired', at: later(2) });
    expect(retired.newState).toMatchObject({ active: false, inactiveReason: 'Retired' });
    expect((await handleCommand(store, descriptorDecider, 'd', { type: 'RetireDescriptor', reason: 'Retired', at: later(3) })).newEvents).toEqual([]);
    expect(() => decideDescriptor({ type: 'PublishFlowTool', descriptor: { ...disabled, kind: 'Mcp' } }, undefined)).toThrow(/flow-backed/);
  });

  it('plan a publication: the same one again, a conflicting one, an older one, or a new version that supersedes the active ones', () => {
    const v4 = flowToolDescriptor(scope, request(), 'u', at);
    const v2 = { ...flowToolDescriptor(scope, request({ definitionVersion: 2 }), 'u', at), active: false, inactiveReason: 'Disabled' as const };
    expect(planFlowPublish(v4, [v2, v4])).toEqual({ kind: 'Existing', descriptor: v4 });
    expect(() => planFlowPublish(flowToolDescriptor(scope, request({ riskClass: 'HIGH' }), 'u', at), [v4])).toThrow(/other fields/);
    expect(() => planFlowPublish(flowToolDescriptor(scope, request({ definitionVersion: 3 }), 'u', at), [v2, v4])).toThrow(/newer version 4/);
    const v10 = flowToolDescriptor(scope, request({ definitionVersion: 10 }), 'u', at);
    expect(planFlowPublish(v10, [v2, v4])).toEqual({ kind: 'New', supersede: [v4] });
    expect(retirableFlowVersions([v2, v4, { ...v10, active: false, inactiveReason: 'Superseded' }])).toEqual([v2, v4]);
  });
});
