// Resources and prompts end to end: an operator binds @modelcontextprotocol/server-everything's resources to knowledge
// sources with a classification and its prompts to skills or workflow steps (never to policy) through the CLI; an agent
// reads and fetches them through the same pipeline as a tool call, over the SDK and over the MCP endpoint, with a
// receipt and lifecycle events; a resource above the agent's clearance is denied; an unbound resource is refused; and
// a resource whose definition drifts suspends its binding.
import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToolplaneClient, promptMessages, resourceContents, type ToolplaneClient } from '@toolplane/client';
import { JsonObject, registryCommandSchemas, registryOperations, verifyReceipt, type BindToolReply } from '@toolplane/contracts';
import { connectMcp, type McpSession } from '@toolplane/mcp';
import { FixtureServer, fixtureServerPath, realServerPath } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { agent, endingOf, e2eTenantPolicy, registerServer, startPlatform, waitFor, waitForTools, type Platform } from './platform-harness.js';
import { startHttpProcess, type HttpProcess } from './http-process.js';

const infra = testScope('reads');
let platform: Platform;
let client: ToolplaneClient;
let endpoint: HttpProcess;
let everythingId: string;
/** What the bind of the confidential resource reported (the agent, cleared for INTERNAL, lists it). */
let featuresBind: BindToolReply;

const architecture = 'demo://resource/static/document/architecture.md';
const features = 'demo://resource/static/document/features.md';
const unbound = 'demo://resource/static/document/startup.md';

const profile = { agentId: agent.agentId, allowedTools: ['everything.**', 'mutable.**'], deniedTools: [], maxRiskClass: 'HIGH' as const, permissions: [] };

async function mcpSession(): Promise<McpSession> {
  return connectMcp({ transport: 'http', url: `${endpoint.url}/mcp/${platform.scope.tenant}/${platform.scope.workspace}`, headers: { Authorization: `Bearer ${await platform.agentToken()}` } }, { requestTimeoutMs: 60_000 });
}

/** How many notification streams the endpoint has opened (from its log). */
function streamsOpened(): number {
  return endpoint.service
    .stdout()
    .split('\n')
    .filter((line) => line.includes('"notification stream opened"')).length;
}


beforeAll(async () => {
  platform = await startPlatform(infra, 'reads');
  await platform.putTenantPolicy(e2eTenantPolicy({ gateWrites: false }));
  await platform.putAgentProfile(profile);
  everythingId = await registerServer(platform, 'everything', [process.execPath, realServerPath('everything'), 'stdio'], {}, []);
  const bindResource = (uri: string, id: string, classification: string) =>
    platform.toolplaneJson<BindToolReply>('resources', 'bind', everythingId, uri, '--resource-id', id, '--knowledge-source', 'everything-docs', '--classification', classification);
  expect((await bindResource(architecture, 'everything.architecture', 'internal')).conflicts).toEqual([]);
  featuresBind = await bindResource(features, 'everything.features', 'confidential');
  await platform.toolplaneJson('prompts', 'bind', everythingId, 'args-prompt', '--prompt-id', 'everything.weather', '--target', 'workflow-step:trip-planning/ask-weather');
  await waitForTools(platform, ['everything.architecture', 'everything.features', 'everything.weather']);
  client = await createToolplaneClient({ messaging: platform.messaging, scope: platform.scope, contextToken: await platform.agentToken() });
  endpoint = await startHttpProcess('mcp-endpoint', platform, () => ({ MCP_ENDPOINT_CALL_TIMEOUT_MS: '30000' }));
}, 300_000);

afterAll(async () => {
  await endpoint?.stop();
  await client?.close();
  await platform?.stop();
});

