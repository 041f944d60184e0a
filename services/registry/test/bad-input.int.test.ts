import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type {
  RegisterServerRequest} from '@toolplane/contracts';
import {
  type McpServer,
  type Scope,
  registryCommandSchemas,
} from '@toolplane/contracts';
import { fixtureServerPath, freePort, realServerPath, startEverythingHttp, type HttpServerProcess } from '@toolplane/mcp/testing';
import { createDescriptorCache, type DescriptorCache, type Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import { testScope } from '@toolplane/testing';
import { call, codeOf, connectClient, eventually, freshScope, startRegistry, storedEvents } from './harness.js';

const scope = testScope('registry_bad');
let registry: RunningService;
let client: Messaging;
let cache: DescriptorCache;
let everything: HttpServerProcess;
let garbage: Server;
let garbageUrl: string;

const schemas = registryCommandSchemas;

beforeAll(async () => {
  registry = await startRegistry(scope);
  client = await connectClient(scope, 'bad');
  cache = await createDescriptorCache(client);
  await cache.ready;
  everything = await startEverythingHttp();
  // Answers every request with a web page: a URL that is up but does not speak MCP.
  garbage = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Welcome to nginx!</body></html>'));
  await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve));
  const address = garbage.address();
  garbageUrl = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/mcp`;
});

afterAll(async () => {
  cache?.close();
  await everything?.stop();
  await new Promise((resolve) => garbage?.close(resolve));
  await client?.drain();
  await registry?.stop();
});

const unknownId = '5d7b0a2e-6c1f-4c3b-9a8e-0f1e2d3c4b5a';

async function register(tenantScope: Scope, body: z.input<typeof RegisterServerRequest>): Promise<McpServer> {
  return (await call(client, tenantScope, 'register', schemas.register, body)).server;
}

async function getServer(tenantScope: Scope, serverId: string): Promise<McpServer> {
  return (await call(client, tenantScope, 'getServer', schemas.getServer, { serverId })).server;
}

/** Runs a command that must fail, and checks it changed neither the server nor the events of the scope. */
async function refusedWithoutChange(tenantScope: Scope, serverId: string | undefined, work: () => Promise<unknown>): Promise<string> {
  const before = serverId === undefined ? undefined : await getServer(tenantScope, serverId);
  const eventsBefore = await storedEvents(client, tenantScope);
  const code = await codeOf(work());
  expect(code).not.toBe('OK');
  if (serverId !== undefined) expect(await getServer(tenantScope, serverId)).toEqual(before);
  expect(await storedEvents(client, tenantScope)).toEqual(eventsBefore);
  return code;
}

const everythingStdio = { executable: process.execPath, args: [realServerPath('everything'), 'stdio'] };

describe('commands about servers that do not exist', () => {
  const tenantScope = freshScope('unknown');

  it.each([
    ['getServer', () => call(client, tenantScope, 'getServer', schemas.getServer, { serverId: unknownId })],
    ['discover', () => call(client, tenantScope, 'discover', schemas.discover, { serverId: unknownId })],
    ['bind', () => call(client, tenantScope, 'bind', schemas.bind, { serverId: unknownId, toolName: 'echo', sideEffectClass: 'READ', riskClass: 'LOW' })],
    ['unbind', () => call(client, tenantScope, 'unbind', schemas.unbind, { serverId: unknownId, toolName: 'echo' })],
    ['retire', () => call(client, tenantScope, 'retire', schemas.retire, { serverId: unknownId })],
  ] as const)('%s answers NOT_FOUND', async (_name, work) => {
    expect(await refusedWithoutChange(tenantScope, undefined, work)).toBe('NOT_FOUND');
  });

  it('a server of another workspace is not found either', async () => {
    const owner = freshScope('owner');
    const server = await register(owner, { name: 'mine', stdio: everythingStdio });
    expect(await codeOf(call(client, { ...owner, workspace: 'other' }, 'getServer', schemas.getServer, { serverId: server.serverId }))).toBe('NOT_FOUND');
  });
});

describe('registrations the registry refuses', () => {
  const tenantScope = freshScope('refused');

  const cases: [string, z.input<typeof RegisterServerRequest>][] = [
    ['a stdio command that does not exist', { name: 'ghost', stdio: { executable: '/nonexistent/bin/mcp-ghost', args: [] } }],
    ['a stdio command not on the PATH', { name: 'ghost2', stdio: { executable: 'mcp-server-that-is-not-installed', args: [] } }],
    ['a relative stdio command', { name: 'ghost3', stdio: { executable: './server.js', args: [] } }],
    ['a password in the URL', { name: 'pw', endpointUrl: 'https://bob:hunter2@mcp.example.com/mcp' }],
    ['a token header value', { name: 'hdr', endpointUrl: 'https://mcp.example.com/mcp', headers: [{ name: 'Authorization', value: 'Bearer abcdefghijklmnop' }] }],
    ['a secret environment value', { name: 'envsecret', stdio: { ...everythingStdio, env: [{ name: 'GITHUB_TOKEN', value: 'ghp_0123456789abcdefghijABCDEFGHIJ' }] } }],
    ['both transports', { name: 'both', stdio: everythingStdio, endpointUrl: 'https://mcp.example.com/mcp' }],
  ];
  it.each(cases)('%s: INVALID_ARGUMENT, nothing registered', async (_label, body) => {
    expect(await refusedWithoutChange(tenantScope, undefined, () => register(tenantScope, body))).toBe('INVALID_ARGUMENT');
    expect((await call(client, tenantScope, 'listServers', schemas.listServers, {})).servers.map((s) => s.name)).not.toContain(body.name);
  });

  it('a second server under a taken name with another configuration is a CONFLICT; the same one again is the same server', async () => {
    const first = await register(tenantScope, { name: 'dup', stdio: everythingStdio });
    const again = await call(client, tenantScope, 'register', schemas.register, { name: 'dup', stdio: everythingStdio });
    expect(again).toMatchObject({ created: false, server: { serverId: first.serverId } });
    expect(await refusedWithoutChange(tenantScope, first.serverId, () => register(tenantScope, { name: 'dup', endpointUrl: everything.url }))).toBe('CONFLICT');
    expect((await storedEvents(client, tenantScope)).filter((event) => event.type === 'McpServerRegistered' && event.data.serverId === first.serverId)).toHaveLength(1);
  });

  it('a server registered with a typo is retired from Registered, recorded as an event, and its name registers anew', async () => {
    const typo = await register(tenantScope, { name: 'typo', stdio: { ...everythingStdio, args: [realServerPath('everything'), 'stdoi'] } });
    await expect(register(tenantScope, { name: 'typo', stdio: everythingStdio })).rejects.toThrow(
      `a server named typo is registered already (${typo.serverId}) with another configuration: retire it (in any state) to register the name anew`,
    );
    const retired = await call(client, tenantScope, 'retire', schemas.retire, { serverId: typo.serverId, reason: 'registered with a typo' });
    expect(retired).toMatchObject({ server: { serverId: typo.serverId, state: 'Retired' }, retiredDescriptors: 0 });
    const changes = (await storedEvents(client, tenantScope)).flatMap((event) => (event.type === 'McpServerStateChanged' && event.data.serverId === typo.serverId ? [event.data] : []));
    expect(changes).toEqual([expect.objectContaining({ from: 'Registered', to: 'Retired', reason: 'Retire: registered with a typo' })]);
    const fixed = await call(client, tenantScope, 'register', schemas.register, { name: 'typo', stdio: everythingStdio });
    expect(fixed.created).toBe(true);
    expect(fixed.server).toMatchObject({ name: 'typo', state: 'Registered' });
    expect(fixed.server.serverId).not.toBe(typo.serverId);
    const listed = (await call(client, tenantScope, 'listServers', schemas.listServers, {})).servers.filter((s) => s.name === 'typo');
    expect(listed.map((s) => [s.serverId, s.state])).toEqual([
      [typo.serverId, 'Retired'],
      [fixed.server.serverId, 'Registered'],
    ]);
  });
});

describe('discovery that fails', () => {
  const tenantScope = freshScope('discovery');

  it('of a URL that refuses connections: a retryable typed error, the server unchanged', async () => {
    const server = await register(tenantScope, { name: 'refusing', endpointUrl: `http://127.0.0.1:${await freePort()}/mcp` });
    const code = await refusedWithoutChange(tenantScope, server.serverId, () => call(client, tenantScope, 'discover', schemas.discover, { serverId: server.serverId }));
    expect(code).toBe('TEMPORARY_UNAVAILABLE');
    expect((await getServer(tenantScope, server.serverId)).state).toBe('Registered');
  });

  it('of a URL that answers garbage: a typed error, the server unchanged', async () => {
    const server = await register(tenantScope, { name: 'garbage', endpointUrl: garbageUrl });
    const code = await refusedWithoutChange(tenantScope, server.serverId, () => call(client, tenantScope, 'discover', schemas.discover, { serverId: server.serverId }));
    expect(['INVALID_ARGUMENT', 'TEMPORARY_UNAVAILABLE', 'INTERNAL', 'NOT_FOUND']).toContain(code);
  });

  it('of a stdio command that exits without speaking MCP: a typed error, the server unchanged', async () => {
    const server = await register(tenantScope, { name: 'false', stdio: { executable: process.execPath, args: ['-e', 'process.stdout.write("not json-rpc\\n"); process.exit(3)'] } });
    const code = await refusedWithoutChange(tenantScope, server.serverId, () => call(client, tenantScope, 'discover', schemas.discover, { serverId: server.serverId }));
    expect(code).not.toBe('INTERNAL');
  });
});

