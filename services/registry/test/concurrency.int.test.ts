import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpServerRecord, registryCommandSchemas, registryStream, registrySubject, serverStreamId } from '@toolplane/contracts';
import { handleCommand, jetStreamEventStore } from '@toolplane/event-store';
import { realServerPath } from '@toolplane/mcp/testing';
import type { Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import { connectStore, type Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { mcpServers } from '../src/collections.js';
import { serverDecider } from '../src/core/server-aggregate.js';
import { call, connectClient, eventually, freshScope, startRegistry, storedEvents } from './harness.js';

// Commands that race on two replicas (the queue group spreads them) and a crash between an append and its
// publication: each change is decided by exactly one winner, recorded once and emitted once.

const scope = testScope('registry_race');
const replicas: RunningService[] = [];
let client: Messaging;
let store: Store;

const schemas = registryCommandSchemas;

beforeAll(async () => {
  replicas.push(await startRegistry(scope), await startRegistry(scope, { REGISTRY_WATCH: 'off' }));
  client = await connectClient(scope, 'race');
  store = await connectStore({ url: scope.mongoUrl, dbName: scope.dbName, appName: 'registry-race-test' });
});

afterAll(async () => {
  await client?.drain();
  await store?.close();
  for (const replica of replicas) await replica.stop();
});

const everythingStdio = { executable: process.execPath, args: [realServerPath('everything'), 'stdio'] };

describe('racing commands', () => {
  it('register, bind and retire sent many times at once each take effect and emit once', async () => {
    const tenantScope = freshScope('race');
    const registrations = await Promise.all(Array.from({ length: 6 }, () => call(client, tenantScope, 'register', schemas.register, { name: 'everything', stdio: everythingStdio })));
    expect(new Set(registrations.map((reply) => reply.server.serverId)).size).toBe(1);
    expect(registrations.filter((reply) => reply.created)).toHaveLength(1);
    const serverId = registrations[0]!.server.serverId;

    await Promise.all(Array.from({ length: 3 }, () => call(client, tenantScope, 'discover', schemas.discover, { serverId })));
    const binds = await Promise.all(
      Array.from({ length: 6 }, () => call(client, tenantScope, 'bind', schemas.bind, { serverId, toolName: 'echo', sideEffectClass: 'READ', riskClass: 'LOW', idempotency: 'NATURAL' })),
    );
    expect(new Set(binds.map((reply) => reply.descriptor.toolVersion))).toEqual(new Set(['1']));
    expect(binds.filter((reply) => reply.created)).toHaveLength(1);

    const retires = await Promise.all(Array.from({ length: 6 }, () => call(client, tenantScope, 'retire', schemas.retire, { serverId })));
    expect(retires.every((reply) => reply.server.state === 'Retired')).toBe(true);
    expect(retires.reduce((sum, reply) => sum + reply.retiredDescriptors, 0)).toBe(1);

    const events = await storedEvents(client, tenantScope);
    expect(new Set(events.map((event) => event.metadata.eventId)).size).toBe(events.length);
    // In order per aggregate. Across the server and its descriptor the order may vary: of six racing binds, the one
    // that approved the server may publish its state change after another one published the descriptor's activation.
    const types = (descriptor: boolean) => events.map((event) => event.type).filter((type) => type.startsWith('ToolDescriptor') === descriptor);
    expect(types(false)).toEqual(['McpServerRegistered', 'McpCapabilitiesDiscovered', 'McpServerStateChanged', 'McpServerStateChanged', 'McpServerStateChanged']);
    expect(types(true)).toEqual(['ToolDescriptorActivated', 'ToolDescriptorRetired']);
    expect(events.map((event) => event.type).indexOf('ToolDescriptorRetired')).toBe(events.length - 1);
  });
});

describe('racing registrations of one name', () => {
  it('give the name to exactly one configuration, and a retired name to exactly one new server', async () => {
    const tenantScope = freshScope('names');
    const configs = Array.from({ length: 6 }, (_, i) => ({ name: 'contested', stdio: { ...everythingStdio, args: [...everythingStdio.args, `--variant=${i}`] } }));
    const outcomes = await Promise.allSettled(configs.map((body) => call(client, tenantScope, 'register', schemas.register, body)));
    const won = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    expect(won).toHaveLength(1);
    expect(won[0]?.created).toBe(true);
    expect(outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [(outcome.reason as { code?: string }).code] : []))).toEqual(Array(5).fill('CONFLICT'));

    await call(client, tenantScope, 'retire', schemas.retire, { serverId: won[0]!.server.serverId });
    const again = await Promise.all(Array.from({ length: 6 }, () => call(client, tenantScope, 'register', schemas.register, configs[0]!)));
    expect(new Set(again.map((reply) => reply.server.serverId)).size).toBe(1);
    expect(again.filter((reply) => reply.created)).toHaveLength(1);
    expect(again[0]?.server.serverId).not.toBe(won[0]?.server.serverId);
    const registered = (await storedEvents(client, tenantScope)).filter((event) => event.type === 'McpServerRegistered');
    expect(registered).toHaveLength(2);
  });
});

describe('an append whose publication was lost', () => {
  it('is published once from the record, and shows in the read model', async () => {
    const tenantScope = freshScope('lost');
    const { server } = await call(client, tenantScope, 'register', schemas.register, { name: 'crashy', stdio: everythingStdio });
    // As if a replica appended the retirement and died before publishing anything.
    const servers = jetStreamEventStore(client, { stream: registryStream.name, subjectOf: (id) => registrySubject('server', id), schema: McpServerRecord });
    const appended = await handleCommand(servers, serverDecider, serverStreamId(tenantScope, server.serverId), [{ type: 'RetireServer', reason: 'crashed', at: new Date().toISOString() }]);
    expect(appended.newEvents).toHaveLength(1);

    const retiredEvents = async () => (await storedEvents(client, tenantScope)).filter((event) => event.type === 'McpServerStateChanged' && event.data.to === 'Retired');
    await eventually('the retirement published', async () => ((await retiredEvents()).length > 0 ? true : undefined));
    await eventually('the read model retired', async () => ((await store.collection(mcpServers).raw.findOne({ _id: server.serverId }))?.state === 'Retired' ? true : undefined));
    // A retried retire is done already: it emits nothing more.
    expect((await call(client, tenantScope, 'retire', schemas.retire, { serverId: server.serverId })).server.state).toBe('Retired');
    const retired = await retiredEvents();
    expect(retired).toHaveLength(1);
    expect(retired[0]?.data).toMatchObject({ reason: 'Retire: crashed', version: appended.nextExpectedVersion });
  });
});
