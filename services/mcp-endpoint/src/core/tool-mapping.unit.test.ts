import { describe, expect, it } from 'vitest';
import type { EffectiveTool } from '@toolplane/contracts';
import { annotationsOf, mcpToolName, toMcpTool, toolIdOfName } from './tool-mapping.js';

const echo: EffectiveTool = {
  toolId: 'everything.echo',
  toolVersion: 'v1',
  name: 'everything__echo',
  description: 'Echoes back the input',
  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  sideEffectClass: 'READ',
  riskClass: 'LOW',
  requiresApproval: false,
};

describe('an effective tool as an MCP tool', () => {
  it('is named by its model-safe name, keeps description and schema, and carries its id and governance facts in _meta', () => {
    expect(toMcpTool(echo)).toEqual({
      name: 'everything__echo',
      description: 'Echoes back the input',
      inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
      annotations: { readOnlyHint: true, idempotentHint: true },
      _meta: { 'dev.toolplane/tool': { toolId: 'everything.echo', toolVersion: 'v1', sideEffectClass: 'READ', riskClass: 'LOW', requiresApproval: false } },
    });
  });

  it('lists only names a model API accepts (^[a-zA-Z0-9_-]{1,64}$), and takes a dotted name for the governed id', () => {
    const long = { toolId: `server.${'x'.repeat(130)}`, name: `server__${'x'.repeat(45)}_0123456789` };
    for (const tool of [echo, long]) expect(mcpToolName(tool)).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(mcpToolName(long)).toBe(long.name);
    expect(toolIdOfName(long.name)).toBeUndefined();
    expect(toolIdOfName('everything__echo')).toBeUndefined();
    expect(toolIdOfName('everything.echo')).toBe('everything.echo');
    expect(toolIdOfName('no-dot')).toBeUndefined();
  });

  it('lists the output schema a tool declares', () => {
    const outputSchema = { type: 'object', properties: { sum: { type: 'number' } } };
    expect(toMcpTool({ ...echo, outputSchema }).outputSchema).toEqual(outputSchema);
    expect(toMcpTool(echo)).not.toHaveProperty('outputSchema');
  });

  it('always has an object input schema at the top', () => {
    expect(toMcpTool({ ...echo, inputSchema: {} }).inputSchema).toEqual({ type: 'object' });
  });

  it('hints from the effective side-effect class', () => {
    expect(annotationsOf('READ', 'Echo')).toEqual({ title: 'Echo', readOnlyHint: true, idempotentHint: true });
    expect(annotationsOf('WRITE', undefined)).toEqual({ readOnlyHint: false, destructiveHint: false });
    expect(annotationsOf('DESTRUCTIVE', undefined)).toEqual({ readOnlyHint: false, destructiveHint: true });
    expect(annotationsOf('PRIVILEGED', undefined)).toEqual({ readOnlyHint: false, destructiveHint: true });
    expect(annotationsOf('EXTERNAL_COMMUNICATION', undefined)).toEqual({ readOnlyHint: false, destructiveHint: false, openWorldHint: true });
    expect(annotationsOf('CODE_EXECUTION', undefined)).toEqual({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
  });
});
