import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { receipt } from '../test/fixtures.js';
import { InvocationReceipt, receiptSigningInput } from './invocation-receipt.js';
import { verifyReceipt } from './receipt-verification.js';

const { signature: _signature, ...unsigned } = receipt;
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const signed = InvocationReceipt.parse({
  ...unsigned,
  signature: { alg: 'Ed25519', keyId: 'adapter-1', value: sign(null, Buffer.from(receiptSigningInput(unsigned)), privateKey).toString('base64') },
});
const keys = new Map([['adapter-1', publicKey]]);

describe('verifyReceipt', () => {
  it('accepts a signed receipt after a JSON round trip, with the public key alone', () => {
    expect(verifyReceipt(JSON.parse(JSON.stringify(signed)), keys)).toEqual({ valid: true, receipt: signed });
    expect(verifyReceipt(signed, () => publicKey).valid).toBe(true);
  });

  it('refuses a changed field, another key, an unknown key id and a non-receipt, without throwing', () => {
    expect(verifyReceipt({ ...signed, attempt: signed.attempt + 1 }, keys)).toEqual({ valid: false, problem: 'the signature does not match the receipt' });
    expect(verifyReceipt(signed, new Map([['adapter-1', generateKeyPairSync('ed25519').publicKey]])).valid).toBe(false);
    expect(verifyReceipt(signed, new Map())).toEqual({ valid: false, problem: 'no public key for key id adapter-1' });
    expect(verifyReceipt({ hello: 'world' }, keys).valid).toBe(false);
    expect(verifyReceipt(signed, () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey)).toEqual({ valid: false, problem: 'the key is not an Ed25519 key' });
  });
});
