import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scope, SecretLease } from '@toolplane/contracts';
import { connectMessaging, type Messaging } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { connectStore, type Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { secretBrokerService } from '../src/mod.js';
import { brokerEnv, brokerKeys, call, eventually, leaseRequest, openLease } from './harness.js';
import { storeProxy, type StoreProxy } from './store-proxy.js';

// MongoDB holds read models only: with the broker's store frozen (a proxy that lets nothing through), leases,
// shows and connection changes are still answered from the private stream, and once the store is back the
// projector catches the read models up with what happened meanwhile.

const scope = testScope('secretbrokerstoredown');
const keys = brokerKeys();
const main: Scope = { tenant: scope.prefix, workspace: 'main' };

let proxy: StoreProxy;
let broker: RunningService;
let m: Messaging;
let store: Store;

beforeAll(async () => {
  const mongo = new URL(scope.mongoUrl);
  proxy = await storeProxy({ host: mongo.hostname, port: Number(mongo.port) });
  broker = await startService(secretBrokerService, brokerEnv(scope, keys, { MONGODB_URL: proxy.url, INSTANCE_ID: 'frozen-store' }));
  m = await connectMessaging({ url: scope.natsUrl, name: 'secret-broker-store-down-test' });
  store = await connectStore({ url: scope.mongoUrl, dbName: scope.dbName, appName: 'secret-broker-store-down-test' });
});

afterAll(async () => {
  proxy.thaw();
  await broker.stop();
  await proxy.close();
  await m.drain();
  await store.close();
});

const leaseDocs = (invocations: readonly string[]) => store.db.collection<SecretLease>('secret_leases').find({ tenant: main.tenant, invocationId: { $in: [...invocations] } }).toArray();

describe('the lease path with the read-model store frozen', () => {
  it('grants leases and changes connections without MongoDB, and the read models catch up once it is back', { timeout: 60_000 }, async () => {
    await call(m, main, 'createConnection', { name: 'hot', allowedTools: ['svc.call'], credential: { kind: 'api-key', apiKey: 'hot-value' } });
    const warm = leaseRequest('hot', 'svc.call');
    await call(m, main, 'leaseSecret', warm);

    proxy.freeze();
    const started = Date.now();
    const requests = Array.from({ length: 20 }, () => leaseRequest('hot', 'svc.call'));
    const replies = await Promise.all(requests.map((request) => call(m, main, 'leaseSecret', request)));
    requests.forEach((request, i) => expect(openLease(keys, replies[i] as (typeof replies)[number], request.invocationId)).toEqual({ kind: 'api-key', apiKey: 'hot-value' }));
    const created = await call(m, main, 'createConnection', { name: 'while-frozen', allowedTools: ['svc.call'], credential: { kind: 'bearer', token: 'frozen-value' } });
    expect(await call(m, main, 'showConnection', { connectionRef: 'while-frozen' })).toEqual(created);
    expect(await call(m, main, 'rotateConnection', { connectionRef: 'hot', credential: { kind: 'api-key', apiKey: 'hot-value-2' } })).toMatchObject({ secretGeneration: 2 });
    const afterRotation = leaseRequest('hot', 'svc.call');
    expect(openLease(keys, await call(m, main, 'leaseSecret', afterRotation), afterRotation.invocationId)).toEqual({ kind: 'api-key', apiKey: 'hot-value-2' });
    const elapsedMs = Date.now() - started;
    // Nothing of the above waited for the store (the driver would have waited its 30 s server selection).
    expect(elapsedMs).toBeLessThan(10_000);
    const invocations = [...requests, afterRotation].map((request) => request.invocationId);
    expect(await leaseDocs(invocations)).toEqual([]);

    proxy.thaw();
    const projected = await eventually(() => leaseDocs(invocations), (docs) => docs.length === invocations.length, 40_000);
    expect(projected.every((doc) => doc.state === 'Active')).toBe(true);
    const listed = await eventually(() => call(m, main, 'listConnections', {}), (page) => page.items.some((item) => item.name === 'while-frozen' ) && page.items.some((item) => item.name === 'hot' && item.secretGeneration === 2), 40_000);
    expect(listed.items.map((item) => item.name)).toEqual(['hot', 'while-frozen']);
  });
});
