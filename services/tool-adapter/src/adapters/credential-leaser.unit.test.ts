import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ToolplaneError, type SecretLeaseReply } from '@toolplane/contracts';
import { generateRecipientKeyPair, importPrivateKey, sealToRecipient } from '@toolplane/sealing';
import { leaseFailure, openLease } from './credential-leaser.js';

const adapterKeys = generateRecipientKeyPair();
const recipient = { keyId: 'tool-adapter', privateKey: importPrivateKey(adapterKeys.privateKey) };

function leaseReply(plaintext: string, invocationId: string, keyId = 'tool-adapter', publicKey = adapterKeys.publicKey): SecretLeaseReply {
  const leaseId = randomUUID();
  return {
    leaseId,
    connectionId: randomUUID(),
    kind: 'bearer',
    expiresAt: new Date(Date.now() + 60_000).toISOString(),
    sealed: sealToRecipient({ keyId, publicKey }, Buffer.from(plaintext, 'utf8'), { leaseId, invocationId }),
  };
}

describe('openLease', () => {
  it('opens a lease sealed to this adapter for this invocation into the credential', () => {
    const invocationId = randomUUID();
    expect(openLease(recipient, leaseReply('{"kind":"bearer","token":"tp-secret-1"}', invocationId), invocationId)).toEqual({ kind: 'bearer', token: 'tp-secret-1' });
  });

  it('refuses a lease for another invocation, to another key, or holding no credential, without quoting it', () => {
    const invocationId = randomUUID();
    const reply = leaseReply('{"kind":"bearer","token":"tp-secret-2"}', invocationId);
    expect(leaseFailure('github', catching(() => openLease(recipient, reply, randomUUID())))).toMatchObject({ code: 'INTERNAL', retryable: false });
    const other = generateRecipientKeyPair();
    const elsewhere = leaseReply('{"kind":"bearer","token":"tp-secret-3"}', invocationId, 'tool-adapter', other.publicKey);
    expect(leaseFailure('github', catching(() => openLease(recipient, elsewhere, invocationId)))).toMatchObject({ code: 'INTERNAL' });
    const garbage = catching(() => openLease(recipient, leaseReply('{"kind":"bearer","tokn":"tp-secret-4"}', invocationId), invocationId));
    expect(garbage).toMatchObject({ code: 'INTERNAL' });
    expect(String((garbage as Error).message)).not.toContain('tp-secret-4');
    const notJson = catching(() => openLease(recipient, leaseReply('tp-secret-5', invocationId), invocationId));
    expect(notJson).toMatchObject({ code: 'INTERNAL' });
    expect(String((notJson as Error).message)).not.toContain('tp-secret-5');
  });
});

describe('leaseFailure', () => {
  it('keeps the broker’s refusal code and names the connection', () => {
    expect(leaseFailure('github', new ToolplaneError('AUTHORIZATION_DENIED', 'connection github is Revoked'))).toEqual({
      code: 'AUTHORIZATION_DENIED',
      message: 'connection github: connection github is Revoked',
      retryable: false,
    });
    expect(leaseFailure('gh', new ToolplaneError('NOT_FOUND', 'no connection gh'))).toMatchObject({ code: 'NOT_FOUND', retryable: false });
  });

  it('turns a broker that does not answer into TEMPORARY_UNAVAILABLE, retryable', () => {
    expect(leaseFailure('github', new ToolplaneError('TIMEOUT', 'no reply within 5000 ms'))).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', retryable: true });
    expect(leaseFailure('github', new ToolplaneError('TEMPORARY_UNAVAILABLE', 'no responder'))).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', retryable: true });
  });
});

function catching(work: () => unknown): unknown {
  try {
    work();
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}
