import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { RegisterServerRequest} from '@toolplane/contracts';
import { type Scope, registryCommandSchemas } from '@toolplane/contracts';
import { realServerPath, sandboxScratchDir, startEverythingHttp, type HttpServerProcess } from '@toolplane/mcp/testing';
import { createDescriptorCache, type DescriptorCache, type Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import { testScope } from '@toolplane/testing';
import { call, connectClient, eventually, freshScope, startRegistry, storedEvents } from './harness.js';

const scope = testScope('registry_real');
let registry: RunningService;
let client: Messaging;
let cache: DescriptorCache;
let http: HttpServerProcess;
let memoryDir: string;

beforeAll(async () => {
  registry = await startRegistry(scope);
  client = await connectClient(scope, 'real');
  cache = await createDescriptorCache(client);
  await cache.ready;
  http = await startEverythingHttp();
  memoryDir = await sandboxScratchDir('registry-memory-');
});

afterAll(async () => {
  cache?.close();
  await http?.stop();
  await client?.drain();
  await registry?.stop();
  if (memoryDir) await rm(memoryDir, { recursive: true, force: true });
});

const schemas = registryCommandSchemas;

/** Register → discover → bind → unbind → retire against one real server, checking state, read model and events. */
async function lifecycle(tenantScope: Scope, registration: z.input<typeof RegisterServerRequest>, expectations: { tools: string[]; resources: boolean; prompts: boolean; bind: string }) {
  const registered = await call(client, tenantScope, 'register', schemas.register, registration);
  expect(registered).toMatchObject({ created: true, server: { state: 'Registered', name: registration.name } });
  const serverId = registered.server.serverId;

  const discovered = await call(client, tenantScope, 'discover', schemas.discover, { serverId });
  expect(discovered.server.state).toBe('Verified');
  const capabilities = discovered.server.capabilities!;
  expect(capabilities.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(expectations.tools));
  if (expectations.resources) expect(capabilities.resources.length).toBeGreaterThan(0);
  if (expectations.prompts) expect(capabilities.prompts.length).toBeGreaterThan(0);
  for (const tool of capabilities.tools) {
    expect(tool.definitionHash).toMatch(/^[0-9a-f]{64}$/);
    expect(() => JSON.parse(tool.inputSchemaJson) as unknown).not.toThrow();
  }

  // Listed, never invocable until bound.
  const before = await call(client, tenantScope, 'listTools', schemas.listTools, { serverId });
  expect(before.tools.length).toBe(capabilities.tools.length);
  expect(before.tools.every((tool) => tool.binding === 'Unbound' && !tool.invocable)).toBe(true);

  const bound = await call(client, tenantScope, 'bind', schemas.bind, { serverId, toolName: expectations.bind, sideEffectClass: 'READ', riskClass: 'LOW', idempotency: 'NATURAL', permissions: ['tools:read'] });
  expect(bound).toMatchObject({ created: true, serverState: 'Active', descriptor: { active: true, healthy: true, providerToolName: expectations.bind, toolVersion: '1' } });
  const { toolId } = bound.descriptor;
  const again = await call(client, tenantScope, 'bind', schemas.bind, { serverId, toolName: expectations.bind, sideEffectClass: 'READ', riskClass: 'LOW', idempotency: 'NATURAL', permissions: ['tools:read'] });
  expect(again).toMatchObject({ created: false, descriptor: { toolVersion: '1' } });
  const cached = await eventually('the binding in the descriptor cache', () => cache.resolve(tenantScope, toolId));
  expect(cached).toMatchObject({ toolVersion: '1', active: true, healthy: true, definitionHash: bound.descriptor.definitionHash });
  expect((await call(client, tenantScope, 'getDescriptor', schemas.getDescriptor, { toolId })).descriptor.toolVersion).toBe('1');
  const listed = await call(client, tenantScope, 'listTools', schemas.listTools, { serverId });
  expect(listed.tools.find((tool) => tool.toolName === expectations.bind)).toMatchObject({ binding: 'Bound', invocable: true, toolId, toolVersion: '1' });

  const unbound = await call(client, tenantScope, 'unbind', schemas.unbind, { serverId, toolName: expectations.bind });
  expect(unbound.descriptor).toMatchObject({ active: false, inactiveReason: 'Unbound' });
  await eventually('the unbinding in the descriptor cache', () => (cache.resolve(tenantScope, toolId, '1')?.active === false ? true : undefined));

  await call(client, tenantScope, 'bind', schemas.bind, { serverId, toolName: expectations.bind, sideEffectClass: 'READ', riskClass: 'MEDIUM' });
  const retired = await call(client, tenantScope, 'retire', schemas.retire, { serverId, reason: 'test over' });
  expect(retired).toMatchObject({ server: { state: 'Retired' }, retiredDescriptors: 1 });
  await eventually('the retirement in the descriptor cache', () => (cache.resolve(tenantScope, toolId, '2')?.inactiveReason === 'ServerRetired' ? true : undefined));

  const events = await storedEvents(client, tenantScope);
  expect(events.map((event) => event.type)).toEqual([
    'McpServerRegistered',
    'McpCapabilitiesDiscovered',
    'McpServerStateChanged',
    'McpServerStateChanged',
    'ToolDescriptorActivated',
    'ToolDescriptorRetired',
    'ToolDescriptorActivated',
    'McpServerStateChanged',
    'ToolDescriptorRetired',
  ]);
  expect(events.filter((event) => event.type === 'McpServerStateChanged').map((event) => `${String(event.data.from)}->${String(event.data.to)}`)).toEqual([
    'Registered->Verified',
    'Verified->Active',
    'Active->Retired',
  ]);
  expect(new Set(events.map((event) => event.metadata.eventId)).size).toBe(events.length);
}

describe('the registry against real MCP servers', () => {
  it('registers, discovers, binds, unbinds and retires server-everything over stdio', async () => {
    await lifecycle(
      freshScope('everything_stdio'),
      { name: 'everything', stdio: { executable: process.execPath, args: [realServerPath('everything'), 'stdio'] } },
      { tools: ['echo', 'get-sum'], resources: true, prompts: true, bind: 'echo' },
    );
  });

  it('registers, discovers, binds, unbinds and retires server-everything over Streamable HTTP', async () => {
    await lifecycle(freshScope('everything_http'), { name: 'everything-http', endpointUrl: http.url }, { tools: ['echo', 'get-sum'], resources: true, prompts: true, bind: 'get-sum' });
  });

  it('registers, discovers, binds, unbinds and retires server-memory over stdio', async () => {
    await lifecycle(
      freshScope('memory_stdio'),
      { name: 'memory', stdio: { executable: process.execPath, args: [realServerPath('memory')], env: [{ name: 'MEMORY_FILE_PATH', value: path.join(memoryDir, 'memory.json') }] }, sandbox: { writablePaths: [memoryDir] } },
      { tools: ['create_entities', 'read_graph'], resources: false, prompts: false, bind: 'read_graph' },
    );
  });
});