describe('a server that lists an unusable tool', () => {
  const tenantScope = freshScope('hostile');

  it('refuses that tool alone, with its reason, and binds the others', async () => {
    const server = await register(tenantScope, { name: 'hostile', stdio: { executable: process.execPath, args: [fixtureServerPath('hostile')] } });
    const discovered = await call(client, tenantScope, 'discover', schemas.discover, { serverId: server.serverId });
    const capabilities = discovered.server.capabilities!;
    expect(capabilities.tools.map((tool) => tool.name)).not.toContain('deep_schema');
    expect(capabilities.tools.map((tool) => tool.name)).toContain('slow');
    expect(capabilities.refusedTools?.map((tool) => tool.name)).toEqual(['deep_schema']);
    expect(capabilities.refusedTools?.[0]?.reason).toMatch(/deep_schema.*cannot be hashed/);
    const bindDeep = () => call(client, tenantScope, 'bind', schemas.bind, { serverId: server.serverId, toolName: 'deep_schema', sideEffectClass: 'READ', riskClass: 'LOW' });
    expect(await codeOf(bindDeep())).toBe('INVALID_ARGUMENT');
    await expect(bindDeep()).rejects.toThrow(/cannot be bound/);
    const bound = await call(client, tenantScope, 'bind', schemas.bind, { serverId: server.serverId, toolName: 'slow', sideEffectClass: 'READ', riskClass: 'LOW' });
    expect(bound.descriptor.providerToolName).toBe('slow');
  });
});

