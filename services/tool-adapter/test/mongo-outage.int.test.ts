// MongoDB (a FerretDB of this test's own) gone while the adapter process handles calls: nothing on the governed
// path reads or writes it any more (the calls' records are on the adapter's private stream, policies and rate
// counters in KV), so calls keep being governed, exactly once, while it is away.
import { readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startPrivateFerretDb, uniqueName, type PrivateFerretDb } from '@toolplane/testing';
import { adapterFailpoints } from '../src/app/invocation-handler.js';
import { AdapterHarness, startNatsServer, waitFor, type NatsServer } from './adapter-harness.js';

// Short leases and a short server selection timeout: nothing on the path may wait for the database.
const adapterEnv = { ADAPTER_PROCESSING_LEASE_MS: '3000', MONGODB_CONNECT_TIMEOUT_MS: '2000', LOG_LEVEL: 'warn' };

let nats: NatsServer;
let ferret: PrivateFerretDb;
let harness: AdapterHarness;

beforeEach(async () => {
  nats = await startNatsServer();
  ferret = await startPrivateFerretDb('adapter-ferretdb-');
  harness = await AdapterHarness.start({ natsUrl: nats.url, mongoUrl: ferret.url, dbName: uniqueName('t_outage'), adapterEnv });
}, 60_000);

afterEach(async () => {
  await harness?.close();
  await ferret?.stop();
  await nats?.stop();
});

async function bindWrite(scope: Awaited<ReturnType<AdapterHarness['freshScope']>>): Promise<void> {
  await harness.bindTool(scope, 'fixture.write', 'count_calls', 'counting', { sideEffectClass: 'WRITE', riskClass: 'MEDIUM', idempotency: 'NONE', timeoutMs: 90_000 });
}

describe('MongoDB stopped', () => {
  it('during a call frozen right before the started fact: the call runs once and ends Observed', { timeout: 180_000 }, async () => {
    const scope = await harness.freshScope();
    await bindWrite(scope);
    const adapter = await harness.startAdapter({ TOOLPLANE_FAILPOINTS: `${adapterFailpoints.beforeStarted}=stop` });
    const call = await harness.send(scope, { toolId: 'fixture.write', arguments: {}, idempotencyKey: 'outage' });
    await waitFor('the adapter to stop at the failpoint', () => isStopped(adapter.pid));
    await ferret.kill();
    adapter.child.kill('SIGCONT');
    const reply = await call.reply(60_000);
    expect(reply.ok && reply.data.status).toBe('SUCCESS');
    expect(reply.ok && reply.data.receipt.attempt).toBe(1);
    expect(await harness.executions(scope)).toBe(1);
    const stored = await harness.stored(scope, 'outage');
    expect(stored?.state).toBe('Observed');
    const types = (await harness.storedEvents(scope)).map((event) => event.type);
    expect(types.filter((type) => type === 'ToolCallStarted')).toHaveLength(1);
    expect(types.filter((type) => type === 'ToolCallCompleted')).toHaveLength(1);
    expect(adapter.running()).toBe(true);
    await ferret.restart();
    expect(await adapter.stop()).toBe(0);
  });

  it('before calls are sent: they are governed while it is away, each run once', { timeout: 180_000 }, async () => {
    const scope = await harness.freshScope();
    await bindWrite(scope);
    const adapter = await harness.startAdapter();
    await ferret.kill();
    const calls = await Promise.all(Array.from({ length: 5 }, (_, n) => harness.send(scope, { toolId: 'fixture.write', arguments: {}, idempotencyKey: `queued-${n}` })));
    const replies = await Promise.all(calls.map((call) => call.reply(60_000)));
    expect(replies.map((reply) => reply.ok && reply.data.status)).toEqual(Array.from({ length: 5 }, () => 'SUCCESS'));
    expect(await harness.executions(scope)).toBe(5);
    expect((await harness.stored(scope, 'queued-0'))?.state).toBe('Observed');
    await ferret.restart();
    expect(await adapter.stop()).toBe(0);
  });
});

/** Whether a process is stopped (SIGSTOP): the state letter in /proc/<pid>/stat. */
async function isStopped(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
}
