import { canonicalJson, sha256Hex } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { toDiscoveredResourceTemplate, toDiscoveredTool, toolDefinitionHash } from './definition-hash.js';
import type { McpTool } from './model.js';

const tool: McpTool = {
  name: 'create_issue',
  title: 'Create issue',
  description: 'Creates an issue.',
  inputSchema: { type: 'object', properties: { title: { type: 'string' }, body: { type: 'string' } }, required: ['title'] },
  annotations: { destructiveHint: false },
};

describe('toolDefinitionHash', () => {
  it('is the SHA-256 of the canonical JSON of the definition fields', () => {
    const { name, title, description, inputSchema, annotations } = tool;
    expect(toolDefinitionHash(tool)).toBe(sha256Hex(canonicalJson({ name, title, description, inputSchema, annotations })));
  });

  it('does not depend on key order', () => {
    const reordered: McpTool = {
      annotations: { destructiveHint: false },
      inputSchema: { required: ['title'], properties: { body: { type: 'string' }, title: { type: 'string' } }, type: 'object' },
      description: 'Creates an issue.',
      title: 'Create issue',
      name: 'create_issue',
    };
    expect(toolDefinitionHash(reordered)).toBe(toolDefinitionHash(tool));
  });

  it('changes when the description, a schema, the annotations or the title change', () => {
    const base = toolDefinitionHash(tool);
    expect(toolDefinitionHash({ ...tool, description: 'Creates an issue. Also deletes the repo.' })).not.toBe(base);
    expect(toolDefinitionHash({ ...tool, inputSchema: { ...tool.inputSchema, required: [] } })).not.toBe(base);
    expect(toolDefinitionHash({ ...tool, outputSchema: { type: 'object' } })).not.toBe(base);
    expect(toolDefinitionHash({ ...tool, annotations: { destructiveHint: true } })).not.toBe(base);
    expect(toolDefinitionHash({ ...tool, title: 'Make issue' })).not.toBe(base);
  });

  it('refuses a definition nested too deep to canonicalize', () => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let level = 0; level < 200; level++) schema = { type: 'object', properties: { nested: schema } };
    expect(() => toolDefinitionHash({ name: 'deep', inputSchema: schema })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('toDiscoveredTool', () => {
  it('stores schemas as canonical JSON text with the definition hash', () => {
    const discovered = toDiscoveredTool(tool);
    expect(discovered.definitionHash).toBe(toolDefinitionHash(tool));
    expect(JSON.parse(discovered.inputSchemaJson)).toEqual(tool.inputSchema);
    expect(discovered.inputSchemaJson).toBe(canonicalJson(tool.inputSchema));
    expect(discovered.outputSchemaJson).toBeUndefined();
    expect(discovered.annotationsJson).toBe('{"destructiveHint":false}');
  });

  it('refuses a tool beyond what the registry can store', () => {
    expect(() => toDiscoveredTool({ ...tool, description: 'x'.repeat(20_000) })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('toDiscoveredResourceTemplate', () => {
  const template = { uriTemplate: 'test://template/{id}/data', name: 'template', title: 'Resource Template', mimeType: 'application/json' };

  it('pins the hash of the canonical JSON of what the server listed', () => {
    const discovered = toDiscoveredResourceTemplate(template);
    expect(discovered).toEqual({ ...template, definitionHash: sha256Hex(canonicalJson(template)) });
    expect(toDiscoveredResourceTemplate({ ...template, uriTemplate: 'test://template/{id}/other' }).definitionHash).not.toBe(discovered.definitionHash);
  });

  it('bounds the stored text, never the hashed definition', () => {
    const long = toDiscoveredResourceTemplate({ ...template, description: 'd'.repeat(5000) });
    expect(long.description).toHaveLength(4096);
    expect(long.definitionHash).toBe(sha256Hex(canonicalJson({ ...template, description: 'd'.repeat(5000) })));
  });
});
