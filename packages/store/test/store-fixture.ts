// Shared by the integration tests: each test file opens stores on its own database and drops it afterwards.
import type { TestScope } from '@toolplane/testing';
import { connectStore, type ConnectStoreOptions } from '../src/connect-store.js';
import type { Store } from '../src/store.js';

/** Stores opened by one test file; `replicas` opens several, like several service processes would. */
export interface StoreFixture {
  open(options?: Partial<ConnectStoreOptions>): Promise<Store>;
  replicas(count: number, options?: Partial<ConnectStoreOptions>): Promise<Store[]>;
  /** Drops the file's database and closes every store opened. */
  dispose(): Promise<void>;
}

/** Opens stores on the scope's real server and database. */
export function storeFixture(scope: TestScope): StoreFixture {
  const opened: Store[] = [];
  const open = async (options: Partial<ConnectStoreOptions> = {}) => {
    const store = await connectStore({ url: scope.mongoUrl, dbName: scope.dbName, appName: 'toolplane-store-test', serverSelectionTimeoutMs: 5_000, ...options });
    opened.push(store);
    return store;
  };
  return {
    open,
    replicas: (count, options) => Promise.all(Array.from({ length: count }, () => open(options))),
    dispose: async () => {
      const first = opened[0];
      if (first) await first.db.dropDatabase();
      await Promise.all(opened.map((store) => store.close()));
    },
  };
}
