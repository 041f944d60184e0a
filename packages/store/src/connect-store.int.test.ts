import { hasErrorCode } from '@toolplane/contracts';
import { freePort, testScope } from '@toolplane/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { storeFixture } from '../test/store-fixture.js';
import { connectStore } from './connect-store.js';

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
    expect(['mongodb', 'ferretdb']).toContain(store.capabilities.server);
    // FerretDB 1.x reads, then writes by _id: a conditional update there is no guard between writers.
    expect(store.capabilities.atomicConditionalUpdates).toBe(store.capabilities.server === 'mongodb');
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
