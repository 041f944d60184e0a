import { describe, expect, it } from 'vitest';
import { mcpCallKey, type McpCallKeyInput } from './call-key.js';

const call: McpCallKeyInput = {
  tenant: 'acme',
  workspace: 'main',
  agentId: 'agent-1',
  principal: 'user:alice@example.com',
  session: 'session-1',
  requestId: 7,
  toolId: 'fixture.count_calls',
  arguments: { b: 2, a: 1 },
};

describe('the idempotency key of a tools/call without one', () => {
  it('is the same for a retry of the same request, whatever the arguments’ key order', () => {
    expect(mcpCallKey(call)).toBe(mcpCallKey({ ...call, arguments: { a: 1, b: 2 } }));
    expect(mcpCallKey(call)).toMatch(/^mcp-[0-9a-f]{64}$/);
  });

  it('differs for another request, session, agent, principal, scope, tool or arguments', () => {
    const key = mcpCallKey(call);
    const others: Partial<McpCallKeyInput>[] = [
      { requestId: 8 },
      { requestId: '7' },
      { session: 'session-2' },
      { session: undefined },
      { agentId: 'agent-2' },
      { principal: 'user:bob@example.com' },
      { tenant: 'other' },
      { workspace: 'other' },
      { toolId: 'fixture.echo' },
      { arguments: { a: 1, b: 3 } },
    ];
    for (const other of others) expect(mcpCallKey({ ...call, ...other })).not.toBe(key);
  });

  it('of a completion differs by the argument and partial value, and is a tools/call’s own without one', () => {
    const completing = (name: string, value: string) => mcpCallKey({ ...call, completion: { argument: { name, value } } });
    expect(mcpCallKey({ ...call, completion: undefined })).toBe(mcpCallKey(call));
    expect(completing('label', 'bu')).not.toBe(mcpCallKey(call));
    expect(completing('label', 'bu')).toBe(completing('label', 'bu'));
    expect(completing('label', 'bu')).not.toBe(completing('label', 'bug'));
    expect(completing('label', 'bu')).not.toBe(completing('owner', 'bu'));
  });
});
