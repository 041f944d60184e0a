import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKek } from '@toolplane/sealing';
import type { Scope } from '@toolplane/contracts';
import { connectMessaging, type Messaging } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { testScope } from '@toolplane/testing';
import { connectionIdOfName } from '../src/core/aggregate-ids.js';
import { connectionEventStore, streamIdOf } from '../src/event-stores.js';
import { secretBrokerService } from '../src/mod.js';
import { brokerEnv, brokerKeys, call, connectionRecord, eventually, leaseRequest, openLease, recordCounts, rejection } from './harness.js';

// Key-encryption key rotation as an operator does it, and ciphertexts moved between records, against the real
// servers: each phase runs its own broker replicas with the keyring of that phase.

const scope = testScope('secretbrokerkeys');
const keys = brokerKeys();
const k2 = generateKek();
const main: Scope = { tenant: scope.prefix, workspace: 'main' };
const names = ['alpha', 'beta', 'gamma'];

let m: Messaging;
let running: RunningService[] = [];

const keyring = (current: string, entries: Record<string, string>) => JSON.stringify({ current, keys: entries });
async function replicas(kekConfig: string, count = 2): Promise<void> {
  await Promise.all(running.map((replica) => replica.stop()));
  const env = { ...brokerEnv(scope, keys), SECRET_BROKER_KEKS: kekConfig };
  running = [];
  for (let i = 0; i < count; i += 1) running.push(await startService(secretBrokerService, { ...env, INSTANCE_ID: `r${i}` }));
}
// Each connection's current secret, as its record (the private stream) holds it.
const secrets = () => Promise.all(names.map(async (name) => ({ name, secret: (await connectionRecord(m, main, name)).at(-1)?.data.connection.secret })));
async function leaseValue(name: string): Promise<unknown> {
  const request = leaseRequest(name, 'svc.call');
  return openLease(keys, await call(m, main, 'leaseSecret', request), request.invocationId);
}

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: 'secret-broker-keys-test' });
});

afterAll(async () => {
  await Promise.all(running.map((replica) => replica.stop()));
  await m.drain();
});

describe('key-encryption key rotation', () => {
  it('wraps new secrets under the current KEK', async () => {
    await replicas(keyring('k1', { k1: keys.kek }));
    for (const name of names) await call(m, main, 'createConnection', { name, allowedTools: ['svc.call'], credential: { kind: 'api-key', apiKey: `value-of-${name}` } });
    expect((await secrets()).map((doc) => doc.secret?.kekId)).toEqual(['k1', 'k1', 'k1']);
  });

  it('rewraps every secret under a new current KEK in the background, without re-encrypting the data', async () => {
    const before = await secrets();
    await replicas(keyring('k2', { k1: keys.kek, k2 }));
    const after = await eventually(secrets, (docs) => docs.every((doc) => doc.secret?.kekId === 'k2'));
    for (const doc of after) {
      const old = before.find((candidate) => candidate.name === doc.name);
      expect(doc.secret?.ciphertext).toBe(old?.secret?.ciphertext);
      expect(doc.secret?.wrappedKey).not.toBe(old?.secret?.wrappedKey);
    }
    expect(await leaseValue('alpha')).toEqual({ kind: 'api-key', apiKey: 'value-of-alpha' });
    // The wrapping under the old KEK is gone from the record: only the rewrapped secret is left.
    const records = await eventually(() => Promise.all(names.map((name) => connectionRecord(m, main, name))), (all) => all.every((events) => events.length === 1));
    expect(records.map((events) => events[0]?.type)).toEqual(['ConnectionSecretRewrapped', 'ConnectionSecretRewrapped', 'ConnectionSecretRewrapped']);
  });

  it('keeps every secret readable once the old KEK is retired', async () => {
    await replicas(keyring('k2', { k2 }));
    for (const name of names) expect(await leaseValue(name)).toEqual({ kind: 'api-key', apiKey: `value-of-${name}` });
    const created = await call(m, main, 'createConnection', { name: 'delta', allowedTools: ['svc.call'], credential: { kind: 'api-key', apiKey: 'value-of-delta' } });
    expect(created.kekId).toBe('k2');
  });

  it('fails a lease with INTERNAL, not a garbled value, on a replica that lacks the KEK', async () => {
    await replicas(keyring('k1', { k1: keys.kek }), 1);
    const error = await rejection(call(m, main, 'leaseSecret', leaseRequest('alpha', 'svc.call')));
    expect(error).toMatchObject({ code: 'INTERNAL', message: 'the stored credential of connection alpha cannot be decrypted (unknown-key)' });
  });
});

describe('ciphertexts are bound to their connection', () => {
  it('refuses a secret copied from another connection and grants nothing', async () => {
    await replicas(keyring('k2', { k2 }), 1);
    // Tampering with the record, below the broker: beta's subject now says it holds alpha's ciphertext.
    const events = connectionEventStore(m);
    const alpha = (await connectionRecord(m, main, 'alpha')).at(-1)?.data.connection;
    const betaStream = streamIdOf(main, connectionIdOfName(main, 'beta'));
    const beta = await events.readStream(betaStream);
    const betaConnection = beta.events.at(-1)?.data.connection;
    if (alpha?.secret === undefined || betaConnection === undefined) throw new Error('alpha and beta should exist');
    await events.appendToStream(betaStream, [{ type: 'ConnectionSecretRewrapped', data: { connection: { ...betaConnection, secret: alpha.secret } } }], { expectedVersion: beta.version });
    const before = await recordCounts(m, main);
    const request = leaseRequest('beta', 'svc.call');
    const error = await rejection(call(m, main, 'leaseSecret', request));
    expect(error).toMatchObject({ code: 'INTERNAL', message: 'the stored credential of connection beta cannot be decrypted (decryption-failed)' });
    expect(await recordCounts(m, main)).toEqual(before);
  });
});
