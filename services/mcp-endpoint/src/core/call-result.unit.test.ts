import { describe, expect, it } from 'vitest';
import type { InvocationReceipt, InvocationResult } from '@toolplane/contracts';
import { resultOfFailure, resultOfInvocation } from './call-result.js';

// The mapping reads only state and failure of a receipt; the rest is carried through as it is.
const observed = { state: 'Observed', invocationId: 'i-1' } as unknown as InvocationReceipt;
const denied = {
  state: 'Denied',
  invocationId: 'i-2',
  failure: { code: 'INVALID_ARGUMENT', message: 'arguments violate the input schema: /message must be string', retryable: false },
} as unknown as InvocationReceipt;

describe('a call’s outcome as an MCP result', () => {
  it('on success is the tool’s content, its structured content, and the receipt and provenance in _meta', () => {
    const result: InvocationResult = { status: 'SUCCESS', textContent: 'Echo: hi', structuredContent: { echoed: 'hi' }, truncated: false, provenance: 'untrusted-tool-data', receipt: observed };
    expect(resultOfInvocation(result, 'key-1')).toEqual({
      content: [{ type: 'text', text: 'Echo: hi' }],
      structuredContent: { echoed: 'hi' },
      _meta: { 'dev.toolplane/call': { idempotencyKey: 'key-1' }, 'dev.toolplane/provenance': 'untrusted-tool-data', 'dev.toolplane/receipt': observed },
    });
  });

  it('on success carries every content block the tool gave, with annotations, rather than the text view', () => {
    const content = [
      { type: 'text', text: 'a chart', annotations: { audience: ['user'], priority: 0.5 } },
      { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
      { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
      { type: 'resource_link', uri: 'file:///report.csv', name: 'report', mimeType: 'text/csv' },
      { type: 'resource', resource: { uri: 'test://doc', mimeType: 'text/plain', text: 'embedded' } },
    ] as const satisfies InvocationResult['content'];
    const result: InvocationResult = { status: 'SUCCESS', content: [...content], textContent: 'a chart\n[image omitted]', truncated: false, provenance: 'untrusted-tool-data', receipt: observed };
    expect(resultOfInvocation(result, 'k').content).toEqual(content);
  });

  it('says in _meta when Toolplane cut the result to its bound, and only then', () => {
    const cut: InvocationResult = { status: 'SUCCESS', textContent: 'x\n[truncated by Toolplane: 1 of 9 bytes shown]', truncated: true, provenance: 'untrusted-tool-data', receipt: observed };
    expect(resultOfInvocation(cut, 'k')._meta['dev.toolplane/truncated']).toBe(true);
    expect(resultOfInvocation({ ...cut, truncated: false }, 'k')._meta).not.toHaveProperty('dev.toolplane/truncated');
  });

  it('shows structured content as text when the tool gave no text', () => {
    const result: InvocationResult = { status: 'SUCCESS', structuredContent: { sum: 3 }, truncated: false, provenance: 'untrusted-tool-data', receipt: observed };
    expect(resultOfInvocation(result, 'k').content).toEqual([{ type: 'text', text: '{"sum":3}' }]);
  });

  it('is a tool error with the taxonomy code when the call was denied or failed', () => {
    const result: InvocationResult = { status: 'DENIED', truncated: false, provenance: 'untrusted-tool-data', receipt: denied };
    const mapped = resultOfInvocation(result, 'key-2');
    expect(mapped.isError).toBe(true);
    expect(mapped.content).toEqual([{ type: 'text', text: 'INVALID_ARGUMENT: arguments violate the input schema: /message must be string' }]);
    expect(mapped._meta['dev.toolplane/error']).toEqual({ code: 'INVALID_ARGUMENT', message: 'arguments violate the input schema: /message must be string', retryable: false });
    expect(mapped._meta['dev.toolplane/receipt']).toBe(denied);
  });

  it('for a call waiting for a human names the approval, the command that decides it and the key to re-attach with', () => {
    const approvalId = '3f1c9a52-7c1e-4d0b-9d5e-2a3b4c5d6e7f';
    const mapped = resultOfFailure({ code: 'APPROVAL_PENDING', message: 'waits', retryable: true, details: { approvalId, idempotencyKey: 'key-3' } }, 'key-3');
    expect(mapped.isError).toBe(true);
    const [first] = mapped.content;
    const text = first?.type === 'text' ? first.text : '';
    expect(text).toContain(`toolplane approvals approve ${approvalId}`);
    expect(text).toContain('"dev.toolplane/idempotencyKey": "key-3"');
    expect(mapped._meta['dev.toolplane/approval']).toEqual({ approvalId, decide: `toolplane approvals approve ${approvalId}` });
    expect(mapped._meta['dev.toolplane/error']).toMatchObject({ code: 'APPROVAL_PENDING', retryable: true });
  });

  it('for a call with no result is a tool error with its code', () => {
    const mapped = resultOfFailure({ code: 'TIMEOUT', message: 'no outcome within 10 ms', retryable: true }, 'key-4');
    expect(mapped).toEqual({
      content: [{ type: 'text', text: 'TIMEOUT: no outcome within 10 ms' }],
      isError: true,
      _meta: { 'dev.toolplane/call': { idempotencyKey: 'key-4' }, 'dev.toolplane/error': { code: 'TIMEOUT', message: 'no outcome within 10 ms', retryable: true } },
    });
  });
});
