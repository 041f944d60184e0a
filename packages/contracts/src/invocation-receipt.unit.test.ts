import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { receipt } from '../test/fixtures.js';
import { InvocationReceipt, UnsignedInvocationReceipt, receiptSigningInput } from './invocation-receipt.js';
import { InvocationReply, InvocationResult } from './invocation-result.js';

const { signature: _signature, ...unsigned } = receipt;
const failed = { ...receipt, state: 'Failed', resultHash: undefined, failure: { code: 'NOT_FOUND', message: 'no such repo', retryable: false } } as const;

describe('InvocationReceipt', () => {
  it('accepts an Observed receipt and a Failed one', () => {
    expect(InvocationReceipt.safeParse(receipt).success).toBe(true);
    expect(InvocationReceipt.safeParse(failed).success).toBe(true);
    expect(UnsignedInvocationReceipt.safeParse(unsigned).success).toBe(true);
  });

  it.each([
    ['a non-terminal state', { state: 'Executing' }],
    ['an Observed receipt with a failure', { failure: { code: 'INTERNAL', message: 'x', retryable: false } }],
    ['an Observed receipt without a result hash', { resultHash: undefined }],
    ['a Failed receipt without a failure', { state: 'Failed', resultHash: undefined }],
    ['another algorithm', { signature: { ...receipt.signature, alg: 'RS256' } }],
    ['a signature of the wrong length', { signature: { ...receipt.signature, value: 'AAAA' } }],
    ['an uppercase hash', { requestHash: 'A'.repeat(64) }],
    ['an unknown key', { arguments: { title: 'Hi' } }],
    ['a failure with free-form details', { ...failed, failure: { ...failed.failure, details: { args: 1 } } }],
  ])('rejects %s', (_what, change) => {
    expect(InvocationReceipt.safeParse({ ...receipt, ...change }).success).toBe(false);
  });

  it('is signed over the canonical JSON without the signature, verifiable with the public key alone', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const value = sign(null, Buffer.from(receiptSigningInput(unsigned)), privateKey).toString('base64');
    const signed = InvocationReceipt.parse({ ...unsigned, signature: { alg: 'Ed25519', keyId: 'k1', value } });
    // A verifier that received the receipt with its keys in another order gets the same input.
    const reordered = Object.fromEntries(Object.entries(signed).reverse()) as InvocationReceipt;
    expect(receiptSigningInput(reordered)).toBe(receiptSigningInput(unsigned));
    expect(receiptSigningInput(signed)).not.toContain('signature');
    expect(verify(null, Buffer.from(receiptSigningInput(reordered)), publicKey, Buffer.from(signed.signature.value, 'base64'))).toBe(true);
    const tampered = { ...signed, attempt: 2 };
    expect(verify(null, Buffer.from(receiptSigningInput(tampered)), publicKey, Buffer.from(signed.signature.value, 'base64'))).toBe(false);
  });
});

describe('InvocationResult and InvocationReply', () => {
  const success = { status: 'SUCCESS', structuredContent: { id: 42 }, textContent: 'created #42', truncated: false, provenance: 'untrusted-tool-data', receipt } as const;

  it('accept a success with content and a failure without', () => {
    expect(InvocationResult.safeParse(success).success).toBe(true);
    expect(InvocationResult.safeParse({ status: 'FAILED', truncated: false, provenance: 'untrusted-tool-data', receipt: failed }).success).toBe(true);
    expect(InvocationReply.safeParse({ ok: true, data: success }).success).toBe(true);
    expect(InvocationReply.safeParse({ ok: false, error: { code: 'AUTHENTICATION_FAILED', message: 'bad token', retryable: false } }).success).toBe(true);
  });

  it.each([
    ['a status that contradicts the receipt', { status: 'FAILED' }],
    ['content on a failure', { status: 'FAILED', receipt: failed }],
    ['a result not tagged as untrusted', { provenance: 'trusted' }],
    ['no provenance', { provenance: undefined }],
    ['an oversize text', { textContent: 'x'.repeat(262_145) }],
  ])('reject %s', (_what, change) => {
    expect(InvocationResult.safeParse({ ...success, ...change }).success).toBe(false);
  });

  it('reject a reply with both data and error', () => {
    expect(InvocationReply.safeParse({ ok: true, data: success, error: { code: 'INTERNAL', message: 'x', retryable: false } }).success).toBe(false);
  });
  it('signs a flowRun when present and leaves receipts without one signed exactly as before', () => {
    const before = receiptSigningInput(unsigned);
    expect(before).not.toContain('flowRun');
    const flowRun = { workItemId: 'wi-1', flowRunId: 'fr-1', flowId: 'orders', flowVersion: 3, definitionName: 'orders.refund', toolCallId: unsigned.toolCallId, correlationId: 'corr-1' };
    const withRun = UnsignedInvocationReceipt.parse({ ...unsigned, flowRun });
    expect(withRun.flowRun).toEqual(flowRun);
    expect(receiptSigningInput(withRun)).not.toBe(before);
    expect(receiptSigningInput(withRun)).toContain('"flowRunId":"fr-1"');
    expect(UnsignedInvocationReceipt.safeParse({ ...unsigned, flowRun: { ...flowRun, flowVersion: 0 } }).success).toBe(false);
  });
});
