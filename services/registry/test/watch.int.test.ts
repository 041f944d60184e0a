import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LifecycleEvent, type McpServer, registryCommandSchemas } from '@toolplane/contracts';
import { FixtureServer, fixtureServerPath, type HttpServerProcess, sandboxScratchDir, startEverythingHttp } from '@toolplane/mcp/testing';
import { createDescriptorCache, type DescriptorCache, type Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import { testScope } from '@toolplane/testing';
import { call, connectClient, eventually, freshScope, startRegistry, storedEvents } from './harness.js';

// Two registry replicas watch the same servers: a killed HTTP server goes Degraded and comes back Active, a tool
// whose definition changes after binding is suspended, and nothing is emitted twice.

const scope = testScope('registry_watch');
const tenantScope = freshScope('watch');
const replicas: RunningService[] = [];
let client: Messaging;
let cache: DescriptorCache;
let http: HttpServerProcess;
let stateDir: string;
let stateFile: string;

const schemas = registryCommandSchemas;

beforeAll(async () => {
  replicas.push(await startRegistry(scope), await startRegistry(scope));
  client = await connectClient(scope, 'watch');
  cache = await createDescriptorCache(client);
  await cache.ready;
  http = await startEverythingHttp();
  // Open to the sandbox's user: the server reads its state file through a read-only mount of this directory.
  stateDir = await sandboxScratchDir('registry-mutable-');
  stateFile = path.join(stateDir, 'state.json');
  await writeFile(stateFile, JSON.stringify({ version: 1, hidden: false }));
});

afterAll(async () => {
  cache?.close();
  await http?.stop();
  await client?.drain();
  for (const replica of replicas) await replica.stop();
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

async function serverState(serverId: string, state: McpServer['state']): Promise<McpServer | undefined> {
  const server = (await call(client, tenantScope, 'getServer', schemas.getServer, { serverId })).server;
  return server.state === state ? server : undefined;
}

function transitions(events: readonly LifecycleEvent[], serverId: string): string[] {
  return events.flatMap((event) => (event.type === 'McpServerStateChanged' && event.data.serverId === serverId ? [`${event.data.from}->${event.data.to}`] : []));
}

describe('the watch, with two replicas', () => {
  let httpServerId: string;
  let echoToolId: string;
  let mutableServerId: string;

  it('takes a killed server to Degraded, its descriptors unhealthy, and back to Active when it is restarted', async () => {
    httpServerId = (await call(client, tenantScope, 'register', schemas.register, { name: 'everything', endpointUrl: http.url })).server.serverId;
    await call(client, tenantScope, 'discover', schemas.discover, { serverId: httpServerId });
    const bound = await call(client, tenantScope, 'bind', schemas.bind, { serverId: httpServerId, toolName: 'echo', sideEffectClass: 'READ', riskClass: 'LOW' });
    echoToolId = bound.descriptor.toolId;
    expect(bound.serverState).toBe('Active');

    const port = http.port;
    await http.stop();
    const degraded = await eventually('the server Degraded', () => serverState(httpServerId, 'Degraded'));
    expect(degraded.health.consecutiveFailures).toBeGreaterThanOrEqual(2);
    await eventually('the descriptor unhealthy in the read model', () => (cache.resolve(tenantScope, echoToolId)?.healthy === false ? true : undefined));
    const unhealthy = (await call(client, tenantScope, 'listTools', schemas.listTools, { serverId: httpServerId })).tools.find((tool) => tool.toolName === 'echo');
    expect(unhealthy).toMatchObject({ binding: 'Unhealthy', invocable: false });

    http = await startEverythingHttp({ port });
    await eventually('the server Active again', () => serverState(httpServerId, 'Active'), 30_000);
    await eventually('the descriptor healthy again', () => (cache.resolve(tenantScope, echoToolId)?.healthy === true ? true : undefined));
    expect((await call(client, tenantScope, 'listTools', schemas.listTools, { serverId: httpServerId })).tools.find((tool) => tool.toolName === 'echo')).toMatchObject({
      binding: 'Bound',
      invocable: true,
    });
  });

  it('suspends a bound tool whose definition changes, keeps it not invocable until it is bound again, and retires it when it disappears', async () => {
    mutableServerId = (
      await call(client, tenantScope, 'register', schemas.register, {
        name: 'mutable',
        stdio: { executable: process.execPath, args: [fixtureServerPath(FixtureServer.mutable)], env: [{ name: 'STATE_FILE', value: stateFile }] },
        sandbox: { readOnlyMounts: [stateDir] },
      })
    ).server.serverId;
    await call(client, tenantScope, 'discover', schemas.discover, { serverId: mutableServerId });
    const target = await call(client, tenantScope, 'bind', schemas.bind, { serverId: mutableServerId, toolName: 'target_tool', sideEffectClass: 'WRITE', riskClass: 'MEDIUM' });
    const stable = await call(client, tenantScope, 'bind', schemas.bind, { serverId: mutableServerId, toolName: 'stable_tool', sideEffectClass: 'READ', riskClass: 'LOW' });
    const toolId = target.descriptor.toolId;
    await eventually('the binding in the read model', () => cache.resolve(tenantScope, toolId, '1'));

    // The server changes the tool behind the registry's back (and announces it with tools/list_changed).
    await writeFile(stateFile, JSON.stringify({ version: 2, hidden: false }));
    const suspended = await eventually('the descriptor suspended', () => {
      const descriptor = cache.resolve(tenantScope, toolId, '1');
      return descriptor?.active === false ? descriptor : undefined;
    });
    expect(suspended).toMatchObject({ inactiveReason: 'DefinitionChanged', definitionHash: target.descriptor.definitionHash });
    expect(cache.resolve(tenantScope, stable.descriptor.toolId)).toMatchObject({ active: true, healthy: true });

    const changed = (await storedEvents(client, tenantScope)).filter((event) => event.type === 'McpToolDefinitionChanged');
    expect(changed).toHaveLength(1);
    const newHash = changed[0]?.data.definitionHash;
    expect(changed[0]?.data).toMatchObject({ serverId: mutableServerId, toolName: 'target_tool', change: 'Changed', previousDefinitionHash: target.descriptor.definitionHash, toolId, toolVersion: '1' });
    expect(newHash).toMatch(/^[0-9a-f]{64}$/);
    expect(newHash).not.toBe(target.descriptor.definitionHash);

    // Another full discovery cycle: still suspended, not invocable.
    await call(client, tenantScope, 'discover', schemas.discover, { serverId: mutableServerId });
    const view = (await call(client, tenantScope, 'listTools', schemas.listTools, { serverId: mutableServerId })).tools.find((tool) => tool.toolName === 'target_tool');
    expect(view).toMatchObject({ binding: 'Suspended', invocable: false, definitionHash: newHash, boundDefinitionHash: target.descriptor.definitionHash });
    expect(cache.resolve(tenantScope, toolId)).toMatchObject({ toolVersion: '1', active: false });

    // An operator reviews and binds it again: a new version pinning the new definition.
    const rebound = await call(client, tenantScope, 'bind', schemas.bind, { serverId: mutableServerId, toolName: 'target_tool', sideEffectClass: 'WRITE', riskClass: 'MEDIUM', expectedDefinitionHash: newHash });
    expect(rebound.descriptor).toMatchObject({ toolVersion: '2', active: true, definitionHash: newHash });
    await eventually('the new version in the read model', () => (cache.resolve(tenantScope, toolId)?.toolVersion === '2' ? true : undefined));
    expect(cache.resolve(tenantScope, toolId, '1')?.active).toBe(false);

    // The tool disappears: its binding is retired.
    await writeFile(stateFile, JSON.stringify({ version: 3, hidden: true }));
    const removed = await eventually('the descriptor retired', () => {
      const descriptor = cache.resolve(tenantScope, toolId, '2');
      return descriptor?.active === false ? descriptor : undefined;
    });
    expect(removed.inactiveReason).toBe('ToolRemoved');
  });

  it('emitted every change once, whichever replica made it', async () => {
    const events = await storedEvents(client, tenantScope);
    expect(new Set(events.map((event) => event.metadata.eventId)).size).toBe(events.length);
    expect(transitions(events, httpServerId)).toEqual(['Registered->Verified', 'Verified->Active', 'Active->Degraded', 'Degraded->Active']);
    expect(transitions(events, mutableServerId)).toEqual(['Registered->Verified', 'Verified->Active']);
    const activated = events.filter((event) => event.type === 'ToolDescriptorActivated').map((event) => `${event.data.toolId}@${event.data.toolVersion}`);
    expect(activated).toEqual([`${echoToolId}@1`, 'mutable.target_tool@1', 'mutable.stable_tool@1', 'mutable.target_tool@2']);
    const retired = events.filter((event) => event.type === 'ToolDescriptorRetired').map((event) => `${event.data.toolId}@${event.data.toolVersion}:${event.data.reason}`);
    expect(retired).toEqual(['mutable.target_tool@1:DefinitionChanged', 'mutable.target_tool@2:ToolRemoved']);
    expect(events.filter((event) => event.type === 'McpToolDefinitionChanged').map((event) => `${event.data.toolVersion}:${event.data.change}`)).toEqual(['1:Changed', '2:Removed']);
  });
});
