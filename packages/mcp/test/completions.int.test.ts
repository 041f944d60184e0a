// completion/complete against servers nobody here wrote: server-everything completes its `completable-prompt`
// arguments (the second one from the first, given as context) and its resource templates' variables; server-memory
// declares no completions capability, so it is not asked and offers no values.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp, createMcpPool, type McpSession } from '../src/mod.js';
import { everythingStdioTarget, memoryStdioTarget, sandboxScratchDir } from '../src/testing.js';

let scratch: string;
let everything: McpSession;

beforeAll(async () => {
  scratch = await sandboxScratchDir('mcp-complete-');
  everything = await connectMcp(everythingStdioTarget(), { timeoutMs: 20_000 });
}, 30_000);

afterAll(async () => {
  await everything?.close();
  await rm(scratch, { recursive: true, force: true });
});

describe('complete', () => {
  it('offers the values of a prompt’s argument that start with the partial value', async () => {
    expect(everything.capabilities.completions).toBeDefined();
    const department = await everything.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } }, { timeoutMs: 10_000 });
    expect(department.values).toEqual(['Engineering']);
    const all = await everything.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: '' } }, { timeoutMs: 10_000 });
    expect(all.values).toEqual(['Engineering', 'Sales', 'Marketing', 'Support']);
  });

  it('passes the arguments already chosen as context: the second argument’s values follow the first', async () => {
    const ref = { type: 'ref/prompt', name: 'completable-prompt' } as const;
    const sales = await everything.complete({ ref, argument: { name: 'name', value: '' }, context: { department: 'Sales' } }, { timeoutMs: 10_000 });
    expect(sales.values).toEqual(['David', 'Eve', 'Frank']);
    const none = await everything.complete({ ref, argument: { name: 'name', value: '' } }, { timeoutMs: 10_000 });
    expect(none.values).toEqual([]);
  });

  it('completes a resource template’s variable by the template’s URI', async () => {
    const completion = await everything.complete({ ref: { type: 'ref/resource', uri: 'demo://resource/dynamic/text/{resourceId}' }, argument: { name: 'resourceId', value: '7' } }, { timeoutMs: 10_000 });
    expect(completion.values).toEqual(['7']);
  });

  it('through a pool, within one deadline', async () => {
    const pool = createMcpPool();
    try {
      const completion = await pool.complete(everythingStdioTarget(), { ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'Ma' } }, { timeoutMs: 20_000 });
      expect(completion.values).toEqual(['Marketing']);
    } finally {
      await pool.close();
    }
  });

  it('a server without the completions capability is not asked: no values, not a failure', async () => {
    const memory = await connectMcp(memoryStdioTarget(path.join(scratch, 'memory.jsonl')), { timeoutMs: 20_000 });
    try {
      expect(memory.capabilities.completions).toBeUndefined();
      const completion = await memory.complete({ ref: { type: 'ref/prompt', name: 'anything' }, argument: { name: 'x', value: 'y' } }, { timeoutMs: 10_000 });
      expect(completion).toEqual({ values: [] });
    } finally {
      await memory.close();
    }
  });
});
