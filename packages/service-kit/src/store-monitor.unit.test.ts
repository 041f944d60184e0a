// The monitor's loop against a store whose answers the test decides (no server: what is tested is when it asks, what it
// logs and what it tells waiters; the real server is in run-service.int.test.ts).
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ToolplaneError } from '@toolplane/contracts';
import { defineCollection, type Store, type StoreCapabilities } from '@toolplane/store';
import { eventually } from '@toolplane/testing';
import { monitorStore } from './store-monitor.js';

const capabilities: StoreCapabilities = { server: 'mongodb', version: '8.0.4', atomicConditionalUpdates: true, partialIndexes: true, ttlIndexes: true, sparseIndexes: true };
const fast = { upIntervalMs: 20, downBackoffMs: [5], brokenIntervalMs: 5 };

/** A store that answers while `up`, counting pings; its one collection has no indexes to list. */
function fakeStore(initiallyUp: boolean) {
  const state = { up: initiallyUp, pings: 0, refuse: undefined as ToolplaneError | undefined };
  const store = {
    dbName: 'db',
    displayUrl: 'mongodb://fake:27017',
    db: { collection: () => ({ listIndexes: () => ({ toArray: () => Promise.resolve([]) }), createIndex: () => Promise.resolve('ok') }) },
    collection: () => {
      throw new Error('not used');
    },
    capabilities: () => (state.up ? Promise.resolve(capabilities) : Promise.reject(new ToolplaneError('TEMPORARY_UNAVAILABLE', 'down'))),
    ping: () => {
      state.pings += 1;
      if (state.refuse !== undefined) return Promise.reject(state.refuse);
      return state.up ? Promise.resolve() : Promise.reject(new ToolplaneError('TEMPORARY_UNAVAILABLE', 'pinging mongodb://fake:27017 failed: connect ECONNREFUSED'));
    },
    close: () => Promise.resolve(),
  } as unknown as Store;
  return { store, state };
}

function capturingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
        done();
      },
    }),
  );
  return { logger, messages: () => lines.map((line) => line.msg) };
}

const until = (what: string, condition: () => boolean) => eventually(what, () => (condition() ? true : undefined), 5_000, 5);

describe('monitorStore', () => {
  it('logs an outage once when it begins and once when it ends, however many probes fail in between', async () => {
    const { store, state } = fakeStore(false);
    const { logger, messages } = capturingLogger();
    const monitor = monitorStore({ store, collections: [defineCollection({ name: 'things', indexes: [{ name: 'by_x', key: { x: 1 } }] })], logger, timing: fast });
    try {
      await until('ten failed probes', () => state.pings >= 10);
      expect(monitor.available).toBe(false);
      expect(messages()).toEqual(['MongoDB does not answer: running without it; indexes are ensured and read models catch up once it answers']);

      const waiting = monitor.whenAvailable();
      state.up = true;
      await waiting;
      expect(monitor.available).toBe(true);
      expect(messages().slice(1)).toEqual(['MongoDB indexes ensured', 'MongoDB answers again: read models catch up']);

      state.up = false;
      const pingsBefore = state.pings;
      await until('ten more failed probes', () => state.pings >= pingsBefore + 10);
      expect(messages().slice(3)).toEqual(['MongoDB stopped answering: read models wait until it answers again']);
    } finally {
      await monitor.stop();
    }
  });

  it('asks again at once when a writer says an operation failed, and waits for that answer', async () => {
    const { store, state } = fakeStore(true);
    const { logger } = capturingLogger();
    const monitor = monitorStore({ store, collections: [], logger, timing: { ...fast, upIntervalMs: 60_000 } });
    try {
      await monitor.whenAvailable();
      const pings = state.pings;
      state.up = false;
      let settled = false;
      const waiting = monitor.whenAvailable({ recheck: true }).then(() => (settled = true));
      expect(monitor.available).toBe(false);
      await until('a probe right away', () => state.pings > pings);
      expect(settled).toBe(false);
      state.up = true;
      await waiting;
      expect(monitor.available).toBe(true);
    } finally {
      await monitor.stop();
    }
  });

  it('logs a failure that asking again cannot mend as an error, once, and stays unavailable', async () => {
    const { store, state } = fakeStore(true);
    state.refuse = new ToolplaneError('CONFLICT', 'index things.by_x already exists with a different definition');
    const { logger, messages } = capturingLogger();
    const monitor = monitorStore({ store, collections: [], logger, timing: fast });
    try {
      await until('five refused probes', () => state.pings >= 5);
      expect(monitor.available).toBe(false);
      expect(messages()).toEqual(['the MongoDB indexes cannot be ensured: read models wait until an operator mends it']);
    } finally {
      await monitor.stop();
    }
  });

  it('rejects waiters with CANCELLED when their signal aborts or the service stops', async () => {
    const { store } = fakeStore(false);
    const { logger } = capturingLogger();
    const monitor = monitorStore({ store, collections: [], logger, timing: fast });
    const controller = new AbortController();
    const aborted = monitor.whenAvailable({ signal: controller.signal });
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ code: 'CANCELLED' });
    const stopped = monitor.whenAvailable();
    await monitor.stop();
    await expect(stopped).rejects.toMatchObject({ code: 'CANCELLED' });
  });
});
