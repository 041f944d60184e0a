import { describe, expect, it } from 'vitest';
import { EventMetadata, RegistryEvent, Uuid, hasErrorCode } from '@toolplane/contracts';
import { at, descriptor, hash, scope, server, snapshot, tool } from '../../test/core-fixtures.js';
import { readViews, toolViews } from './binding-view.js';
import { decideDescriptor } from './descriptor-aggregate.js';
import { definitionDrift } from './discovery-diff.js';
import { deterministicEventId } from './event-ids.js';
import { decideServer, foldServer } from './server-aggregate.js';
import { buildSnapshot } from './snapshot.js';
import { defaultToolId, nextToolVersion, planBind } from './tool-identity.js';
import { descriptorLifecycleEvents, serverLifecycleEvents } from './wire-events.js';

describe('deterministic event ids', () => {
  it('are valid UUIDs, equal for the same origin and index, different otherwise', () => {
    const id = deterministicEventId('server:x@2', 0);
    expect(Uuid.safeParse(id).success).toBe(true);
    expect(deterministicEventId('server:x@2', 0)).toBe(id);
    expect(deterministicEventId('server:x@2', 1)).not.toBe(id);
    expect(deterministicEventId('server:x@3', 0)).not.toBe(id);
  });
});

describe('tool identity', () => {
  it('derives ids from server and tool names', () => {
    expect(defaultToolId('everything', 'echo')).toBe('everything.echo');
    expect(defaultToolId('mem', 'read graph.v2/x')).toBe('mem.read_graph_v2_x');
    const long = defaultToolId('s', 'x'.repeat(300));
    expect(long.length).toBeLessThanOrEqual(200);
    expect(long).not.toBe(defaultToolId('s', `${'x'.repeat(299)}y`));
  });

  it('numbers versions after the highest ever used', () => {
    expect(nextToolVersion([])).toBe('1');
    expect(nextToolVersion([{ toolVersion: '2' }, { toolVersion: '10' }, { toolVersion: 'beta' }])).toBe('11');
  });

  it('reuses an identical active binding, supersedes a different one, and refuses an id bound elsewhere', () => {
    const active = descriptor();
    expect(planBind(descriptor({ toolVersion: '9' }), [active], [active])).toEqual({ kind: 'Existing', descriptor: active });
    const plan = planBind(descriptor({ riskClass: 'HIGH' }), [active], [active]);
    expect(plan).toEqual({ kind: 'New', toolVersion: '2', supersede: [active] });
    const suspended = descriptor({ active: false, inactiveReason: 'DefinitionChanged' });
    expect(planBind(descriptor(), [suspended], [suspended])).toEqual({ kind: 'New', toolVersion: '2', supersede: [] });
    const elsewhere = descriptor({ providerToolName: 'other' });
    try {
      planBind(descriptor(), [], [elsewhere]);
      expect.unreachable();
    } catch (error) {
      expect(hasErrorCode(error) && error.code).toBe('CONFLICT');
    }
  });
});

describe('definition drift', () => {
  it('finds bound tools whose definition changed or that disappeared, comparing with each pinned hash', () => {
    const echo = descriptor();
    const add = descriptor({ toolId: 'everything.add', providerToolName: 'add', definitionHash: hash('add') });
    const gone = descriptor({ toolId: 'everything.gone', providerToolName: 'gone', definitionHash: hash('gone') });
    const inactive = descriptor({ toolId: 'everything.old', providerToolName: 'old', active: false });
    const drift = definitionDrift(snapshot([tool('echo', 'echo-v2'), tool('add')]), [echo, add, gone, inactive]);
    expect(drift).toEqual([
      { descriptor: echo, change: 'Changed', definitionHash: hash('echo-v2') },
      { descriptor: gone, change: 'Removed' },
    ]);
  });
});

