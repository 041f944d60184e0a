import { describe, expect, it } from 'vitest';
import type { EffectiveTool } from '@toolplane/contracts';
import { toMcpTool } from './tool-mapping.js';
import { changedLists, listDigests, toolSetDigest } from './tool-set-digest.js';

const tool = (toolId: string, overrides: Partial<EffectiveTool> = {}) =>
  toMcpTool({ toolId, toolVersion: '1', name: toolId.replace('.', '__'), description: toolId, inputSchema: { type: 'object' }, sideEffectClass: 'READ', riskClass: 'LOW', requiresApproval: false, ...overrides });

describe('the digest of a tool set', () => {
  it('does not depend on the order tools are listed in', () => {
    expect(toolSetDigest([tool('a.x'), tool('b.y')])).toBe(toolSetDigest([tool('b.y'), tool('a.x')]));
  });

  it('changes with a tool added or removed, a schema, a hint or an approval requirement', () => {
    const base = toolSetDigest([tool('a.x')]);
    expect(toolSetDigest([tool('a.x'), tool('b.y')])).not.toBe(base);
    expect(toolSetDigest([])).not.toBe(base);
    expect(toolSetDigest([tool('a.x', { inputSchema: { type: 'object', properties: { n: { type: 'number' } } } })])).not.toBe(base);
    expect(toolSetDigest([tool('a.x', { sideEffectClass: 'WRITE' })])).not.toBe(base);
    expect(toolSetDigest([tool('a.x', { requiresApproval: true })])).not.toBe(base);
    expect(toolSetDigest([tool('a.x')])).toBe(base);
  });
});

describe('the digests of the three lists', () => {
  it('move apart: a tool changed moves the tools digest only, and nothing seen before counts as all changed', () => {
    const prompt = { name: 'p.greet', description: 'greets', arguments: [{ name: 'who', required: true }] };
    const before = listDigests({ tools: [tool('a.x')], resources: [], prompts: [prompt] });
    expect(changedLists(before, listDigests({ tools: [tool('a.x'), tool('b.y')], resources: [], prompts: [prompt] }))).toEqual(['tools']);
    expect(changedLists(before, listDigests({ tools: [tool('a.x')], resources: [], prompts: [{ ...prompt, arguments: [] }] }))).toEqual(['prompts']);
    expect(changedLists(before, listDigests({ tools: [tool('a.x')], resources: [], prompts: [prompt] }))).toEqual([]);
    expect(changedLists(undefined, before)).toEqual(['tools', 'resources', 'prompts']);
  });
});
