import { describe, expect, it } from 'vitest';
import { BindToolRequest, RegisterServerRequest, ToolplaneError, sha256Hex, type McpServerRecord, type PublicationConflict, type RegistryEvent, type ReleaseRecord, type ServerNameRecord, type ToolDescriptor, type ToolDescriptorRecord } from '@toolplane/contracts';
import { inMemoryEventStore } from '@toolplane/event-store';
import type { McpGateway } from '../adapters/mcp-gateway.js';
import type { DiscoveredCapabilities } from '../core/snapshot.js';
import type { PolicyChecks, RegistryContext } from './registry-context.js';
import { discoverServer, getServer, registerServer, retireServer } from './server-commands.js';
import { deprecateRelease, publishRelease, revokeRelease } from './release-commands.js';
import { bindTool, unbindTool } from './tool-commands.js';

// The registry's command handlers on in-memory event stores: decisions are read from and appended to the record
// alone (the read models are untouchable here), and every append's public events are published once.

const scope = { tenant: 'acme', workspace: 'dev' };
const operator = 'user:op@example.com';
const found: DiscoveredCapabilities = {
  protocolVersion: '2025-06-18',
  serverInfo: { name: 'everything', version: '1.0.0' },
  tools: [{ name: 'echo', inputSchemaJson: '{"type":"object","properties":{"message":{"type":"string"}}}', definitionHash: sha256Hex('echo') }],
  resources: [],
  prompts: [],
};

function registry(policies?: PolicyChecks) {
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
    ...(policies === undefined ? {} : { policies }),
  };
  return { context, published, readModel };
}

const stdio = RegisterServerRequest.parse({ name: 'everything', stdio: { executable: '/usr/bin/mcp', args: ['stdio'] } });
const echo = (serverId: string, overrides: Partial<BindToolRequest> = {}): BindToolRequest =>
  BindToolRequest.parse({ serverId, toolName: 'echo', sideEffectClass: 'READ', riskClass: 'LOW', idempotency: 'NATURAL', ...overrides });

