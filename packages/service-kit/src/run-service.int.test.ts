import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMessaging, type Messaging } from '@toolplane/messaging';
import { connectStore, defineCollection } from '@toolplane/store';
import { eventually, startPrivateFerretDb, testScope, type PrivateFerretDb } from '@toolplane/testing';
import { baseServiceConfig, storelessServiceConfig, type BaseServiceConfig } from './config.js';
import { startService, type RunningService, type ServiceContext, type StoreReadiness } from './run-service.js';

const scope = testScope('service_kit_run');

describe('startService', () => {
  it('connects with NATS_INBOX_PREFIX: the service’s request replies arrive under it', async () => {
    const prefix = `_INBOX_${scope.prefix}.svc`;
    const watcher = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_watcher` });
    const underPrefix: string[] = [];
    watcher.connection.subscribe(`${prefix}.>`, {
      callback: (error, message) => {
        if (error === null) underPrefix.push(message.subject);
      },
    });
    await watcher.connection.flush();
    let messaging: Messaging | undefined;
    const service = await startService(
      { name: 'inbox-probe', storeReadiness: 'optional', config: baseServiceConfig({ httpPort: 0 }), start: (context) => Promise.resolve(void (messaging = context.messaging)) },
      { NATS_URL: scope.natsUrl, MONGODB_URL: scope.mongoUrl, MONGODB_DATABASE: scope.dbName, HTTP_PORT: '0', LOG_LEVEL: 'silent', NATS_INBOX_PREFIX: prefix },
    );
    try {
      const before = underPrefix.length;
      // A JetStream API call is a request: its reply comes back on the connection's inbox.
      await messaging?.manager.getAccountInfo();
      await watcher.connection.flush();
      expect(underPrefix.length).toBeGreaterThan(before);
      expect(underPrefix.every((subject) => subject.startsWith(`${prefix}.`))).toBe(true);
    } finally {
      await service.stop();
      await watcher.drain();
    }
  });

  it('runs a service without MongoDB, serving its own routes beside /healthz, /readyz and /metrics, and drains them', async () => {
    let address: { host: string; port: number } | undefined;
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let entered: () => void = () => undefined;
    const inFlight = new Promise<void>((resolve) => (entered = resolve));
    const service = await startService(
      {
        name: 'storeless-probe',
        store: 'none',
        config: storelessServiceConfig({ httpPort: 0 }),
        start: (context) => {
          // No store in the context of a service without MongoDB.
          expect('store' in context && context.store !== undefined).toBe(false);
          context.serveHttp(async (req, res) => {
            if (req.url === '/slow') {
              entered();
              await released;
            }
            res.writeHead(200, { 'content-type': 'text/plain' });
            res.end(`own ${req.method} ${req.url}`);
          });
          context.onListening((bound) => (address = bound));
          return Promise.resolve();
        },
      },
      // No MONGODB_URL, and none is needed.
      { NATS_URL: scope.natsUrl, HTTP_PORT: '0', LOG_LEVEL: 'silent' },
    );
    const base = `http://127.0.0.1:${service.port}`;
    expect(address).toEqual({ host: '127.0.0.1', port: service.port });
    expect(await (await fetch(`${base}/anything?x=1`, { method: 'POST' })).text()).toBe('own POST /anything?x=1');
    const ready = await fetch(`${base}/readyz`);
    expect(await ready.json()).toMatchObject({ status: 'ready', checks: { nats: 'ok' } });
    expect(((await (await fetch(`${base}/readyz`)).json()) as { checks: Record<string, string> }).checks).not.toHaveProperty('mongodb');
    expect((await fetch(`${base}/metrics`)).status).toBe(200);
    expect((await fetch(`${base}/healthz`, { method: 'POST' })).status).toBe(405);

    // A request in flight when the service stops is answered; the stop waits for it.
    const slow = fetch(`${base}/slow`).then((res) => res.text());
    await inFlight;
    let stopped = false;
    const stopping = service.stop().then((clean) => {
      stopped = true;
      return clean;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    release();
    expect(await slow).toBe('own GET /slow');
    expect(await stopping).toBe(true);
  });

  it('collects each declared consumer’s pending, ack-pending and redelivered counts at scrape time, and leaves out one that is gone', async () => {
    const stream = `${scope.prefix}_gauges`;
    const subject = `${scope.prefix}.gauges.>`;
    const service = await startService(
      {
        name: 'gauge-probe',
        store: 'none',
        config: storelessServiceConfig({ httpPort: 0 }),
        streams: [{ name: stream, subjects: [subject], retention: 'limits', storage: 'file', duplicateWindowMs: 60_000 }],
        consumers: [
          { stream, consumer: { durableName: 'kept' } },
          { stream, consumer: { durableName: 'dropped' } },
        ],
        start: () => Promise.resolve(),
      },
      { NATS_URL: scope.natsUrl, HTTP_PORT: '0', LOG_LEVEL: 'silent' },
    );
    const m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_gauges` });
    try {
      const scrape = async () => (await fetch(`http://127.0.0.1:${service.port}/metrics`)).text();
      const labels = (consumer: string) => `{stream="${stream}",consumer="${consumer}",service="gauge-probe"}`;
      expect(await scrape()).toContain(`toolplane_consumer_pending${labels('kept')} 0`);

      // One message first, so the pull after its nak can only be served by its redelivery (a nak is processed
      // asynchronously: with more messages stored, the pull could get the next one first).
      await m.jetstream.publish(`${scope.prefix}.gauges.0`, '{}');
      const kept = await m.jetstream.consumers.get(stream, 'kept');
      const first = await kept.next({ expires: 5_000 });
      first?.nak();
      const again = await kept.next({ expires: 5_000 });
      expect(again?.redelivered).toBe(true);
      for (let i = 1; i < 3; i += 1) await m.jetstream.publish(`${scope.prefix}.gauges.${i}`, '{}');
      const busy = await scrape();
      expect(busy).toContain(`toolplane_consumer_pending${labels('kept')} 2`);
      expect(busy).toContain(`toolplane_consumer_ack_pending${labels('kept')} 1`);
      expect(busy).toContain(`toolplane_consumer_redelivered${labels('kept')} 1`);
      expect(busy).toContain(`toolplane_consumer_pending${labels('dropped')} 3`);

      // A consumer whose info cannot be read is left out; the scrape still answers, with the others.
      await m.manager.consumers.delete(stream, 'dropped');
      const res = await fetch(`http://127.0.0.1:${service.port}/metrics`);
      expect(res.status).toBe(200);
      const after = await res.text();
      expect(after).not.toContain('consumer="dropped"');
      expect(after).toContain(`toolplane_consumer_pending${labels('kept')} 2`);
      await again?.ackAck();
    } finally {
      await m.drain();
      await service.stop();
    }
  });
});

describe('a service with MongoDB', () => {
  // A MongoDB-protocol server of this file's own, to be away and come back under running services.
  let ferret: PrivateFerretDb;
  beforeAll(async () => {
    ferret = await startPrivateFerretDb('service-kit-ferretdb-');
  }, 60_000);
  afterAll(async () => {
    await ferret?.stop();
  });

  const probes = defineCollection<{ _id: string; x: number }>({ name: 'probes', indexes: [{ name: 'by_x', key: { x: 1 } }] });
  const env = (mongoUrl: string) => ({ NATS_URL: scope.natsUrl, MONGODB_URL: mongoUrl, MONGODB_DATABASE: scope.dbName, MONGODB_CONNECT_TIMEOUT_MS: '500', HTTP_PORT: '0', LOG_LEVEL: 'silent' });
  const readyz = async (service: RunningService) => {
    const res = await fetch(`http://127.0.0.1:${service.port}/readyz`);
    return { status: res.status, body: (await res.json()) as { status: string; checks: Record<string, string> } };
  };
  const storeUp = async (service: RunningService) => {
    const value = /^toolplane_store_up\{[^}]*\} (\d+)$/m.exec(await (await fetch(`http://127.0.0.1:${service.port}/metrics`)).text())?.[1];
    return value === undefined ? undefined : Number(value);
  };
  let askedServer: string | undefined;
  const start = (name: string, storeReadiness: StoreReadiness, mongoUrl: string, onStart?: (context: ServiceContext<BaseServiceConfig>) => void) =>
    startService(
      {
        name,
        storeReadiness,
        config: baseServiceConfig({ httpPort: 0 }),
        // Indexes made for the server: the kit asks it what it supports first, once it answers.
        collections: (capabilities) => {
          askedServer = capabilities.server;
          return [probes];
        },
        start: (context) => {
          onStart?.(context);
          return Promise.resolve();
        },
      },
      env(mongoUrl),
    );

  it('starts while MongoDB does not answer: ready or not as it declares, catching up (indexes, readiness, store_up) once MongoDB answers', { timeout: 60_000 }, async () => {
    await ferret.kill();
    let optionalContext: ServiceContext<BaseServiceConfig> | undefined;
    const startedAt = Date.now();
    const optional = await start('store-optional-probe', 'optional', ferret.url, (context) => (optionalContext = context));
    const required = await start('store-required-probe', 'required', ferret.url);
    try {
      // Neither start waited for MongoDB's selection timeout, let alone failed on it.
      expect(Date.now() - startedAt).toBeLessThan(5_000);
      expect(await readyz(optional)).toEqual({ status: 200, body: { status: 'ready', service: 'store-optional-probe', checks: { nats: 'ok', mongodb: 'degraded' } } });
      expect(await readyz(required)).toEqual({ status: 503, body: { status: 'not ready', service: 'store-required-probe', checks: { nats: 'ok', mongodb: 'failing' } } });
      expect(await storeUp(optional)).toBe(0);
      expect(askedServer).toBeUndefined();
      expect(optionalContext?.storeStatus.available).toBe(false);
      // An operation while MongoDB is away fails as the taxonomy says, after the selection timeout.
      await expect(optionalContext?.store.ping()).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', retryable: true });
      const available = optionalContext?.storeStatus.whenAvailable();

      await ferret.restart();
      await available;
      await eventually('the required service to report ready', async () => ((await readyz(required)).status === 200 ? true : undefined), 20_000);
      expect((await readyz(required)).body.checks).toEqual({ nats: 'ok', mongodb: 'ok' });
      expect((await readyz(optional)).body.checks).toEqual({ nats: 'ok', mongodb: 'ok' });
      await eventually('store_up 1', async () => ((await storeUp(optional)) === 1 ? true : undefined), 20_000);
      expect(askedServer).toBe('ferretdb');
      const check = await connectStore({ url: ferret.url, dbName: scope.dbName, appName: 'service-kit-test' });
      try {
        const names = (await check.db.collection('probes').listIndexes().toArray()).map((index: { readonly name?: unknown }) => String(index.name));
        expect(names).toContain('by_x');
      } finally {
        await check.close();
      }

      // Away again: the required service stops being ready, the optional one stays ready, degraded; whenAvailable waits.
      await ferret.kill();
      await eventually('the required service to report not ready', async () => ((await readyz(required)).status === 503 ? true : undefined), 20_000);
      // The optional check reads the kit's last probe (taken every 10 s while MongoDB answers), never waiting on a ping.
      await eventually('the optional service to report mongodb degraded', async () => ((await readyz(optional)).body.checks['mongodb'] === 'degraded' ? true : undefined), 20_000);
      expect((await readyz(optional)).status).toBe(200);
      expect(await storeUp(optional)).toBe(0);
      const controller = new AbortController();
      const waiting = optionalContext?.storeStatus.whenAvailable({ signal: controller.signal, recheck: true });
      controller.abort();
      await expect(waiting).rejects.toMatchObject({ code: 'CANCELLED' });
      await ferret.restart();
      await eventually('the required service to report ready again', async () => ((await readyz(required)).status === 200 ? true : undefined), 20_000);
    } finally {
      expect(await optional.stop()).toBe(true);
      expect(await required.stop()).toBe(true);
    }
  });

  it('stops in one line naming MONGODB_URL when the URL is malformed, without echoing its password', async () => {
    const failure = await start('store-malformed-probe', 'optional', 'mongodb://user:hun:ter22@127.0.0.1/db').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(Error);
    const message = (failure as Error).message;
    expect(message).toMatch(/^invalid configuration: MONGODB_URL: mongodb:\/\/\*\*\*@127\.0\.0\.1\/db is not a valid MongoDB URL: /);
    expect(message).not.toContain('\n');
    expect(message).not.toContain('ter22');
  });
});
