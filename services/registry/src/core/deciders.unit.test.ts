import { describe, expect, it } from 'vitest';
import { McpServerRecord, ServerNameRecord, ToolDescriptorRecord } from '@toolplane/contracts';
import { foldEvents, handleCommand, inMemoryEventStore } from '@toolplane/event-store';
import { at, declaration, later, scope, server, snapshot, stdioRegistration, tool } from '../../test/core-fixtures.js';
import { descriptorDecider, type DescriptorCommand } from './descriptor-aggregate.js';
import { serverDecider, type ServerChange } from './server-aggregate.js';
import { serverNameDecider, type ClaimServerName } from './server-name.js';

// The three registry aggregates as Deciders on the one write path: what they decide is recorded as it is (the
// records' contracts hold it), folding the record gives the state the decisions left, and a refusal records nothing.

const register: ServerChange = [{ type: 'RegisterServer', registration: stdioRegistration(), at }];
const discover: ServerChange = [{ type: 'RecordDiscovery', snapshot: snapshot([tool('echo'), tool('add')]), at: later(1) }];
const approve: ServerChange = [
  { type: 'ApproveBindings', at: later(2) },
  { type: 'RecordBinding', toolName: 'echo', toolId: 'everything.echo', at: later(2) },
];

describe('the McpServer decider', () => {
  it('records what it decides in the record contract, and replaying the record gives the state it decided on', async () => {
    const store = inMemoryEventStore<McpServerRecord>();
    let last;
    for (const change of [register, discover, approve, [{ type: 'RetireServer', reason: 'done', at: later(3) }] satisfies ServerChange]) {
      last = await handleCommand(store, serverDecider, 's', change);
    }
    const { events } = await store.readStream('s');
    for (const event of events) expect(McpServerRecord.parse(event)).toEqual(event);
    expect(foldEvents(serverDecider, events)).toEqual(last?.newState);
    expect(last?.newState.server).toMatchObject({ state: 'Retired', capabilities: { tools: [{ name: 'echo' }, { name: 'add' }] } });
    expect(last?.newState.bindings).toEqual([{ toolName: 'echo', toolId: 'everything.echo' }]);
  });

  it('decides a change as one append, each command against what the previous left, and a repeated binding records nothing', async () => {
    const store = inMemoryEventStore<McpServerRecord>();
    await handleCommand(store, serverDecider, 's', register);
    await handleCommand(store, serverDecider, 's', discover);
    const first = await handleCommand(store, serverDecider, 's', approve);
    expect(first.newEvents.map((event) => event.type)).toEqual(['ServerStateChanged', 'ToolBindingRecorded']);
    const again = await handleCommand(store, serverDecider, 's', approve);
    expect(again.newEvents).toEqual([]);
    expect(again.nextExpectedVersion).toBe(first.nextExpectedVersion);
  });

  it('appends nothing when it refuses, and refuses everything but a registration of an unknown server', async () => {
    const store = inMemoryEventStore<McpServerRecord>();
    await expect(handleCommand(store, serverDecider, 's', discover)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(handleCommand(store, serverDecider, 's', (current) => [{ type: 'RetireServer', at: current.updatedAt }])).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await handleCommand(store, serverDecider, 's', register);
    const before = await store.readStream('s');
    // A Registered server cannot be approved: the whole change is refused, its binding record too.
    await expect(handleCommand(store, serverDecider, 's', approve)).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(handleCommand(store, serverDecider, 's', register)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await store.readStream('s')).toEqual(before);
  });

  it('lets a change depend on the server as read: a health check only while it is watched', async () => {
    const store = inMemoryEventStore<McpServerRecord>();
    await handleCommand(store, serverDecider, 's', register);
    const watchedOnly: ServerChange = (current) =>
      current.state === 'Active' || current.state === 'Degraded' ? [{ type: 'RecordHealthCheck', outcome: { ok: false, error: 'down' }, failureThreshold: 1, at }] : [];
    expect((await handleCommand(store, serverDecider, 's', watchedOnly)).newEvents).toEqual([]);
    expect(store.streams().get('s')?.events).toHaveLength(1);
  });
});

const bind = (toolVersion = '1'): DescriptorCommand => ({
  type: 'BindTool',
  scope,
  toolId: 'everything.echo',
  toolVersion,
  server: server('Verified'),
  tool: tool('echo'),
  declaration: declaration(),
  boundBy: 'user:op',
  at,
});

describe('the ToolDescriptor decider', () => {
  it('records its events in the record contract, and replaying them gives the state', async () => {
    const store = inMemoryEventStore<ToolDescriptorRecord>();
    await handleCommand(store, descriptorDecider, 'd', bind());
    await handleCommand(store, descriptorDecider, 'd', { type: 'SetDescriptorHealth', healthy: false, at: later(1) });
    const last = await handleCommand(store, descriptorDecider, 'd', { type: 'SuspendDescriptor', change: 'Changed', definitionHash: tool('echo', 'v2').definitionHash, at: later(2) });
    const { events } = await store.readStream('d');
    for (const event of events) expect(ToolDescriptorRecord.parse(event)).toEqual(event);
    expect(events.map((event) => event.type)).toEqual(['DescriptorBound', 'DescriptorHealthChanged', 'DescriptorSuspended', 'DescriptorRetired']);
    expect(foldEvents(descriptorDecider, events)).toEqual(last.newState);
    expect(last.newState).toMatchObject({ active: false, healthy: false, inactiveReason: 'DefinitionChanged' });
  });

  it('appends nothing when it refuses or there is nothing to do', async () => {
    const store = inMemoryEventStore<ToolDescriptorRecord>();
    await expect(handleCommand(store, descriptorDecider, 'd', { type: 'RetireDescriptor', reason: 'Unbound', at })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(handleCommand(store, descriptorDecider, 'd', { ...bind(), server: server('Registered') } as DescriptorCommand)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(store.streams().size).toBe(0);
    await handleCommand(store, descriptorDecider, 'd', bind());
    await handleCommand(store, descriptorDecider, 'd', { type: 'RetireDescriptor', reason: 'Unbound', at });
    const before = await store.readStream('d');
    await expect(handleCommand(store, descriptorDecider, 'd', bind())).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await handleCommand(store, descriptorDecider, 'd', { type: 'RetireDescriptor', reason: 'Unbound', at })).newEvents).toEqual([]);
    expect(await store.readStream('d')).toEqual(before);
  });
});

const claim = (serverId: string, registrationHash: string, retiredHolder?: string): ClaimServerName => ({
  type: 'ClaimServerName',
  name: 'everything',
  serverId,
  registrationHash,
  retiredHolder,
  at,
});
const a = '0b9f6a3e-2f4c-4b7a-9c1d-5e6f7a8b9c0a';
const b = '0b9f6a3e-2f4c-4b7a-9c1d-5e6f7a8b9c0b';
const hashOf = (c: string) => c.repeat(64);

describe('the server-name decider', () => {
  it('gives a free name to the first claim; the same registration again changes nothing, another is CONFLICT and appends nothing', async () => {
    const store = inMemoryEventStore<ServerNameRecord>();
    expect((await handleCommand(store, serverNameDecider, 'n', claim(a, hashOf('1')))).newState).toEqual({ serverId: a, registrationHash: hashOf('1') });
    const same = await handleCommand(store, serverNameDecider, 'n', claim(b, hashOf('1')));
    expect(same.newEvents).toEqual([]);
    expect(same.newState?.serverId).toBe(a);
    await expect(handleCommand(store, serverNameDecider, 'n', claim(b, hashOf('2')))).rejects.toMatchObject({
      code: 'CONFLICT',
      message: `a server named everything is registered already (${a}) with another configuration: retire it (in any state) to register the name anew`,
    });
    expect(store.streams().get('n')?.events).toHaveLength(1);
  });

  it('frees the name only from the holder the caller found retired, and replaying the claims gives the holder', async () => {
    const store = inMemoryEventStore<ServerNameRecord>();
    await handleCommand(store, serverNameDecider, 'n', claim(a, hashOf('1')));
    await expect(handleCommand(store, serverNameDecider, 'n', claim(b, hashOf('2'), b))).rejects.toMatchObject({ code: 'CONFLICT' });
    const taken = await handleCommand(store, serverNameDecider, 'n', claim(b, hashOf('2'), a));
    expect(taken.newState).toEqual({ serverId: b, registrationHash: hashOf('2') });
    const { events } = await store.readStream('n');
    for (const event of events) expect(ServerNameRecord.parse(event)).toEqual(event);
    expect(foldEvents(serverNameDecider, events)).toEqual(taken.newState);
  });
});