describe('a bound resource', () => {
  it('is read through the pipeline over the SDK, with a signed receipt and lifecycle events', { timeout: 60_000 }, async () => {
    const events = await platform.recordEvents();
    try {
      const result = await client.readResource('everything.architecture', { idempotencyKey: 'read-architecture-1' });
      expect(result.status).toBe('SUCCESS');
      const contents = resourceContents(result);
      expect(contents).toHaveLength(1);
      expect(contents[0]).toMatchObject({ uri: architecture, mimeType: 'text/markdown' });
      expect(contents[0]?.text).toContain('Architecture');
      expect(result.provenance).toBe('untrusted-tool-data');
      expect(result.receipt).toMatchObject({ state: 'Observed', toolId: 'everything.architecture', sideEffectClass: 'READ' });
      expect(verifyReceipt(result.receipt, platform.receiptKeys)).toMatchObject({ valid: true });
      const seen = await waitFor('the read’s terminal event', () => {
        const mine = events.events.filter((event) => 'toolId' in event.metadata && event.metadata.toolId === 'everything.architecture');
        return mine.some((event) => event.type === 'ToolCallCompleted') ? mine.map((event) => event.type) : undefined;
      });
      expect(seen).toEqual(expect.arrayContaining(['InvocationReceived', 'ToolCallStarted', 'ToolCallCompleted']));
    } finally {
      events.stop();
    }
  });

  it('is listed and read by an MCP client through the endpoint, under the endpoint’s URI, with the receipt', { timeout: 60_000 }, async () => {
    const session = await mcpSession();
    try {
      const listed = await session.listResources();
      // The confidential one is above the agent's clearance, and the unbound one was never bound: neither is offered.
      expect(listed.map((resource) => resource.uri)).toEqual(['toolplane://resources/everything.architecture']);
      const read = await session.readResource('toolplane://resources/everything.architecture');
      expect(read.contents).toHaveLength(1);
      expect(read.contents[0]?.uri).toBe('toolplane://resources/everything.architecture');
      expect(read.contents[0]?.text).toContain('Architecture');
    } finally {
      await session.close();
    }
  });

  it('above the agent’s clearance is reported at bind time, denied at read time naming the classification; a higher clearance lets it be read', { timeout: 60_000 }, async () => {
    expect(featuresBind.conflicts).toEqual([
      { agentId: agent.agentId, code: 'CLASSIFICATION_ABOVE_CLEARANCE', reason: 'everything.features is CONFIDENTIAL; the agent lists it (pattern everything.**) but is cleared for INTERNAL at most' },
    ]);
    const denied = await client.readResource('everything.features', { idempotencyKey: 'read-features-1' });
    expect(endingOf(denied)).toEqual({ status: 'DENIED', code: 'AUTHORIZATION_DENIED', message: 'everything.features is CONFIDENTIAL; the caller is cleared for INTERNAL at most' });
    const hidden = await client.effectiveTools({ explain: true });
    expect(hidden.hidden?.find((item) => item.toolId === 'everything.features')?.reasons.map((reason) => reason.code)).toEqual(['CLASSIFICATION_ABOVE_CLEARANCE']);

    await platform.putAgentProfile({ ...profile, clearance: 'CONFIDENTIAL' });
    try {
      const read = await client.readResource('everything.features', { idempotencyKey: 'read-features-2' });
      expect(read.status).toBe('SUCCESS');
      expect(resourceContents(read)[0]?.text).toContain('Features');
    } finally {
      await platform.putAgentProfile(profile);
    }
  });

  it('an unbound resource is listed to operators, refused by the pipeline, and not offered by the endpoint', { timeout: 60_000 }, async () => {
    const listed = await platform.toolplaneJson<{ name: string; binding: string; invocable: boolean; toolId?: string; classification?: string }[]>('resources', 'list', '--server', everythingId);
    expect(listed.find((view) => view.name === unbound)).toMatchObject({ binding: 'Unbound', invocable: false });
    expect(listed.find((view) => view.name === unbound)?.toolId).toBeUndefined();
    expect(listed.find((view) => view.name === architecture)).toMatchObject({ binding: 'Bound', invocable: true, toolId: 'everything.architecture', classification: 'INTERNAL' });
    const refused = await client.readResource('everything.startup_md', { idempotencyKey: 'read-unbound-1' });
    expect(endingOf(refused)).toMatchObject({ status: 'DENIED', code: 'NOT_FOUND' });
    const session = await mcpSession();
    try {
      await expect(session.readResource(unbound)).rejects.toMatchObject({ message: expect.stringContaining('no resource demo://resource/static/document/startup.md is offered to this agent') as unknown });
    } finally {
      await session.close();
    }
    // A tool is never run by a read: reading a tool's id is not found either.
    await platform.toolplaneJson('tools', 'bind', everythingId, 'echo', '--effect', 'read', '--risk', 'low', '--idempotency', 'natural');
    await waitForTools(platform, ['everything.echo']);
    expect(endingOf(await client.readResource('everything.echo', { idempotencyKey: 'read-a-tool-1' }))).toMatchObject({ status: 'DENIED', code: 'NOT_FOUND' });
  });
});

