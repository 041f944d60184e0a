import { InvocationReceipt, type ToolInvocation } from '@toolplane/contracts';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { at, hash, ids, later, scope, signingKey } from '../../test/core-fixtures.js';
import { signReceipt, unsignedReceiptOf, verifyReceipt } from './receipts.js';

const observed: ToolInvocation = {
  invocationId: ids.invocation,
  ...scope,
  toolCallId: 'call_1',
  attempt: 1,
  idempotencyKey: 'key-1',
  idempotencyKeyDerived: false,
  requestHash: hash('a'),
  principal: 'user:alice@example.com',
  agentId: 'agent-support',
  agentRevision: '7',
  toolId: 'github.create_issue',
  toolVersion: '1.0.0',
  correlationId: 'run-42',
  argumentsJson: '{"title":"x"}',
  declaredClass: 'WRITE',
  effectiveClass: 'WRITE',
  policyDecisionId: ids.approval,
  secretLeaseIds: [],
  state: 'Observed',
  eventSequence: 3,
  receivedAt: at,
  deadline: later(30_000),
  startedAt: later(5),
  endedAt: later(50),
  resultJson: '{"truncated":false}',
  resultHash: hash('b'),
  updatedAt: later(50),
  version: 4,
};

describe('receipts', () => {
  const key = signingKey('adapter-1');
  const publicKeys = new Map([[key.keyId, key.publicKey]]);

  it('builds the unsigned receipt of a terminal invocation, with exactly the signed fields', () => {
    expect(unsignedReceiptOf(observed)).toEqual({
      ...scope,
      invocationId: ids.invocation,
      toolCallId: 'call_1',
      attempt: 1,
      idempotencyKey: 'key-1',
      principal: 'user:alice@example.com',
      agentId: 'agent-support',
      agentRevision: '7',
      toolId: 'github.create_issue',
      toolVersion: '1.0.0',
      requestHash: hash('a'),
      resultHash: hash('b'),
      sideEffectClass: 'WRITE',
      policyDecisionId: ids.approval,
      state: 'Observed',
      receivedAt: at,
      startedAt: later(5),
      endedAt: later(50),
    });
    expect(() => unsignedReceiptOf({ ...observed, state: 'Executing' })).toThrow(RangeError);
    // A Failed invocation without a failure cannot be given a receipt verifiers would reject.
    expect(() => unsignedReceiptOf({ ...observed, state: 'Failed' })).toThrow();
  });

  it('signs a receipt that an auditor verifies offline with only the public key', () => {
    const receipt = signReceipt(unsignedReceiptOf(observed), key);
    expect(InvocationReceipt.parse(receipt)).toEqual(receipt);
    expect(receipt.signature).toMatchObject({ alg: 'Ed25519', keyId: 'adapter-1' });
    // Offline: the receipt as JSON text and the public key as PEM are all the auditor has.
    const auditorKey = new Map([['adapter-1', key.publicKey]]);
    expect(verifyReceipt(JSON.parse(JSON.stringify(receipt)), auditorKey)).toEqual({ valid: true, receipt });
  });

  it('signs a receipt that is already what the contract would make of it, as JSON text too (it is not parsed again)', () => {
    const failed: ToolInvocation = { ...observed, state: 'Failed', resultHash: undefined, resultJson: undefined, failure: { retryable: true, message: 'upstream down', code: 'TEMPORARY_UNAVAILABLE', providerErrorType: 'HttpStatus(503)' } };
    const { agentId: _agent, agentRevision: _revision, policyDecisionId: _decision, startedAt: _started, ...bare } = observed;
    for (const invocation of [observed, failed, { ...failed, approvalId: ids.approval }, bare]) {
      const receipt = signReceipt(unsignedReceiptOf(invocation), key);
      expect(JSON.stringify(receipt)).toBe(JSON.stringify(InvocationReceipt.parse(receipt)));
    }
    expect(() => signReceipt(unsignedReceiptOf(observed), { ...key, keyId: 'a key id with spaces' })).toThrow();
  });

  it('signs deterministically (Ed25519)', () => {
    expect(signReceipt(unsignedReceiptOf(observed), key)).toEqual(signReceipt(unsignedReceiptOf(observed), key));
  });

  it('detects tampering with any field', () => {
    const receipt = signReceipt(unsignedReceiptOf(observed), key);
    const tampered = [
      { ...receipt, state: 'Failed', failure: { code: 'INTERNAL', message: 'x', retryable: false }, resultHash: undefined },
      { ...receipt, resultHash: hash('c') },
      { ...receipt, attempt: 2 },
      { ...receipt, toolVersion: '1.0.1' },
      { ...receipt, policyDecisionId: undefined },
      { ...receipt, endedAt: later(51) },
    ];
    for (const candidate of tampered) {
      const verification = verifyReceipt(JSON.parse(JSON.stringify(candidate)), publicKeys);
      expect(verification.valid, JSON.stringify(candidate).slice(0, 80)).toBe(false);
    }
  });

  it('refuses a signature by another key, an unknown key id, and non-receipts', () => {
    const receipt = signReceipt(unsignedReceiptOf(observed), key);
    const other = generateKeyPairSync('ed25519');
    expect(verifyReceipt(receipt, new Map([['adapter-1', other.publicKey]]))).toEqual({ valid: false, problem: 'the signature does not match the receipt' });
    expect(verifyReceipt(receipt, new Map())).toEqual({ valid: false, problem: 'no public key for key id adapter-1' });
    expect(verifyReceipt({ hello: 'world' }, publicKeys).valid).toBe(false);
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(verifyReceipt(receipt, () => ec.publicKey)).toEqual({ valid: false, problem: 'the key is not an Ed25519 key' });
  });

  it('refuses to sign with anything but an Ed25519 private key', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(() => signReceipt(unsignedReceiptOf(observed), { keyId: 'k', privateKey: ec.privateKey })).toThrow(TypeError);
    const pem = key.privateKey.export({ format: 'pem', type: 'pkcs8' });
    expect(signReceipt(unsignedReceiptOf(observed), { keyId: 'adapter-1', privateKey: createPrivateKey(pem) }).signature.value).toBe(
      signReceipt(unsignedReceiptOf(observed), key).signature.value,
    );
  });
});
