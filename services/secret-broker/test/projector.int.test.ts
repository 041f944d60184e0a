import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Connection, SecretBrokerRecord, SecretLease } from '@toolplane/contracts';
import { connectStore, ensureIndexes, type Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { connections, secretLeases } from '../src/collections.js';
import { projectRecord } from '../src/projector.js';

// The projector's writes against the real store: every record folded twice (a redelivery whose ack was lost) leaves
// what folding it once left, a lease ends once whatever ends it first, and no secret reaches the read models.

const scope = testScope('secretbrokerprojector');
let store: Store;
const tenant = scope.prefix;
const at = (minute: number) => new Date(Date.UTC(2026, 10, 29, 17, minute)).toISOString();
const connection: Connection = {
  connectionId: '5b0d6f38-6f0e-4c43-8e36-2d9a1f0f9a11',
  tenant,
  workspace: 'main',
  name: 'github',
  kind: 'bearer',
  state: 'Active',
  allowedTools: ['github.create_issue'],
  secretGeneration: 1,
  secret: { v: 1, alg: 'A256GCM-KEK-A256GCM', kekId: 'k1', wrappedKey: 'W'.repeat(80), iv: 'A'.repeat(16), ciphertext: 'CIPHERTEXTCIPHERTEXT', tag: 'A'.repeat(22) },
  createdAt: at(0),
  updatedAt: at(0),
  version: 1,
};
const lease = (leaseId: string): SecretLease => ({
  leaseId,
  tenant,
  workspace: 'main',
  connectionId: connection.connectionId,
  connectionRef: 'github',
  invocationId: `inv-${leaseId.slice(0, 8)}`,
  toolId: 'github.create_issue',
  leasedTo: 'svc:tool-adapter',
  recipientKeyId: 'tool-adapter',
  secretGeneration: 1,
  state: 'Active',
  grantedAt: at(1),
  expiresAt: at(6),
  version: 1,
});
const [first, second] = ['1f6b9a52-5f3c-4f52-9d3e-0c8f6a7b2e10', '2f6b9a52-5f3c-4f52-9d3e-0c8f6a7b2e10'];

beforeAll(async () => {
  store = await connectStore({ url: scope.mongoUrl, dbName: scope.dbName, appName: 'secret-broker-projector-test' });
  await ensureIndexes(store, [connections, secretLeases]);
});
afterAll(async () => {
  await store.close();
});

const target = () => ({ connections: store.collection(connections), leases: store.collection(secretLeases) });
const twice = async (record: SecretBrokerRecord) => {
  await projectRecord(target(), record);
  await projectRecord(target(), record);
};
const documents = async () => ({
  connections: await store.db.collection('connections').find({ tenant }).toArray(),
  leases: await store.db.collection('secret_leases').find({ tenant }, { sort: { _id: 1 } }).toArray(),
});

describe('the secret-broker projector', () => {
  it('folds each record idempotently into summaries and leases, ending a lease once', async () => {
    await twice({ type: 'ConnectionCreated', data: { connection } });
    await twice({ type: 'LeaseGranted', data: { lease: lease(first), connectionVersion: 1 } });
    await twice({ type: 'LeaseGranted', data: { lease: lease(second), connectionVersion: 1 } });
    await twice({ type: 'LeaseEnded', data: { leaseId: first, state: 'Expired', endedAt: at(6) } });
    const { secret: _secret, ...kept } = connection;
    await twice({ type: 'ConnectionRevoked', data: { connection: { ...kept, state: 'Revoked', revokedAt: at(7), updatedAt: at(7), version: 2 } } });
    // A late expiry of a lease the revocation ended, and a repeated grant: the first end stays.
    await twice({ type: 'LeaseEnded', data: { leaseId: second, state: 'Expired', endedAt: at(8) } });
    await twice({ type: 'LeaseGranted', data: { lease: lease(first), connectionVersion: 1 } });

    const { connections: summaries, leases } = await documents();
    expect(summaries).toEqual([{ _id: connection.connectionId, ...kept, state: 'Revoked', revokedAt: at(7), updatedAt: at(7), version: 2 }]);
    expect(leases.map((doc): unknown[] => [doc['leaseId'], doc['state'], doc['endedAt'], doc['version']])).toEqual([
      [first, 'Expired', at(6), 2],
      [second, 'Revoked', at(7), 2],
    ]);
    expect(JSON.stringify(await documents())).not.toMatch(/CIPHERTEXT|WWWW/);
  });

  it('keeps only the KEK id of an active connection, never its envelope', async () => {
    await twice({ type: 'ConnectionCreated', data: { connection: { ...connection, connectionId: '6b0d6f38-6f0e-4c43-8e36-2d9a1f0f9a11', name: 'other' } } });
    const doc = await store.db.collection('connections').findOne({ tenant, name: 'other' });
    expect(doc).toMatchObject({ kekId: 'k1', state: 'Active' });
    expect(doc).not.toHaveProperty('secret');
  });
});
