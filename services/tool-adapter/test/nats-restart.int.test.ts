// nats-server restarted while WRITE calls execute, their provider calls finishing while it is down: the adapter's
// lease renewals and terminal appends made during the outage are sent again once its connection is back (the messaging
// kit's publisher), so each call ends Observed, run once, instead of Uncertain after its lease lapsed.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testScope } from '@toolplane/testing';
import { AdapterHarness, startNatsServer, waitFor, type NatsServer } from './adapter-harness.js';

const infra = testScope('adapter_nats_restart');
// The default lease and ack wait: the outage below is as long as a lease.
const adapterEnv = { ADAPTER_PROCESSING_LEASE_MS: '5000', LOG_LEVEL: 'warn' };
const calls = 4;
// Each provider call runs this long; the server goes down about half a second after they started, for 3 s.
const executionMs = 1_500;
const downMs = 3_000;

let nats: NatsServer;
let harness: AdapterHarness;

beforeEach(async () => {
  nats = await startNatsServer();
  harness = await AdapterHarness.start({ natsUrl: nats.url, mongoUrl: infra.mongoUrl, dbName: infra.dbName, adapterEnv });
}, 60_000);

afterEach(async () => {
  await harness?.close();
  await nats?.stop();
});

describe('nats-server restarted while WRITE calls execute', () => {
  it('ends each call whose provider call finished during the outage Observed, run once', { timeout: 180_000 }, async () => {
    const scope = await harness.freshScope();
    await harness.bindTool(scope, 'fixture.slow', 'slow', 'hostile', { sideEffectClass: 'WRITE', riskClass: 'MEDIUM', idempotency: 'NONE', timeoutMs: 90_000 });
    const adapter = await harness.startAdapter();
    const keys = Array.from({ length: calls }, (_, n) => `restart-${n}`);
    const sent = await Promise.all(keys.map((idempotencyKey) => harness.send(scope, { toolId: 'fixture.slow', arguments: { ms: executionMs }, idempotencyKey })));
    // A reply travels over core NATS and may be lost with a connection: the stored call is the outcome.
    for (const call of sent) call.reply(120_000).catch(() => undefined);
    await waitFor('every provider call started', async () => (await harness.executions(scope, 'slow-started')) === calls);
    const restartedAt = performance.now();
    await nats.restart({ downMs });
    // The provider calls finished while the server was down.
    expect(await harness.executions(scope, 'slow-finished')).toBe(calls);
    const ended = await waitFor(
      'every call ended',
      async () => {
        const stored = await Promise.all(keys.map((key) => harness.stored(scope, key).catch(() => undefined)));
        return stored.every((call) => call !== undefined && ['Observed', 'Failed', 'Uncertain', 'Cancelled', 'Denied'].includes(call.state)) ? stored : undefined;
      },
      60_000,
    );
    const settledMs = performance.now() - restartedAt;
    expect(ended.map((call) => [call?.idempotencyKey, call?.state, call?.attempt])).toEqual(keys.map((key) => [key, 'Observed', 1]));
    // Each effect ran once: no call was taken over and run again.
    expect(await harness.executions(scope, 'slow-started')).toBe(calls);
    expect(await harness.executions(scope, 'slow-finished')).toBe(calls);
    // Nothing waited out a publish deadline (10 s): the calls ended within seconds of the server's return.
    expect(settledMs).toBeLessThan(downMs + 10_000);
    const types = (await harness.storedEvents(scope)).map((event) => event.type);
    expect(types.filter((type) => type === 'ToolCallStarted')).toHaveLength(calls);
    expect(types.filter((type) => type === 'ToolCallCompleted')).toHaveLength(calls);
    expect(types.filter((type) => type === 'ToolEffectUncertain')).toHaveLength(0);
    expect(adapter.running()).toBe(true);
  });
});
