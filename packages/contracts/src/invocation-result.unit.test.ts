import { describe, expect, it } from 'vitest';
import { receipt } from '../test/fixtures.js';
import { MAX_RESULT_CONTENT_BLOCKS } from './limits.js';
import { InvocationResult, ToolContentBlock, contentBlockSummary } from './invocation-result.js';

const png = Buffer.from('\x89PNG tiny').toString('base64');
const annotations = { audience: ['user', 'assistant'], priority: 0.5, lastModified: '2025-11-25T10:00:00Z' } as const;
const blocks = [
  { type: 'text', text: 'hello', annotations },
  { type: 'image', data: png, mimeType: 'image/png' },
  { type: 'audio', data: 'AAAA', mimeType: 'audio/wav', annotations: { priority: 0 } },
  { type: 'resource_link', uri: 'file:///report.csv', name: 'report.csv', title: 'Report', description: 'the numbers', mimeType: 'text/csv', size: 12 },
  { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'inline' } },
  { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AAE=' }, annotations: { lastModified: '2025-11-25' } },
] as const;

describe('ToolContentBlock', () => {
  it('accepts each MCP content block type, with and without annotations', () => {
    for (const block of blocks) expect(ToolContentBlock.safeParse(block).success, block.type).toBe(true);
  });

  it.each([
    ['an unknown type', { type: 'video', data: 'AAAA', mimeType: 'video/mp4' }],
    ['_meta', { type: 'text', text: 'x', _meta: { a: 1 } }],
    ['image data that is not base64', { type: 'image', data: 'not base64!', mimeType: 'image/png' }],
    ['unpadded base64', { type: 'image', data: 'AAA', mimeType: 'image/png' }],
    ['an image without a media type', { type: 'image', data: 'AAAA' }],
    ['a resource with neither text nor blob', { type: 'resource', resource: { uri: 'file:///x' } }],
    ['a resource with both text and blob', { type: 'resource', resource: { uri: 'file:///x', text: 'a', blob: 'AAAA' } }],
    ['a blob that is not base64', { type: 'resource', resource: { uri: 'file:///x', blob: '%%%' } }],
    ['a link without a name', { type: 'resource_link', uri: 'file:///x' }],
    ['a negative size', { type: 'resource_link', uri: 'file:///x', name: 'x', size: -1 }],
    ['an oversize URI', { type: 'resource_link', uri: `file:///${'x'.repeat(2048)}`, name: 'x' }],
    ['a priority above 1', { type: 'text', text: 'x', annotations: { priority: 1.5 } }],
    ['an unknown audience', { type: 'text', text: 'x', annotations: { audience: ['system'] } }],
    ['a lastModified that is no date', { type: 'text', text: 'x', annotations: { lastModified: 'yesterday' } }],
    ['an unknown annotation', { type: 'text', text: 'x', annotations: { colour: 'red' } }],
  ])('rejects %s', (_what, block) => {
    expect(ToolContentBlock.safeParse(block).success).toBe(false);
  });

  it('summarizes a block in one line without its payload', () => {
    expect(blocks.map((block) => contentBlockSummary(ToolContentBlock.parse(block)))).toEqual([
      '[text 5 bytes]',
      `[image image/png ${Buffer.from(png, 'base64').length} bytes]`,
      '[audio audio/wav 3 bytes]',
      '[resource_link text/csv 12 bytes file:///report.csv]',
      '[resource text/plain 6 bytes file:///a.txt]',
      '[resource 2 bytes file:///b.bin]',
    ]);
  });
});

describe('InvocationResult content', () => {
  const success = { status: 'SUCCESS', content: blocks, textContent: 'hello', truncated: false, provenance: 'untrusted-tool-data', receipt } as const;
  const failed = { ...receipt, state: 'Failed', resultHash: undefined, failure: { code: 'INTERNAL', message: 'x', retryable: false } } as const;

  it('carries content blocks on a success', () => {
    expect(InvocationResult.parse(success).content).toEqual(blocks);
    // A result stored before content blocks existed has only its text.
    expect(InvocationResult.safeParse({ ...success, content: undefined }).success).toBe(true);
  });

  it('refuses content on anything but a success, and more blocks than the bound', () => {
    expect(InvocationResult.safeParse({ status: 'FAILED', content: [{ type: 'text', text: 'x' }], truncated: false, provenance: 'untrusted-tool-data', receipt: failed }).success).toBe(false);
    const many = Array.from({ length: MAX_RESULT_CONTENT_BLOCKS + 1 }, () => ({ type: 'text', text: '' }));
    expect(InvocationResult.safeParse({ ...success, content: many }).success).toBe(false);
    expect(InvocationResult.safeParse({ ...success, content: many.slice(1) }).success).toBe(true);
  });
});