describe('the registry commands on the record', () => {
  it('register, discover, bind, unbind and retire a server through the record alone, publishing each change once', async () => {
    const { context, published, readModel } = registry();
    const first = await registerServer(context, scope, stdio, operator);
    expect(first.created).toBe(true);
    expect(await registerServer(context, scope, stdio, operator)).toEqual({ server: first.server, created: false });
    await expect(registerServer(context, scope, RegisterServerRequest.parse({ ...stdio, stdio: { executable: '/usr/bin/mcp', args: ['other'] } }), operator)).rejects.toMatchObject({ code: 'CONFLICT' });
    const { serverId } = first.server;

    expect((await discoverServer(context, scope, serverId, operator)).server.state).toBe('Verified');
    const bound = await bindTool(context, scope, echo(serverId), operator);
    expect(bound).toMatchObject({ created: true, serverState: 'Active', descriptor: { toolId: 'everything.echo', toolVersion: '1', active: true } });
    expect(await bindTool(context, scope, echo(serverId), operator)).toMatchObject({ created: false, descriptor: { toolVersion: '1' } });
    const rebound = await bindTool(context, scope, echo(serverId, { riskClass: 'MEDIUM' }), operator);
    expect(rebound.descriptor).toMatchObject({ toolVersion: '2', riskClass: 'MEDIUM' });
    expect((await unbindTool(context, scope, { serverId, toolName: 'echo', capability: 'tool' }, operator)).descriptor).toMatchObject({ toolVersion: '2', active: false, inactiveReason: 'Unbound' });

    const retired = await retireServer(context, scope, serverId, 'done', operator);
    expect(retired).toMatchObject({ server: { state: 'Retired' }, retiredDescriptors: 0 });
    expect((await retireServer(context, scope, serverId, 'again', operator)).server.version).toBe(retired.server.version);
    expect(await getServer(context, scope, serverId)).toEqual(retired.server);

    expect(published.map((event) => event.type)).toEqual([
      'McpServerRegistered',
      'McpCapabilitiesDiscovered',
      'McpServerStateChanged',
      'McpServerStateChanged',
      'ToolDescriptorActivated',
      'ToolDescriptorActivated',
      'ToolDescriptorRetired',
      'ToolDescriptorRetired',
      'McpServerStateChanged',
    ]);
    expect(new Set(published.map((event) => event.metadata.eventId)).size).toBe(published.length);
    expect(published.every((event) => event.metadata.actor === operator)).toBe(true);
    expect(readModel.filter((d) => d.toolVersion === '1').map((d) => d.inactiveReason ?? 'active')).toEqual(['active', 'active', 'Superseded']);
  });

  it('frees a retired server name for a new server, and refuses to change a server that does not exist', async () => {
    const { context } = registry();
    const first = await registerServer(context, scope, stdio, operator);
    await retireServer(context, scope, first.server.serverId, undefined, operator);
    const second = await registerServer(context, scope, RegisterServerRequest.parse({ ...stdio, stdio: { executable: '/usr/bin/mcp', args: ['fixed'] } }), operator);
    expect(second.created).toBe(true);
    expect(second.server.serverId).not.toBe(first.server.serverId);
    await expect(retireServer(context, scope, '0b9f6a3e-2f4c-4b7a-9c1d-000000000000', undefined, operator)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('sandbox profiles at registration', () => {
  const sandboxed = (sandbox: Record<string, unknown>) => RegisterServerRequest.parse({ ...stdio, name: 'sandboxed', sandbox });

  it('stores the profile; another profile for the name is another registration (CONFLICT until retired)', async () => {
    const { context } = registry();
    const first = await registerServer(context, scope, sandboxed({ writablePaths: ['/var/lib/memory'], limits: { processes: 16 } }), operator);
    expect(first.server.sandbox).toMatchObject({ network: 'none', writablePaths: ['/var/lib/memory'], limits: { processes: 16 } });
    expect((await registerServer(context, scope, sandboxed({ writablePaths: ['/var/lib/memory'], limits: { processes: 16 } }), operator)).created).toBe(false);
    await expect(registerServer(context, scope, sandboxed({ writablePaths: ['/var/lib/memory'], limits: { processes: 64 } }), operator)).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(registerServer(context, scope, sandboxed({ network: 'host' }), operator)).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('records who registered a host network, and when; a retry by another operator is the same registration', async () => {
    const { context } = registry();
    const first = await registerServer(context, scope, sandboxed({ network: 'host' }), operator);
    expect(first.server.sandbox).toMatchObject({ network: 'host', networkHostApprovedBy: operator });
    expect(first.server.sandbox?.networkHostApprovedAt).toBe(first.server.registeredAt);
    expect((await registerServer(context, scope, sandboxed({ network: 'host' }), 'user:other@example.com')).created).toBe(false);
  });

  it('refuses network egress at parse time (not supported yet) and a sandbox for an HTTP server', () => {
    expect(RegisterServerRequest.safeParse({ ...stdio, sandbox: { network: 'egress', egress: [{ host: 'api.example.com', port: 443 }] } }).success).toBe(false);
    expect(RegisterServerRequest.safeParse({ name: 'remote', endpointUrl: 'https://mcp.example.com/mcp', sandbox: {} }).success).toBe(false);
  });
});

describe('the tool adapter’s policy checks at registration and bind', () => {
  /** The adapter as the checks see it: the bundles it holds and one agent limited to READ that lists every tool of the server. */
  function adapter(options: { readonly bundles?: readonly string[]; readonly unreachable?: boolean } = {}) {
    const asked: { toolId: string; sideEffectClass: string; riskClass: string }[] = [];
    const unreachable = () => Promise.reject(new ToolplaneError('TEMPORARY_UNAVAILABLE', 'no responders for the adapter'));
    const checks: PolicyChecks = {
      policyBundleExists: (_scope, name) => (options.unreachable === true ? unreachable() : Promise.resolve((options.bundles ?? []).includes(name))),
      publicationConflicts: (_scope, tool) => {
        if (options.unreachable === true) return unreachable();
        asked.push({ ...tool });
        const conflicts: PublicationConflict[] =
          tool.sideEffectClass === 'READ' ? [] : [{ agentId: 'reader', code: 'CLASS_ABOVE_AGENT_MAX', reason: `${tool.toolId} is ${tool.sideEffectClass}; the agent may cause at most READ` }];
        return Promise.resolve(conflicts);
      },
    };
    return { checks, asked };
  }

  it('reports a WRITE tool listed by an agent limited to READ when it is bound, and again when its class changes', async () => {
    const { checks, asked } = adapter();
    const { context } = registry(checks);
    const { serverId } = (await registerServer(context, scope, stdio, operator)).server;
    await discoverServer(context, scope, serverId, operator);
    const read = await bindTool(context, scope, echo(serverId), operator);
    expect(read).toMatchObject({ created: true, conflicts: [] });
    expect(read).not.toHaveProperty('conflictsUnknown');
    const write = await bindTool(context, scope, echo(serverId, { sideEffectClass: 'WRITE' }), operator);
    expect(write).toMatchObject({ created: true, descriptor: { toolVersion: '2', sideEffectClass: 'WRITE', active: true } });
    expect(write.conflicts).toEqual([{ agentId: 'reader', code: 'CLASS_ABOVE_AGENT_MAX', reason: 'everything.echo is WRITE; the agent may cause at most READ' }]);
    expect(asked).toEqual([
      { toolId: 'everything.echo', sideEffectClass: 'READ', riskClass: 'LOW' },
      { toolId: 'everything.echo', sideEffectClass: 'WRITE', riskClass: 'LOW' },
    ]);
  });

  it('keeps the bind when the adapter cannot be asked, saying why the conflicts are unknown', async () => {
    const { context } = registry(adapter({ unreachable: true }).checks);
    const { serverId } = (await registerServer(context, scope, RegisterServerRequest.parse({ ...stdio, governancePolicyRef: 'payments-strict' }), operator)).server;
    await discoverServer(context, scope, serverId, operator);
    const bound = await bindTool(context, scope, echo(serverId, { sideEffectClass: 'WRITE' }), operator);
    expect(bound).toMatchObject({ created: true, descriptor: { active: true } });
    expect(bound).not.toHaveProperty('conflicts');
    expect(bound.conflictsUnknown).toBe('the tool adapter could not check the agent profiles: TEMPORARY_UNAVAILABLE no responders for the adapter');
    const unwired = registry();
    const other = (await registerServer(unwired.context, scope, stdio, operator)).server;
    await discoverServer(unwired.context, scope, other.serverId, operator);
    expect((await bindTool(unwired.context, scope, echo(other.serverId), operator)).conflictsUnknown).toBe('this registry is not connected to the tool adapter’s policy checks');
  });

  it('refuses a server naming a policy bundle the adapter does not hold, before anything is recorded', async () => {
    const { context, published } = registry(adapter({ bundles: ['payments-strict'] }).checks);
    await expect(registerServer(context, scope, RegisterServerRequest.parse({ ...stdio, governancePolicyRef: 'payments-lax' }), operator)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: 'the policy bundle "payments-lax" does not exist in tenant acme: create it first (toolplane policies bundle put), or name default',
    });
    expect(published).toEqual([]);
    expect((await registerServer(context, scope, RegisterServerRequest.parse({ ...stdio, governancePolicyRef: 'payments-strict' }), operator)).server.governancePolicyRef).toBe('payments-strict');
    // `default` is never asked about: with none stored it adds no rules.
    expect((await registerServer(context, scope, RegisterServerRequest.parse({ ...stdio, name: 'other' }), operator)).created).toBe(true);
  });
});

describe('releases', () => {
  const released = (releaseId: string, name = 'everything') => RegisterServerRequest.parse({ ...stdio, name, releaseId });

  it('registers a server only with a Published release, saying in one line to publish it first', async () => {
    const { context, published } = registry();
    await expect(registerServer(context, scope, released('r1'), operator)).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'the release "r1" does not exist in acme/dev: publish it first (toolplane releases publish r1)',
    });
    expect(published).toEqual([]);
    expect(await publishRelease(context, scope, { releaseId: 'r1' }, operator)).toMatchObject({ created: true, release: { state: 'Published', version: 1 } });
    expect((await publishRelease(context, scope, { releaseId: 'r1' }, operator)).created).toBe(false);
    expect((await registerServer(context, scope, released('r1'), operator)).server.releaseId).toBe('r1');
    await deprecateRelease(context, scope, { releaseId: 'r1' }, operator);
    await expect(registerServer(context, scope, released('r1', 'other'), operator)).rejects.toMatchObject({ code: 'CONFLICT', message: 'cannot register other: its release r1 is Deprecated, not Published' });
  });

  it('retires the release’s active descriptors with its in-flight policy, refuses later binds, and completes on a repeat', async () => {
    const { context, published } = registry();
    await publishRelease(context, scope, { releaseId: 'r1' }, operator);
    const { serverId } = (await registerServer(context, scope, released('r1'), operator)).server;
    const plain = (await registerServer(context, scope, RegisterServerRequest.parse({ ...stdio, name: 'plain' }), operator)).server;
    await discoverServer(context, scope, serverId, operator);
    await discoverServer(context, scope, plain.serverId, operator);
    expect((await bindTool(context, scope, echo(serverId), operator)).descriptor).toMatchObject({ releaseId: 'r1', active: true });
    await bindTool(context, scope, echo(plain.serverId), operator);

    const deprecated = await deprecateRelease(context, scope, { releaseId: 'r1', reason: 'superseded' }, operator);
    expect(deprecated).toMatchObject({ release: { state: 'Deprecated', inFlight: 'FINISH', reason: 'superseded', changedBy: operator }, retiredDescriptors: 1 });
    expect(published.filter((event) => event.type === 'ToolDescriptorRetired').map((event) => event.data)).toEqual([
      { toolId: 'everything.echo', toolVersion: '1', reason: 'ReleaseDeprecated', releaseId: 'r1', inFlight: 'FINISH' },
    ]);
    // The same deprecation again changes nothing.
    expect(await deprecateRelease(context, scope, { releaseId: 'r1' }, operator)).toMatchObject({ retiredDescriptors: 0, release: { version: deprecated.release.version } });
    await expect(bindTool(context, scope, echo(serverId, { riskClass: 'MEDIUM' }), operator)).rejects.toMatchObject({ code: 'CONFLICT', message: 'cannot bind a tool of server everything: its release r1 is Deprecated, not Published' });
    // A revocation retires the deprecated version again, with its own in-flight policy; once more, nothing.
    expect(await revokeRelease(context, scope, { releaseId: 'r1' }, operator)).toMatchObject({ release: { state: 'Revoked', inFlight: 'CANCEL_PENDING' }, retiredDescriptors: 1 });
    expect(published.filter((event) => event.type === 'ToolDescriptorRetired').map((event) => event.data)).toEqual([
      { toolId: 'everything.echo', toolVersion: '1', reason: 'ReleaseDeprecated', releaseId: 'r1', inFlight: 'FINISH' },
      { toolId: 'everything.echo', toolVersion: '1', reason: 'ReleaseRevoked', releaseId: 'r1', inFlight: 'CANCEL_PENDING' },
    ]);
    expect(await revokeRelease(context, scope, { releaseId: 'r1' }, operator)).toMatchObject({ retiredDescriptors: 0 });
    await expect(deprecateRelease(context, scope, { releaseId: 'r1' }, operator)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(published.filter((event) => event.type.startsWith('Release')).map((event) => event.type)).toEqual(['ReleasePublished', 'ReleaseDeprecated', 'ReleaseRevoked']);
    // The server without a release keeps its tool.
    expect((await bindTool(context, scope, echo(plain.serverId), operator)).descriptor).toMatchObject({ active: true, toolVersion: '1' });
  });

  it('a revocation whose retirement was interrupted is completed by the same command again', async () => {
    const { context } = registry();
    await publishRelease(context, scope, { releaseId: 'r1' }, operator);
    const { serverId } = (await registerServer(context, scope, released('r1'), operator)).server;
    await discoverServer(context, scope, serverId, operator);
    await bindTool(context, scope, echo(serverId), operator);
    const failing: RegistryContext = { ...context, stores: { ...context.stores, descriptors: { ...context.stores.descriptors, appendToStream: () => Promise.reject(new ToolplaneError('TEMPORARY_UNAVAILABLE', 'lost the stream')) } } };
    await expect(revokeRelease(failing, scope, { releaseId: 'r1' }, operator)).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
    expect(await revokeRelease(context, scope, { releaseId: 'r1' }, operator)).toMatchObject({ release: { state: 'Revoked' }, retiredDescriptors: 1 });
  });
});
