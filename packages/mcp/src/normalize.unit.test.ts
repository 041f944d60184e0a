import type { CallToolResult, Tool } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { normalizeTool, normalizeToolResult } from './normalize.js';

describe('normalizeToolResult', () => {
  it("keeps each block's annotations, and a resource link's title and size", () => {
    const result: CallToolResult = {
      content: [
        { type: 'text', text: 'for the user', annotations: { audience: ['user'], priority: 0.9, lastModified: '2026-07-28T10:00:00Z' } },
        { type: 'image', data: 'aGk=', mimeType: 'image/png', annotations: { priority: 0.1 } },
        { type: 'resource_link', uri: 'file:///report.pdf', name: 'report', title: 'The report', size: 2048, mimeType: 'application/pdf', annotations: { audience: ['assistant'] } },
        { type: 'resource', resource: { uri: 'file:///a.txt', text: 'a' }, annotations: { audience: ['user', 'assistant'] } },
        { type: 'text', text: 'plain' },
      ],
    };
    expect(normalizeToolResult(result).content).toStrictEqual([
      { type: 'text', text: 'for the user', annotations: { audience: ['user'], priority: 0.9, lastModified: '2026-07-28T10:00:00Z' } },
      { type: 'image', data: 'aGk=', mimeType: 'image/png', annotations: { priority: 0.1 } },
      { type: 'resource_link', uri: 'file:///report.pdf', name: 'report', title: 'The report', mimeType: 'application/pdf', size: 2048, annotations: { audience: ['assistant'] } },
      { type: 'resource', resource: { uri: 'file:///a.txt', text: 'a' }, annotations: { audience: ['user', 'assistant'] } },
      { type: 'text', text: 'plain' },
    ]);
  });

  it('gives structuredContent that is not an object as { result }', () => {
    expect(normalizeToolResult({ content: [], structuredContent: [1, 2, 3] }).structuredContent).toEqual({ result: [1, 2, 3] });
    expect(normalizeToolResult({ content: [], structuredContent: { ok: true } }).structuredContent).toEqual({ ok: true });
    expect(normalizeToolResult({ content: [], structuredContent: { ok: true } }, true).structuredContent).toEqual({ result: { ok: true } });
  });
});

describe('normalizeTool', () => {
  it('gives an output schema that is not an object as { result }', () => {
    const tool = { name: 'list', inputSchema: { type: 'object' }, outputSchema: { type: 'array', items: { type: 'string' } } } as Tool;
    expect(normalizeTool(tool).outputSchema).toEqual({ type: 'object', properties: { result: { type: 'array', items: { type: 'string' } } }, required: ['result'] });
  });
});
