import { describe, expect, it } from 'vitest';
import type { EffectiveTool } from '@toolplane/contracts';
import { toMcpResource, type McpResourceEntry } from '../core/read-mapping.js';
import { toMcpTool, type McpToolEntry } from '../core/tool-mapping.js';
import type { McpListKind } from '../core/tool-set-digest.js';
import type { Caller } from './authenticate.js';
import { ToolListStreams } from './tool-list-streams.js';

const tool = (toolId: string): McpToolEntry =>
  toMcpTool({ toolId, toolVersion: '1', name: toolId.replace('.', '__'), description: toolId, inputSchema: { type: 'object' }, sideEffectClass: 'READ', riskClass: 'LOW', requiresApproval: false } satisfies EffectiveTool);

const callerOf = (agentId: string, workspace = 'main'): Caller => ({
  scope: { tenant: 'acme', workspace },
  token: `token-of-${agentId}`,
  claims: { kind: 'agent', tenant: 'acme', workspace, agentId, agentRevision: '1', principal: 'user:a@example.com' },
});

/** A registry whose sets are whatever `sets` holds per token, with sinks that count notifications and closes. */
function harness(options: { maxStreams?: number } = {}) {
  const sets = new Map<string, McpToolEntry[]>();
  const resources = new Map<string, McpResourceEntry[]>();
  const looks: { agentId: string; changed: boolean | undefined }[] = [];
  const asked: string[] = [];
  const streams = new ToolListStreams({
    list: (caller) => {
      asked.push(caller.claims.agentId);
      return Promise.resolve({ tools: sets.get(caller.token) ?? [], resources: resources.get(caller.token) ?? [], prompts: [] });
    },
    maxStreams: options.maxStreams ?? 10,
    debounceMs: 5,
    onError: (error) => {
      throw error;
    },
    onEvent: (event) => {
      if (event.type === 'looked') looks.push({ agentId: event.caller.claims.agentId, changed: event.changed });
    },
  });
  const sink = () => {
    const counts = { notified: 0, closed: 0, kinds: [] as McpListKind[] };
    return {
      counts,
      sink: {
        notify: (kind: McpListKind) => {
          counts.kinds.push(kind);
          return Promise.resolve(void (counts.notified += 1));
        },
        close: () => void (counts.closed += 1),
      },
    };
  };
  const settled = async (count: number) => {
    while (looks.length < count) await new Promise((resolve) => setTimeout(resolve, 2));
  };
  return { sets, resources, looks, asked, streams, sink, settled };
}

describe('the notification streams of a replica', () => {
  it('notifies a stream only when its caller’s set differs from the one it last saw', async () => {
    const { sets, looks, streams, sink, settled } = harness();
    const alice = callerOf('alice');
    const bob = callerOf('bob');
    sets.set(alice.token, [tool('a.x')]);
    sets.set(bob.token, [tool('a.x')]);
    const a = sink();
    const b = sink();
    streams.open(alice, a.sink, undefined);
    streams.open(bob, b.sink, undefined);
    await new Promise((resolve) => setTimeout(resolve, 1));

    sets.set(bob.token, [tool('a.x'), tool('b.y')]);
    streams.changed({ tenant: 'acme', workspace: 'main' });
    await settled(2);
    expect(looks).toEqual(expect.arrayContaining([{ agentId: 'alice', changed: false }, { agentId: 'bob', changed: true }]));
    expect([a.counts.notified, b.counts.notified]).toEqual([0, 1]);

    // The same set again: nothing more.
    streams.changed({ tenant: 'acme', workspace: undefined });
    await settled(4);
    expect([a.counts.notified, b.counts.notified]).toEqual([0, 1]);
  });

  it('tells a stream which of its lists changed: a resource bound notifies resources/list_changed alone', async () => {
    const { sets, resources, streams, sink, settled } = harness();
    const alice = callerOf('alice');
    sets.set(alice.token, [tool('a.x')]);
    const a = sink();
    streams.open(alice, a.sink, undefined);
    await new Promise((resolve) => setTimeout(resolve, 1));
    resources.set(alice.token, [
      toMcpResource({ resourceId: 'docs.readme', toolVersion: '1', uri: 'file:///README.md', name: 'README', description: 'readme', knowledgeSource: 'docs', scope: 'WORKSPACE', classification: 'INTERNAL' }),
    ]);
    streams.changed({ tenant: 'acme', workspace: 'main' });
    await settled(1);
    expect(a.counts.kinds).toEqual(['resources']);
  });

  it('asks once per token for the streams it opened, and tells each of them', async () => {
    const { sets, asked, streams, sink, settled } = harness();
    const alice = callerOf('alice');
    const first = sink();
    const second = sink();
    streams.open(alice, first.sink, undefined);
    streams.open(alice, second.sink, undefined);
    await new Promise((resolve) => setTimeout(resolve, 1));
    asked.length = 0;
    sets.set(alice.token, [tool('a.x')]);
    streams.changed({ tenant: 'acme', workspace: 'main' });
    await settled(2);
    expect(asked).toEqual(['alice']);
    expect([first.counts.notified, second.counts.notified]).toEqual([1, 1]);
  });

  it('looks only at the streams of the changed scope, once per quiet period', async () => {
    const { looks, streams, sink, settled } = harness();
    streams.open(callerOf('alice', 'main'), sink().sink, undefined);
    streams.open(callerOf('carol', 'other'), sink().sink, undefined);
    for (let i = 0; i < 5; i += 1) streams.changed({ tenant: 'acme', workspace: 'other' });
    streams.changed({ tenant: 'globex', workspace: 'main' });
    await settled(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(looks).toEqual([{ agentId: 'carol', changed: false }]);
  });

  it('refuses a stream past its bound, ends a stream when its token expires, and ends all on close', async () => {
    const { streams, sink } = harness({ maxStreams: 2 });
    const expiring = sink();
    const kept = sink();
    streams.open(callerOf('alice'), expiring.sink, Date.now() + 10);
    expect(streams.open(callerOf('bob'), kept.sink, undefined)).toBeTypeOf('function');
    expect(streams.open(callerOf('carol'), sink().sink, undefined)).toBeUndefined();
    while (expiring.counts.closed === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(streams.size).toBe(1);
    streams.closeAll();
    expect(kept.counts.closed).toBe(1);
    expect(streams.size).toBe(0);
    expect(streams.hasRoom()).toBe(false);
  });

  it('forgets a stream its client left', () => {
    const { streams, sink } = harness();
    const unregister = streams.open(callerOf('alice'), sink().sink, undefined);
    expect(streams.size).toBe(1);
    unregister?.();
    expect(streams.size).toBe(0);
  });
});
