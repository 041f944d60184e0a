import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiptSigningInput, type InvocationReceipt, type UnsignedInvocationReceipt } from '@toolplane/contracts';
import type { CliIo } from '../output.js';
import { runCli } from '../program.js';
import { receiptIn } from './receipts.js';

// `receipts verify --keys FILE` offline (no NATS): the shapes it finds a receipt in, and what it refuses. The
// adapter's tests verify real receipts, with keys fetched from the adapter.

const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const unsigned: UnsignedInvocationReceipt = {
  tenant: 'acme',
  workspace: 'main',
  invocationId: randomUUID(),
  toolCallId: randomUUID(),
  attempt: 1,
  idempotencyKey: 'k-1',
  principal: 'user:ada@acme.example',
  toolId: 'ev.echo',
  toolVersion: '1',
  requestHash: 'a'.repeat(64),
  resultHash: 'b'.repeat(64),
  state: 'Observed',
  receivedAt: '2026-01-01T00:00:00.000Z',
  endedAt: '2026-01-01T00:00:01.000Z',
};
const receipt: InvocationReceipt = { ...unsigned, signature: { alg: 'Ed25519', keyId: 'k2026', value: sign(null, Buffer.from(receiptSigningInput(unsigned)), privateKey).toString('base64') } };
const jwks = { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k2026', alg: 'Ed25519', use: 'sig' }] };

let dir: string;
let keysFile: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'cli-receipts-'));
  keysFile = path.join(dir, 'keys.json');
  await writeFile(keysFile, JSON.stringify(jwks));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function verify(stdin: unknown, keys = keysFile): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readStdin: () => Promise.resolve(JSON.stringify(stdin)), env: {} };
  const code = await runCli(['receipts', 'verify', '--keys', keys], io);
  return { code, out, err };
}

describe('receipts verify', () => {
  it('finds the receipt in a receipt, an invoke --json output and a lookup reply', () => {
    expect(receiptIn(receipt)).toEqual(receipt);
    expect(receiptIn({ status: 'SUCCESS', receipt, textContent: 'hi' })).toEqual(receipt);
    expect(receiptIn({ state: 'Observed', result: { status: 'SUCCESS', receipt } })).toEqual(receipt);
    expect(() => receiptIn({ status: 'SUCCESS' })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => receiptIn({ receipt: { ...receipt, state: 'Sideways' } })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^not a receipt: /) as unknown }));
  });

  it('prints valid and exits 0 for an authentic receipt', async () => {
    const result = await verify({ status: 'SUCCESS', receipt });
    expect(result).toMatchObject({ code: 0, err: '' });
    expect(result.out).toMatch(/^valid\n/);
    expect(result.out).toMatch(/signed by key: k2026\n/);
  });

  it('exits 1 with one CODE: reason line for a changed field, an unknown key id or a key set that is not one', async () => {
    const notAuthentic = 'AUTHENTICATION_FAILED: the receipt is not authentic: ';
    expect(await verify({ ...receipt, attempt: 2 })).toEqual({ code: 1, out: '', err: `${notAuthentic}the signature does not match the receipt\n` });
    expect(await verify({ ...receipt, signature: { ...receipt.signature, keyId: 'k1999' } })).toEqual({ code: 1, out: '', err: `${notAuthentic}no public key for key id k1999\n` });
    const privateJwks = path.join(dir, 'private.json');
    await writeFile(privateJwks, JSON.stringify({ keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'k2026', alg: 'Ed25519', use: 'sig' }] }));
    expect((await verify(receipt, privateJwks)).err).toMatch(/^INVALID_ARGUMENT: the keys are not a JWKS of Ed25519 public keys: /);
  });
});