describe('illegal transitions and bindings', () => {

  const tenantScope = freshScope('illegal');

  it('refuse with CONFLICT naming the state and change nothing; retiring is allowed from any state', async () => {
    const server = await register(tenantScope, { name: 'everything', stdio: everythingStdio });
    // Binding before discovery: the tool was not discovered.
    expect(
      await refusedWithoutChange(tenantScope, server.serverId, () => call(client, tenantScope, 'bind', schemas.bind, { serverId: server.serverId, toolName: 'echo', sideEffectClass: 'READ', riskClass: 'LOW' })),
    ).toBe('NOT_FOUND');
    await call(client, tenantScope, 'discover', schemas.discover, { serverId: server.serverId });
    // A tool the server does not have.
    expect(
      await refusedWithoutChange(tenantScope, server.serverId, () =>
        call(client, tenantScope, 'bind', schemas.bind, { serverId: server.serverId, toolName: 'no-such-tool', sideEffectClass: 'READ', riskClass: 'LOW' }),
      ),
    ).toBe('NOT_FOUND');
    // A declaration that breaks an invariant: retries of a non-idempotent write.
    expect(
      await refusedWithoutChange(tenantScope, server.serverId, () =>
        call(client, tenantScope, 'bind', schemas.bind, {
          serverId: server.serverId,
          toolName: 'echo',
          sideEffectClass: 'WRITE',
          riskClass: 'LOW',
          retryPolicy: { maxAttempts: 3, initialBackoffMs: 10, maxBackoffMs: 100 },
        }),
      ),
    ).toBe('INVALID_ARGUMENT');
    // A command pattern the adapter's engine (RE2) cannot run: refused at bind time, naming the pattern.
    const backreference = String.raw`(a)\1`;
    const bindWithPattern = (block: string[]) =>
      call(client, tenantScope, 'bind', schemas.bind, { serverId: server.serverId, toolName: 'echo', sideEffectClass: 'READ', riskClass: 'LOW', commandPolicy: { argument: 'message', allow: [], block } });
    expect(await refusedWithoutChange(tenantScope, server.serverId, () => bindWithPattern([backreference]))).toBe('INVALID_ARGUMENT');
    await expect(bindWithPattern([backreference])).rejects.toThrow(`commandPolicy pattern ${JSON.stringify(backreference)} cannot be used: the pattern uses a backreference`);
    const bound = await bindWithPattern([String.raw`\brm\s+-rf\b`]);
    expect(bound.descriptor.commandPolicy?.block).toEqual([String.raw`\brm\s+-rf\b`]);
    await call(client, tenantScope, 'retire', schemas.retire, { serverId: server.serverId });
    expect(await refusedWithoutChange(tenantScope, server.serverId, () => call(client, tenantScope, 'discover', schemas.discover, { serverId: server.serverId }))).toBe('CONFLICT');
    expect(
      await refusedWithoutChange(tenantScope, server.serverId, () => call(client, tenantScope, 'bind', schemas.bind, { serverId: server.serverId, toolName: 'echo', sideEffectClass: 'READ', riskClass: 'LOW' })),
    ).toBe('CONFLICT');
    const notDiscoverable = await call(client, tenantScope, 'discover', schemas.discover, { serverId: server.serverId }).catch((error: unknown) => error as Error);
    expect((notDiscoverable as Error).message).toMatch(/state Retired/);
    // A retried retire is done already: no error, no event.
    const events = (await storedEvents(client, tenantScope)).length;
    expect((await call(client, tenantScope, 'retire', schemas.retire, { serverId: server.serverId })).retiredDescriptors).toBe(0);
    expect((await storedEvents(client, tenantScope)).length).toBe(events);
  });

  it('retire a Verified server, whose bindings were never approved, as well', async () => {
    const verified = await register(tenantScope, { name: 'verified', stdio: everythingStdio });
    await call(client, tenantScope, 'discover', schemas.discover, { serverId: verified.serverId });
    const retired = await call(client, tenantScope, 'retire', schemas.retire, { serverId: verified.serverId });
    expect(retired.server).toMatchObject({ state: 'Retired' });
    const changes = (await storedEvents(client, tenantScope)).flatMap((event) => (event.type === 'McpServerStateChanged' && event.data.serverId === verified.serverId ? [event.data] : []));
    expect(changes.map((change) => [change.from, change.to])).toEqual([['Registered', 'Verified'], ['Verified', 'Retired']]);
  });
});