describe('tool views', () => {
  it('list every discovered tool, unbound ones as not invocable', () => {
    const views = toolViews(server('Active'), []);
    expect(views.map((v) => [v.toolName, v.binding, v.invocable])).toEqual([
      ['echo', 'Unbound', false],
      ['add', 'Unbound', false],
    ]);
  });

  it('show bound, unhealthy and suspended bindings from the latest version', () => {
    const v1 = descriptor({ active: false, inactiveReason: 'Superseded' });
    const v2 = descriptor({ toolVersion: '2' });
    expect(toolViews(server('Active'), [v1, v2])[0]).toMatchObject({ binding: 'Bound', invocable: true, toolVersion: '2' });
    expect(toolViews(server('Degraded'), [descriptor({ healthy: false })])[0]).toMatchObject({ binding: 'Unhealthy', invocable: false });
    const changed = server('Active', { capabilities: snapshot([tool('echo', 'echo-v2')]) });
    expect(toolViews(changed, [descriptor({ active: false, inactiveReason: 'DefinitionChanged' })])[0]).toMatchObject({
      binding: 'Suspended',
      invocable: false,
      boundDefinitionHash: hash('echo'),
      definitionHash: hash('echo-v2'),
    });
    expect(toolViews(server('Active'), [descriptor({ active: false, inactiveReason: 'Unbound' })])[0]).toMatchObject({ binding: 'Unbound', invocable: false });
  });

  it('list resources and prompts apart from tools: a binding of one capability never shows on another of the same name', () => {
    const capabilities = {
      ...snapshot([tool('echo')]),
      resources: [{ uri: 'test://doc', name: 'doc', definitionHash: hash('doc') }],
      prompts: [{ name: 'echo', definitionHash: hash('echo-prompt') }],
    };
    const resource = descriptor({
      toolId: 'everything.doc',
      providerToolName: 'test://doc',
      definitionHash: hash('doc'),
      resource: { knowledgeSource: 'docs', scope: 'WORKSPACE', classification: 'CONFIDENTIAL' },
    });
    const prompt = descriptor({ toolId: 'everything.echo_prompt', definitionHash: hash('echo-prompt'), prompt: { target: { kind: 'Skill', ref: 'greeting' } } });
    const on = server('Active', { capabilities });
    // Only the prompt named echo is bound: the tool echo stays unbound.
    expect(toolViews(on, [resource, prompt])[0]).toMatchObject({ toolName: 'echo', binding: 'Unbound' });
    const { resources, prompts } = readViews(on, [resource, prompt]);
    expect(resources).toEqual([
      expect.objectContaining({ capability: 'resource', name: 'test://doc', binding: 'Bound', invocable: true, toolId: 'everything.doc', classification: 'CONFIDENTIAL' }),
    ]);
    expect(prompts).toEqual([expect.objectContaining({ capability: 'prompt', name: 'echo', binding: 'Bound', toolId: 'everything.echo_prompt', target: { kind: 'Skill', ref: 'greeting' } })]);
    const drifted = server('Active', { capabilities: { ...capabilities, resources: [{ uri: 'test://doc', name: 'doc', definitionHash: hash('doc-v2') }] } });
    expect(readViews(drifted, [{ ...resource, active: false, inactiveReason: 'DefinitionChanged' }]).resources[0]).toMatchObject({
      binding: 'Suspended',
      invocable: false,
      boundDefinitionHash: hash('doc'),
    });
    expect(readViews(on, []).prompts[0]).toMatchObject({ binding: 'Unbound', invocable: false });
  });
});

