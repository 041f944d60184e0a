import { afterEach, describe, expect, it } from 'vitest';
import { Counter, Registry } from 'prom-client';
import { startHealthServer, type HealthServer } from './health-server.js';

let server: HealthServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function get(path: string): Promise<{ status: number; body: string; type: string | null }> {
  const res = await fetch(`http://127.0.0.1:${server?.port}${path}`);
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
}

describe('startHealthServer', () => {
  it('serves liveness, readiness from its checks, and Prometheus metrics', async () => {
    const metrics = new Registry();
    new Counter({ name: 'toolplane_test_total', help: 'a test counter', registers: [metrics] }).inc(3);
    let dependencyUp = false;
    server = await startHealthServer({
      host: '127.0.0.1',
      port: 0,
      service: 'test',
      metrics,
      checks: [{ name: 'dependency', check: () => Promise.resolve(dependencyUp) }],
    });

    expect((await get('/healthz')).status).toBe(200);

    const notReady = await get('/readyz');
    expect(notReady.status).toBe(503);
    expect(JSON.parse(notReady.body)).toMatchObject({ status: 'not ready', checks: { dependency: 'failing' } });

    dependencyUp = true;
    const ready = await get('/readyz');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toMatchObject({ status: 'ready', checks: { dependency: 'ok' } });

    const scraped = await get('/metrics');
    expect(scraped.status).toBe(200);
    expect(scraped.type).toContain('text/plain');
    expect(scraped.body).toContain('toolplane_test_total 3');

    server.markShuttingDown();
    expect((await get('/readyz')).status).toBe(503);
    expect((await get('/nowhere')).status).toBe(404);
  });

  it('stays ready while a check that is not required fails, listing it as degraded', async () => {
    let storeUp = false;
    server = await startHealthServer({
      host: '127.0.0.1',
      port: 0,
      service: 'test',
      metrics: new Registry(),
      checks: [
        { name: 'nats', check: () => Promise.resolve(true) },
        { name: 'mongodb', required: false, check: () => (storeUp ? Promise.resolve(true) : Promise.reject(new Error('down'))) },
      ],
    });
    const degraded = await get('/readyz');
    expect(degraded.status).toBe(200);
    expect(JSON.parse(degraded.body)).toEqual({ status: 'ready', service: 'test', checks: { nats: 'ok', mongodb: 'degraded' } });
    storeUp = true;
    expect(JSON.parse((await get('/readyz')).body)).toMatchObject({ checks: { nats: 'ok', mongodb: 'ok' } });
  });

  it('treats a check that throws as failing', async () => {
    server = await startHealthServer({
      host: '127.0.0.1',
      port: 0,
      service: 'test',
      metrics: new Registry(),
      checks: [{ name: 'broken', check: () => Promise.reject(new Error('down')) }],
    });
    const res = await get('/readyz');
    expect(res.status).toBe(503);
    expect(JSON.parse(res.body)).toMatchObject({ checks: { broken: 'failing' } });
  });
});