describe('a bound prompt', () => {
  it('cannot be bound to a policy target, through the CLI or the registry’s own operation', { timeout: 60_000 }, async () => {
    const cli = await platform.toolplane('prompts', 'bind', everythingId, 'simple-prompt', '--target', 'policy:tenant-policy');
    expect(cli.code).toBe(1);
    expect(cli.err.trim()).toBe('INVALID_ARGUMENT: --target policy: a prompt maps to a skill or a workflow step, never to policy (ADR-0022 §5)');
    // Sent as any JSON object, so that only the registry judges it.
    const direct = platform.command('registry', registryOperations.bindPrompt, { request: JsonObject, reply: registryCommandSchemas.bindPrompt.reply }, {
      serverId: everythingId,
      promptName: 'simple-prompt',
      target: { kind: 'Policy', ref: 'tenant-policy' },
    });
    await expect(direct).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('a prompt maps to a Skill or a WorkflowStep, never to policy') as unknown });
  });

  it('is fetched with its arguments through the pipeline, over the SDK and the MCP endpoint', { timeout: 60_000 }, async () => {
    const result = await client.getPrompt('everything.weather', { city: 'Lisbon' }, { idempotencyKey: 'prompt-weather-1' });
    expect(result.status).toBe('SUCCESS');
    expect(result.receipt).toMatchObject({ state: 'Observed', toolId: 'everything.weather' });
    expect(JSON.stringify(promptMessages(result).messages)).toContain('Lisbon');
    // A required argument missing is refused by the schema the binding made of the prompt's arguments.
    expect(endingOf(await client.getPrompt('everything.weather', {}, { idempotencyKey: 'prompt-weather-2' }))).toMatchObject({ status: 'DENIED', code: 'INVALID_ARGUMENT' });

    const session = await mcpSession();
    try {
      const prompts = await session.listPrompts();
      expect(prompts).toEqual([expect.objectContaining({ name: 'everything.weather', arguments: expect.arrayContaining([{ name: 'city', description: expect.any(String) as unknown, required: true }]) as unknown })]);
      const fetched = await session.getPrompt('everything.weather', { city: 'Porto' });
      expect(JSON.stringify(fetched.messages)).toContain('Porto');
    } finally {
      await session.close();
    }
  });
});

describe('drift of a resource definition', () => {
  it('suspends the resource’s binding: the next discovery reports it, and reads are refused until it is bound again', { timeout: 120_000 }, async () => {
    const stateFile = platform.countFile('mutable-state');
    await writeFile(stateFile, JSON.stringify({ version: 1, hidden: false }));
    const serverId = await registerServer(platform, 'mutable', [process.execPath, fixtureServerPath(FixtureServer.mutable)], { STATE_FILE: stateFile }, []);
    // An MCP client connected to the endpoint hears of each change to its resources, as resources/list_changed.
    const opened = streamsOpened();
    const session = await mcpSession();
    const heard: string[] = [];
    session.onListChanged((list) => heard.push(list));
    await waitFor('the client’s notification stream to open', () => streamsOpened() > opened);
    await platform.toolplaneJson('resources', 'bind', serverId, 'mutable://notes', '--resource-id', 'mutable.notes', '--knowledge-source', 'team-notes', '--classification', 'public');
    await waitForTools(platform, ['mutable.notes']);
    await waitFor('resources/list_changed after the bind', () => heard.includes('resources'));
    expect((await session.listResources()).map((resource) => resource.uri)).toContain('toolplane://resources/mutable.notes');
    const before = await client.readResource('mutable.notes', { idempotencyKey: 'notes-1' });
    expect(resourceContents(before)[0]?.text).toBe('notes at version 1');

    await writeFile(stateFile, JSON.stringify({ version: 2, hidden: false }));
    const discovered = await platform.toolplaneJson<{ changes: { toolName: string; capability?: string; change: string; descriptorNow: string }[] }>('servers', 'discover', serverId);
    expect(discovered.changes).toEqual([expect.objectContaining({ toolName: 'mutable://notes', capability: 'resource', change: 'Changed', descriptorNow: 'DefinitionChanged' })]);
    const refused = await waitFor('the suspension to reach the adapter', async () => {
      const result = await client.readResource('mutable.notes', { idempotencyKey: `notes-after-${Date.now()}` });
      return result.status === 'DENIED' ? result : undefined;
    });
    expect(endingOf(refused)).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('not active (DefinitionChanged)') as unknown });
    await waitFor('resources/list_changed after the suspension', () => heard.filter((list) => list === 'resources').length >= 2);
    expect((await session.listResources()).map((resource) => resource.uri)).not.toContain('toolplane://resources/mutable.notes');
    // Nothing of its tools or prompts changed.
    expect(heard.filter((list) => list !== 'resources')).toEqual([]);
    await session.close();
    const [suspended] = await platform.toolplaneJson<{ binding: string; definitionHash: string; boundDefinitionHash?: string }[]>('resources', 'list', '--server', serverId);
    expect(suspended).toMatchObject({ binding: 'Suspended', boundDefinitionHash: expect.any(String) as unknown });
    expect(suspended?.boundDefinitionHash).not.toBe(suspended?.definitionHash);

    // Bound again (the operator reviewed the new definition): readable, at the new version.
    await platform.toolplaneJson('resources', 'bind', serverId, 'mutable://notes', '--resource-id', 'mutable.notes', '--knowledge-source', 'team-notes', '--classification', 'public');
    const again = await waitFor('the new binding to reach the adapter', async () => {
      const result = await client.readResource('mutable.notes', { idempotencyKey: `notes-rebound-${Date.now()}` });
      return result.status === 'SUCCESS' ? result : undefined;
    });
    expect(resourceContents(again)[0]?.text).toBe('notes at version 2');
  });
});
