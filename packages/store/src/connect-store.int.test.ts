import { hasErrorCode } from '@toolplane/contracts';
import { freePort, startPrivateFerretDb, testScope } from '@toolplane/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { storeFixture } from '../test/store-fixture.js';
import { connectStore, openStore } from './connect-store.js';
import { toStoreError } from './store-error.js';

const scope = testScope('store_connect');
const fixture = storeFixture(scope);
afterAll(() => fixture.dispose());

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string; retryable: boolean }> {
  try {
    await promise;
  } catch (error) {
    if (hasErrorCode(error)) return error;
    throw error;
  }
  throw new Error('expected a failure');
}

describe('connectStore', () => {
  it('connects, answers ping and reports what the server can do', async () => {
    const store = await fixture.open();
    await expect(store.ping()).resolves.toBeUndefined();
    const capabilities = await store.capabilities();
    expect(['mongodb', 'ferretdb']).toContain(capabilities.server);
    // FerretDB 1.x reads, then writes by _id: a conditional update there is no guard between writers.
    expect(capabilities.atomicConditionalUpdates).toBe(capabilities.server === 'mongodb');
    expect(store.dbName).toBe(scope.dbName);
  });

  it('fails fast with TEMPORARY_UNAVAILABLE naming the URL without credentials when nothing listens', async () => {
    const port = await freePort();
    const started = Date.now();
    const error = await failure(connectStore({ url: `mongodb://toolplane:hunter22@127.0.0.1:${port}/admin?authSource=admin`, dbName: 'x', appName: 'test', serverSelectionTimeoutMs: 500 }));
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(error.code).toBe('TEMPORARY_UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(`mongodb://***@127.0.0.1:${port}/admin`);
    expect(error.message).not.toContain('hunter22');
    expect(error.message).not.toContain('toolplane:');
  });

  it.each([
    ['a URL with another scheme', 'postgres://user:hunter22@h:5432/db'],
    ['a URL without a host', 'mongodb://'],
    ['a password with unescaped characters', 'mongodb://user:hun:ter22@h/db'],
  ])('refuses %s with INVALID_ARGUMENT, credentials hidden', async (_label, url) => {
    const error = await failure(connectStore({ url, dbName: 'x', appName: 'test', serverSelectionTimeoutMs: 500 }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).not.toMatch(/hunter22|hun:ter22/);
  });

  it('refuses an invalid database name before connecting', async () => {
    const error = await failure(connectStore({ url: scope.mongoUrl, dbName: 'has.dot', appName: 'test' }));
    expect(error.code).toBe('INVALID_ARGUMENT');
  });

  it('is CANCELLED by an aborted signal', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await failure(connectStore({ url: scope.mongoUrl, dbName: scope.dbName, appName: 'test', signal: controller.signal }));
    expect(error.code).toBe('CANCELLED');
  });

  it('closes idempotently; a closed store is unavailable, not broken', async () => {
    const store = await connectStore({ url: scope.mongoUrl, dbName: scope.dbName, appName: 'test' });
    await store.close();
    await store.close();
    const error = await failure(store.ping());
    expect(error.code).toBe('TEMPORARY_UNAVAILABLE');
  });

  it('ping honours an aborted signal', async () => {
    const store = await fixture.open();
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    expect((await failure(store.ping(controller.signal))).code).toBe('CANCELLED');
  });
});

describe('openStore', () => {
  it('refuses a malformed URL at once with INVALID_ARGUMENT, credentials hidden', () => {
    let error: unknown;
    try {
      openStore({ url: 'mongodb://user:hun:ter22@h/db', dbName: 'x', appName: 'test' });
    } catch (thrown) {
      error = thrown;
    }
    expect(hasErrorCode(error) && error.code).toBe('INVALID_ARGUMENT');
    expect(String((error as Error).message)).not.toMatch(/hun:ter22|ter22/);
  });

  it('stays closed once closed, even before it ever connected', async () => {
    const store = openStore({ url: scope.mongoUrl, dbName: scope.dbName, appName: 'test' });
    await store.close();
    await expect(store.ping()).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
    await expect(store.capabilities()).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
  });

  it('opens without a server; fails as unavailable while none answers, and works once one does', { timeout: 60_000 }, async () => {
    // A server of this test's own, to be away and then come back.
    const ferret = await startPrivateFerretDb('store-open-');
    await ferret.kill();
    const store = openStore({ url: ferret.url, dbName: scope.dbName, appName: 'test', serverSelectionTimeoutMs: 500 });
    try {
      const failure = await store.ping().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(hasErrorCode(failure) && failure.code).toBe('TEMPORARY_UNAVAILABLE');
      await expect(store.capabilities()).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
      // A driver operation of a service meanwhile fails as unavailable too (not for good: see below).
      const raw = await store.db.collection('probe').insertOne({ n: 1 }).then(
        () => undefined,
        (error: unknown) => toStoreError(error, 'inserting'),
      );
      expect(raw?.code).toBe('TEMPORARY_UNAVAILABLE');

      await ferret.restart();
      await store.ping();
      await expect(store.capabilities()).resolves.toMatchObject({ server: 'ferretdb' });
      await store.db.collection('probe').insertOne({ n: 2 });
      expect(await store.db.collection('probe').countDocuments()).toBe(1);
    } finally {
      await store.close();
      await ferret.stop();
    }
  });
});
