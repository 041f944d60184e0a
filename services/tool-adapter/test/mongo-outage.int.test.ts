// MongoDB (a FerretDB of this test's own) gone while the adapter process handles a call: no provider call happens
// without the started fact persisted, and once the database is back the call completes, exactly once.
import { readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { uniqueName } from '@toolplane/testing';
import { adapterFailpoints } from '../src/app/invocation-handler.js';
import { AdapterHarness, startFerretDb, startNatsServer, waitFor, type AdapterProcess, type FerretDb, type NatsServer } from './adapter-harness.js';

// Short leases and a short server selection timeout, so a write fails within seconds while the database is away.
const adapterEnv = { ADAPTER_PROCESSING_LEASE_MS: '3000', MONGODB_CONNECT_TIMEOUT_MS: '2000', LOG_LEVEL: 'warn' };

let nats: NatsServer;
let ferret: FerretDb;
let harness: AdapterHarness;

beforeEach(async () => {
  nats = await startNatsServer();
  ferret = await startFerretDb();
  harness = await AdapterHarness.start({ natsUrl: nats.url, mongoUrl: ferret.url, dbName: uniqueName('t_outage'), adapterEnv });
}, 60_000);

afterEach(async () => {
  await harness?.close();
  await ferret?.stop();
  await nats?.stop();
});

/** Whether a process is stopped (SIGSTOP): the state letter in /proc/<pid>/stat. */
async function isStopped(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
}

/** The adapter reported that it could not handle a message and will get it again (not that it gave up on it). */
function reportedRetry(adapter: AdapterProcess): boolean {
  const output = adapter.output();
  if (output.includes('"type":"dead_lettered"')) throw new Error(`the adapter dead-lettered the request: ${output.slice(-2000)}`);
  return output.includes('"type":"retry_scheduled"');
}

async function bindWrite(scope: Awaited<ReturnType<AdapterHarness['freshScope']>>): Promise<void> {
  await harness.bindTool(scope, 'fixture.write', 'count_calls', 'counting', { sideEffectClass: 'WRITE', riskClass: 'MEDIUM', idempotency: 'NONE', timeoutMs: 90_000 });
}

describe('MongoDB stopped during a call', () => {
  it.each([
    ['right before the started fact', adapterFailpoints.beforeStarted],
    ['right after the Received fact (before the policy is read)', adapterFailpoints.afterReceived],
  ])('%s: the provider is not called until the started fact is stored, then the call runs once', { timeout: 180_000 }, async (_label, point) => {
    const scope = await harness.freshScope();
    await bindWrite(scope);
    const adapter = await harness.startAdapter({ TOOLPLANE_FAILPOINTS: `${point}=stop` });
    const call = await harness.send(scope, { toolId: 'fixture.write', arguments: {}, idempotencyKey: 'outage' });
    // The adapter froze itself with every stage before execution passed; the database goes away under it.
    await waitFor('the adapter to stop at the failpoint', () => isStopped(adapter.pid));
    expect((await harness.stored(scope, 'outage'))?.state).toBe('Received');
    await ferret.kill();
    adapter.child.kill('SIGCONT');
    await waitFor('the adapter to give the message back', () => reportedRetry(adapter), 60_000);
    expect(await harness.executions(scope)).toBe(0);
    expect(adapter.running()).toBe(true);

    await ferret.restart();
    const reply = await call.reply(120_000);
    expect(reply.ok && reply.data.status).toBe('SUCCESS');
    expect(reply.ok && reply.data.receipt.attempt).toBe(1);
    expect(await harness.executions(scope)).toBe(1);
    const stored = await harness.stored(scope, 'outage');
    expect(stored?.state).toBe('Observed');
    expect(stored?.startedAt).toBeDefined();
    const types = (await harness.storedEvents(scope)).map((event) => event.type);
    expect(types.filter((type) => type === 'ToolCallStarted')).toHaveLength(1);
    expect(types.filter((type) => type === 'ToolCallCompleted')).toHaveLength(1);
    expect(await adapter.stop()).toBe(0);
  });

  it('while a call is queued: nothing is stored or run while the database is away, and the call runs once when it is back', { timeout: 180_000 }, async () => {
    const scope = await harness.freshScope();
    await bindWrite(scope);
    const adapter = await harness.startAdapter();
    await ferret.kill();
    const call = await harness.send(scope, { toolId: 'fixture.write', arguments: {}, idempotencyKey: 'queued' });
    await waitFor('the adapter to give the message back', () => reportedRetry(adapter), 60_000);
    expect(await harness.executions(scope)).toBe(0);

    await ferret.restart();
    const reply = await call.reply(120_000);
    expect(reply.ok && reply.data.status).toBe('SUCCESS');
    expect(await harness.executions(scope)).toBe(1);
    expect((await harness.stored(scope, 'queued'))?.state).toBe('Observed');
    expect(await adapter.stop()).toBe(0);
  });
});
