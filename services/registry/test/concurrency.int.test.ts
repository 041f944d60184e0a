import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type McpServerRegistered, registryCommandSchemas } from '@toolplane/contracts';
import { realServerPath } from '@toolplane/mcp/testing';
import type { Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import { compareAndSet, connectStore, type Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { mcpServers } from '../src/collections.js';
import { call, connectClient, eventually, freshScope, startRegistry, storedEvents } from './harness.js';

// Commands that race on two replicas (the queue group spreads them) and a crash between a committed change and its
// publication: each change is applied and emitted exactly once.

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
    expect(events.map((event) => event.type)).toEqual([
      'McpServerRegistered',
      'McpCapabilitiesDiscovered',
      'McpServerStateChanged',
      'McpServerStateChanged',
      'ToolDescriptorActivated',
      'McpServerStateChanged',
      'ToolDescriptorRetired',
    ]);
  });
});

describe('the event outbox', () => {
  it('publishes, once, events a crash left unpublished after their change was committed', async () => {
    const tenantScope = freshScope('outbox');
    const { server } = await call(client, tenantScope, 'register', schemas.register, { name: 'crashy', stdio: everythingStdio });
    // As if a replica committed a change and died before publishing: the event waits in the document's outbox.
    const stranded: McpServerRegistered = {
      type: 'McpServerRegistered',
      data: { serverId: server.serverId, name: 'crashy', direction: 'Consumed', transport: 'Stdio', authentication: 'None', governancePolicyRef: 'stranded' },
      metadata: { eventId: '8f14e45f-ceea-467f-a8c1-2f0f3a1e7d11', tenant: tenantScope.tenant, workspace: tenantScope.workspace, occurredAt: new Date().toISOString() },
    };
    const servers = store.collection(mcpServers);
    const current = await servers.raw.findOne({ _id: server.serverId });
    const written = await compareAndSet(servers, { id: server.serverId, expect: { version: current!.version }, set: { outbox: [JSON.stringify(stranded)] } });
    expect(written.ok).toBe(true);

    await eventually('the stranded event published', async () => {
      const events = await storedEvents(client, tenantScope);
      return events.some((event) => event.metadata.eventId === stranded.metadata.eventId) ? true : undefined;
    });
    await eventually('the outbox cleared', async () => ((await servers.raw.findOne({ _id: server.serverId }))?.outbox.length === 0 ? true : undefined));
    const events = await storedEvents(client, tenantScope);
    expect(events.filter((event) => event.metadata.eventId === stranded.metadata.eventId)).toHaveLength(1);
  });
});