/**
 * A host the registry must treat as beyond the local process, whose traffic still never leaves this machine:
 * Linux routes a connection to 0.0.0.0 over the loopback interface to 127.0.0.1, while by name it is no
 * loopback address. (The tests never send traffic to another address of this host or any other.)
 */
function externalAddress(): string {
  return '0.0.0.0';
}

describe('a server reachable beyond the local process', () => {
  const tenantScope = freshScope('remote');

  it('becomes Active only with acceptable authentication or an expiring exception, and is Degraded when it expires', async () => {
    const remoteUrl = everything.url.replace('127.0.0.1', externalAddress());
    const server = await register(tenantScope, { name: 'remote', endpointUrl: remoteUrl });
    await call(client, tenantScope, 'discover', schemas.discover, { serverId: server.serverId });
    const bindEcho = () => call(client, tenantScope, 'bind', schemas.bind, { serverId: server.serverId, toolName: 'echo', sideEffectClass: 'READ', riskClass: 'LOW' });
    const refused = await refusedWithoutChange(tenantScope, server.serverId, bindEcho);
    expect(refused).toBe('CONFLICT');
    expect(await bindEcho().catch((error: unknown) => (error as Error).message)).toMatch(/OAuth2ProtectedResource or WorkloadIdentity/);
    expect((await getServer(tenantScope, server.serverId)).state).toBe('Verified');

    // An exception that already expired is refused; one that runs a few seconds lets it become Active.
    const grant = (expiresAt: string) => call(client, tenantScope, 'grantException', schemas.grantException, { serverId: server.serverId, reason: 'pilot', expiresAt, grantedBy: 'user:platform-admin' });
    expect(await refusedWithoutChange(tenantScope, server.serverId, () => grant(new Date(Date.now() - 1000).toISOString()))).toBe('INVALID_ARGUMENT');
    await grant(new Date(Date.now() + 4_000).toISOString());
    const bound = await bindEcho();
    expect(bound.serverState).toBe('Active');
    expect(cache.resolve(tenantScope, bound.descriptor.toolId) ?? (await eventually('the binding in the cache', () => cache.resolve(tenantScope, bound.descriptor.toolId)))).toMatchObject({ active: true });

    const degraded = await eventually('the server Degraded once its exception expired', async () => {
      const current = await getServer(tenantScope, server.serverId);
      return current.state === 'Degraded' ? current : undefined;
    });
    expect(degraded.health.lastError ?? '').toMatch(/expired/);
    await eventually('the descriptor unhealthy', () => (cache.resolve(tenantScope, bound.descriptor.toolId)?.healthy === false ? true : undefined));
    const transitions = (await storedEvents(client, tenantScope)).flatMap((event) => (event.type === 'McpServerStateChanged' ? [`${event.data.from}->${event.data.to}`] : []));
    expect(transitions).toEqual(['Registered->Verified', 'Verified->Active', 'Active->Degraded']);
  });
});
