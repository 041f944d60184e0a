import { describe, expect, it } from 'vitest';
import type { Caller } from './authenticate.js';
import { ToolNames } from './tool-names.js';

const caller = (token: string, workspace = 'main'): Caller =>
  ({ token, scope: { tenant: 'acme', workspace }, claims: { agentId: 'agent-1', principal: 'user:a' } }) as unknown as Caller;

describe('the names a caller was listed', () => {
  it('finds a listed name’s tool id for that caller only, until a change of its scope or a minute passes', () => {
    let now = 0;
    const names = new ToolNames(() => now);
    const alice = caller('token-a');
    names.remember(alice, [{ name: 'everything__echo', toolId: 'everything.echo' }]);
    names.remember(caller('token-b', 'other'), [{ name: 'everything__echo', toolId: 'everything.echo' }]);
    expect(names.toolIdOf(alice, 'everything__echo')).toBe('everything.echo');
    expect(names.toolIdOf(alice, 'unknown')).toBeUndefined();
    expect(names.toolIdOf(caller('token-c'), 'everything__echo')).toBeUndefined();

    names.changed({ tenant: 'acme', workspace: 'main' });
    expect(names.toolIdOf(alice, 'everything__echo')).toBeUndefined();
    expect(names.toolIdOf(caller('token-b', 'other'), 'everything__echo')).toBe('everything.echo');

    names.changed({ tenant: 'acme', workspace: undefined });
    expect(names.size).toBe(0);

    names.remember(alice, [{ name: 'everything__echo', toolId: 'everything.echo' }]);
    now += 60_001;
    expect(names.toolIdOf(alice, 'everything__echo')).toBeUndefined();
  });

  it('keeps the Mcp-Param headers of each listed tool, found by listed name or governed id, while the list is current', () => {
    let now = 0;
    const names = new ToolNames(() => now);
    const alice = caller('token-a');
    const region = { name: 'Region', path: ['region'], type: 'string' } as const;
    names.remember(alice, [
      { name: 'geo__lookup', toolId: 'geo.lookup', paramHeaders: [region] },
      { name: 'everything__echo', toolId: 'everything.echo' },
    ]);
    expect(names.paramHeadersOf(alice, 'geo__lookup')).toEqual([region]);
    expect(names.paramHeadersOf(alice, 'geo.lookup')).toEqual([region]);
    expect(names.paramHeadersOf(alice, 'everything__echo')).toEqual([]);
    expect(names.paramHeadersOf(alice, 'everything.echo')).toEqual([]);
    // Not in the list, or no current list: unknown (the caller's set is asked again).
    expect(names.paramHeadersOf(alice, 'other__tool')).toBeUndefined();
    expect(names.paramHeadersOf(caller('token-b'), 'geo__lookup')).toBeUndefined();
    now += 60_001;
    expect(names.paramHeadersOf(alice, 'geo__lookup')).toBeUndefined();
  });
});