describe('snapshots', () => {
  const found = {
    protocolVersion: '2025-06-18',
    serverInfo: { name: 's', version: '1' },
    tools: [tool('b'), tool('a')],
    resources: [{ uri: 'test://1', name: 'one' }],
    prompts: [{ name: 'p' }],
  };

  it('order tools by name, with a hash independent of tool order and sensitive to definitions', () => {
    const built = buildSnapshot(found, at);
    expect(built.tools.map((t) => t.name)).toEqual(['a', 'b']);
    expect(buildSnapshot({ ...found, tools: [...found.tools].reverse() }, at).snapshotHash).toBe(built.snapshotHash);
    expect(buildSnapshot({ ...found, tools: [found.tools[0]!] }, at).snapshotHash).not.toBe(built.snapshotHash);
    expect(buildSnapshot({ ...found, tools: [tool('b', 'b2'), tool('a')] }, at).snapshotHash).not.toBe(built.snapshotHash);
  });

  it('refuse duplicate names and answers beyond the limits', () => {
    const expectInvalid = (run: () => unknown) => {
      try {
        run();
        expect.unreachable();
      } catch (error) {
        expect(hasErrorCode(error) && error.code).toBe('INVALID_ARGUMENT');
      }
    };
    expectInvalid(() => buildSnapshot({ ...found, tools: [found.tools[0]!, found.tools[0]!] }, at));
    expectInvalid(() => buildSnapshot({ ...found, tools: [tool('x', 'x', { description: 'd'.repeat(20_000) })] }, at));
    expectInvalid(() => buildSnapshot({ ...found, resources: Array.from({ length: 1001 }, (_, i) => ({ uri: `test://${i}`, name: `r${i}` })) }, at));
    expectInvalid(() => buildSnapshot({ ...found, refusedTools: [{ name: 'a', reason: 'too deep' }] }, at));
  });

  it('keep refused tools apart, by name, with their reasons; refusing a tool changes the hash', () => {
    const built = buildSnapshot({ ...found, refusedTools: [{ name: 'z', reason: 'too deep' }, { name: 'c', reason: 'too big' }] }, at);
    expect(built.tools.map((t) => t.name)).toEqual(['a', 'b']);
    expect(built.refusedTools).toEqual([
      { name: 'c', reason: 'too big' },
      { name: 'z', reason: 'too deep' },
    ]);
    expect(built.snapshotHash).not.toBe(buildSnapshot(found, at).snapshotHash);
    expect(buildSnapshot({ ...found, refusedTools: [] }, at)).toEqual(buildSnapshot(found, at));
  });
});

describe('lifecycle events', () => {
  const origin = { scope, aggregate: 'server:s', seq: 2 };

  it('are valid registry events with deterministic ids, and skip internal bookkeeping', () => {
    const registered = server('Registered');
    const events = decideServer({ type: 'RecordDiscovery', snapshot: snapshot([tool('echo')]), at }, registered);
    const after = foldServer(registered, events)!;
    const wire = serverLifecycleEvents(events, after, origin);
    expect(wire.map((e) => e.type)).toEqual(['McpCapabilitiesDiscovered', 'McpServerStateChanged']);
    for (const event of wire) expect(RegistryEvent.safeParse(event).success).toBe(true);
    expect(wire[1]?.data).toMatchObject({ from: 'Registered', to: 'Verified', version: 2, reason: 'HandshakeAndDiscoverySucceeded' });
    expect(serverLifecycleEvents(events, after, origin).map((e) => e.metadata.eventId)).toEqual(wire.map((e) => e.metadata.eventId));
    expect(new Set(wire.map((e) => e.metadata.eventId)).size).toBe(2);
    const health = decideServer({ type: 'RecordHealthCheck', outcome: { ok: false, error: 'x' }, failureThreshold: 3, at }, server('Active'));
    expect(serverLifecycleEvents(health, server('Active'), origin)).toEqual([]);
  });

  it('of a suspension are McpToolDefinitionChanged with both hashes, then ToolDescriptorRetired', () => {
    const events = decideDescriptor({ type: 'SuspendDescriptor', change: 'Changed', definitionHash: hash('v2'), at }, descriptor());
    const wire = descriptorLifecycleEvents(events, descriptor(), { ...origin, aggregate: 'descriptor:x' });
    expect(wire.map((e) => [e.type, e.data])).toEqual([
      ['McpToolDefinitionChanged', expect.objectContaining({ change: 'Changed', previousDefinitionHash: hash('echo'), definitionHash: hash('v2'), toolId: 'everything.echo', toolVersion: '1' })],
      ['ToolDescriptorRetired', { toolId: 'everything.echo', toolVersion: '1', reason: 'DefinitionChanged' }],
    ]);
    for (const event of wire) {
      expect(RegistryEvent.safeParse(event).success).toBe(true);
      expect(EventMetadata.safeParse(event.metadata).success).toBe(true);
    }
  });
});
