import type { InvocationResult } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { requireSuccess, resultContent } from './results.js';

const receipt = {
  tenant: 'acme',
  workspace: 'main',
  invocationId: '5b0a3c1e-7d2f-4a8e-9c1b-2e4f6a8b0c2d',
  toolCallId: 'tc-1',
  attempt: 1,
  idempotencyKey: 'k1',
  principal: 'user:alice',
  toolId: 'fixture.echo',
  toolVersion: '1',
  requestHash: 'a'.repeat(64),
  receivedAt: '2026-01-01T00:00:00.000Z',
  endedAt: '2026-01-01T00:00:01.000Z',
  signature: { alg: 'Ed25519', keyId: 'adapter', value: `${'A'.repeat(86)}==` },
} as const;

describe('requireSuccess', () => {
  it('returns a successful result as it is', () => {
    const result: InvocationResult = { status: 'SUCCESS', textContent: 'hi', truncated: false, provenance: 'untrusted-tool-data', receipt: { ...receipt, state: 'Observed', resultHash: 'b'.repeat(64) } };
    expect(requireSuccess(result)).toBe(result);
  });

  it('throws the receipt failure code for any other ending, keeping the receipt', () => {
    const denied: InvocationResult = {
      status: 'DENIED',
      truncated: false,
      provenance: 'untrusted-tool-data',
      receipt: { ...receipt, state: 'Denied', failure: { code: 'INVALID_ARGUMENT', message: 'text is required', retryable: false } },
    };
    let thrown: unknown;
    try {
      requireSuccess(denied);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'INVALID_ARGUMENT', details: { status: 'DENIED', receipt: denied.receipt } });
    const uncertain: InvocationResult = {
      status: 'UNCERTAIN',
      truncated: false,
      provenance: 'untrusted-tool-data',
      receipt: { ...receipt, state: 'Uncertain', failure: { code: 'UNKNOWN_OUTCOME', message: 'interrupted', retryable: false } },
    };
    expect(() => requireSuccess(uncertain)).toThrow(expect.objectContaining({ code: 'UNKNOWN_OUTCOME', retryable: false }));
  });
});

describe('resultContent', () => {
  const observed = { ...receipt, state: 'Observed', resultHash: 'b'.repeat(64) } as const;

  it('exposes every content block of a success, as the adapter sent them', () => {
    const content = [
      { type: 'text', text: 'chart:', annotations: { audience: ['user'] } },
      { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
      { type: 'resource_link', uri: 'file:///r.csv', name: 'r.csv', size: 12 },
    ] as const satisfies InvocationResult['content'];
    const result: InvocationResult = { status: 'SUCCESS', content: [...content], textContent: 'chart:\n[image (image/png) omitted]\n[resource link file:///r.csv]', truncated: false, provenance: 'untrusted-tool-data', receipt: observed };
    expect(resultContent(result)).toEqual(content);
  });

  it('gives the text of a result recorded before blocks as one text block, and nothing for an empty one', () => {
    expect(resultContent({ status: 'SUCCESS', textContent: 'old', truncated: false, provenance: 'untrusted-tool-data', receipt: observed })).toEqual([{ type: 'text', text: 'old' }]);
    expect(resultContent({ status: 'SUCCESS', truncated: false, provenance: 'untrusted-tool-data', receipt: observed })).toEqual([]);
  });

  it('throws like requireSuccess for a call that did not succeed', () => {
    const failed: InvocationResult = { status: 'FAILED', truncated: false, provenance: 'untrusted-tool-data', receipt: { ...receipt, state: 'Failed', failure: { code: 'CONFLICT', message: 'output schema', retryable: false } } };
    expect(() => resultContent(failed)).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
  });
});
