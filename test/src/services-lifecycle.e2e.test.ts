import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateKek, generateRecipientKeyPair } from '@toolplane/sealing';
import { eventually, freePort, testScope } from '@toolplane/testing';
import { serviceNames, spawnService, waitForStatus } from './service-process.js';

const scope = testScope('lifecycle');
// The settings without defaults that some services need besides NATS and MongoDB.
const serviceKeys = {
  SECRET_BROKER_KEKS: JSON.stringify({ current: 'k1', keys: { k1: generateKek() } }),
  SECRET_BROKER_RECIPIENTS: JSON.stringify({ 'tool-adapter': generateRecipientKeyPair().publicKey }),
  FLOW_RUNNER_SIGNING_KEY: JSON.stringify({ ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: 'lifecycle-flow-runner', alg: 'EdDSA' }),
};
/** Services that keep no MongoDB read model: their readiness names NATS alone. */
const storeless: readonly string[] = ['flow-runner'];

describe.each(serviceNames)('the %s service process', (name) => {
  it('reports ready, serves metrics, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const service = spawnService(name, {
      ...serviceKeys,
      NATS_URL: scope.natsUrl,
      MONGODB_URL: scope.mongoUrl,
      MONGODB_DATABASE: scope.dbName,
      HTTP_PORT: String(port),
      LOG_LEVEL: 'info',
    });
    try {
      await waitForStatus(`http://127.0.0.1:${port}/readyz`, service, 30_000);
      // A service that does its job without MongoDB is ready before the kit's first probe of it has answered.
      const ready = await eventually('the readiness checks to settle', async () => {
        const { checks } = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as { checks: Record<string, string> };
        return storeless.includes(name) || checks['mongodb'] === 'ok' ? checks : undefined;
      }, 10_000);
      expect(ready).toEqual(storeless.includes(name) ? { nats: 'ok' } : { nats: 'ok', mongodb: 'ok' });
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toContain(`toolplane_process_cpu_seconds_total{service="${name}"}`);
    } finally {
      service.child.kill('SIGTERM');
    }
    expect(await service.exited).toBe(0);
    const lines = service.stdout().trim().split('\n').map((line) => JSON.parse(line) as { msg: string; service: string });
    expect(lines.every((line) => line.service === name)).toBe(true);
    expect(lines.map((line) => line.msg)).toEqual(expect.arrayContaining([`${name} ready`, 'shutting down', 'stopped']));
    expect(service.stderr()).toBe('');
  });
});

describe('a service with a bad configuration', () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ['NATS_URL missing', { MONGODB_URL: 'mongodb://127.0.0.1:1' }, /^registry: invalid configuration: NATS_URL is missing \(e\.g\. nats:\/\/127\.0\.0\.1:4222\)$/],
    ['NATS_URL malformed', { NATS_URL: 'http//nats', MONGODB_URL: 'mongodb://127.0.0.1:1' }, /^registry: invalid configuration: NATS_URL must be a nats:\/\//],
    ['HTTP_PORT malformed', { NATS_URL: 'nats://127.0.0.1:1', MONGODB_URL: 'mongodb://127.0.0.1:1', HTTP_PORT: 'x' }, /^registry: invalid configuration: HTTP_PORT must be a port number$/],
  ];

  it.each(cases)('exits 1 with one line naming the setting: %s', async (_label, env, expected) => {
    const service = spawnService('registry', env);
    expect(await service.exited).toBe(1);
    const stderr = service.stderr().trimEnd();
    expect(stderr.split('\n')).toHaveLength(1);
    expect(stderr).toMatch(expected);
    expect(service.stdout()).toBe('');
  });

  it('exits 1 with one line naming NATS_URL when NATS is unreachable', async () => {
    const service = spawnService('registry', { NATS_URL: `nats://127.0.0.1:${await freePort()}`, MONGODB_URL: scope.mongoUrl });
    expect(await service.exited).toBe(1);
    const stderr = service.stderr().trimEnd();
    expect(stderr.split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^registry: NATS_URL: cannot connect to NATS: /);
  });

  it('exits 1 with one line naming MONGODB_URL when it is malformed, its password not echoed', async () => {
    const service = spawnService('registry', { NATS_URL: scope.natsUrl, MONGODB_URL: 'mongodb://user:hun:ter22@127.0.0.1/db' });
    expect(await service.exited).toBe(1);
    const stderr = service.stderr().trimEnd();
    expect(stderr.split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^registry: invalid configuration: MONGODB_URL: mongodb:\/\/\*\*\*@127\.0\.0\.1\/db is not a valid MongoDB URL: /);
    expect(stderr).not.toContain('ter22');
  });
});

describe('a service whose MongoDB is unreachable', () => {
  it('starts anyway (its calls run on JetStream), ready with mongodb degraded, and says so once in its log', async () => {
    const port = await freePort();
    const service = spawnService('registry', { NATS_URL: scope.natsUrl, MONGODB_URL: `mongodb://127.0.0.1:${await freePort()}`, MONGODB_DATABASE: scope.dbName, MONGODB_CONNECT_TIMEOUT_MS: '500', HTTP_PORT: String(port) });
    try {
      await waitForStatus(`http://127.0.0.1:${port}/readyz`, service, 30_000);
      expect(await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()).toEqual({ status: 'ready', service: 'registry', checks: { nats: 'ok', mongodb: 'degraded' } });
      expect(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).toContain('toolplane_store_up{service="registry"} 0');
      await eventually('the registry to log that MongoDB does not answer', () => (service.stdout().includes('"component":"mongodb"') ? true : undefined), 10_000);
    } finally {
      service.child.kill('SIGTERM');
    }
    expect(await service.exited).toBe(0);
    const lines = service.stdout().trim().split('\n').map((line) => JSON.parse(line) as { msg: string; component?: string });
    expect(lines.filter((line) => line.component === 'mongodb').map((line) => line.msg)).toEqual([
      'MongoDB does not answer: running without it; indexes are ensured and read models catch up once it answers',
    ]);
  });
});
