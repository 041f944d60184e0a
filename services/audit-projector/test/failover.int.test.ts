import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams, type RuntimeToolCallDocument } from '@toolplane/contracts';
import type { Messaging } from '@toolplane/messaging';
import type { Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { ChainVerifier, chainIdRange } from '../src/audit-chain.js';
import { callKey, emptyCallState, foldCallEvent, type CallEvent, type CallFoldState } from '../src/call-fold.js';
import { callDocument } from '../src/call-writer.js';
import { auditChain, flowJournalCollection, runtimeToolCallsCollection } from '../src/collections.js';
import { foldJournal, journalInOrder, type Journal } from '../src/journal-fold.js';
import { callEvents, shuffled } from './events.js';
import { connectClient, eventually, openStore, operatorKey, projectorScope, publishEvents } from './harness.js';

// Two projector replicas as real processes share the pinned consumer; the one the server pinned (the only one that
// receives and writes) is SIGKILLed in the middle of the stream, with batches written and unacknowledged, others
// held. The other is pinned once the pin timeout passes and writes the rest: every event ends up acknowledged, in
// the calls and journals exactly as the pure folds give them, and in the audit chain exactly once.

const scope = projectorScope(testScope('projector_failover'), 'failover');
const tenant = scope.tenant;
const serviceRoot = path.resolve(import.meta.dirname, '..');
let client: Messaging;
let store: Store;

interface Replica {
  readonly name: string;
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<unknown>;
}
const replicas: Replica[] = [];

/** Starts the service's composition root from source, as an operator runs it. */
function spawnReplica(name: string): Replica {
  const child = spawn(process.execPath, ['--conditions=@toolplane/source', '--import', 'tsx', path.join(serviceRoot, 'src/main.ts')], {
    cwd: serviceRoot,
    env: {
      PATH: process.env['PATH'] ?? '',
      NATS_URL: scope.natsUrl,
      MONGODB_URL: scope.mongoUrl,
      MONGODB_DATABASE: scope.dbName,
      HTTP_PORT: '0',
      LOG_LEVEL: 'info',
      INSTANCE_ID: name,
      AUDIT_PROJECTOR_CONSUMER: scope.consumer,
      AUDIT_PROJECTOR_TENANT: tenant,
      AUDIT_PROJECTOR_PIN_TIMEOUT_MS: '2000',
      // Small batches, so that the pinned replica is in the middle of its work when it is killed.
      AUDIT_PROJECTOR_BATCH_SIZE: '50',
      AUDIT_PROJECTOR_CONCURRENCY: '200',
      AUDIT_PROJECTOR_RETRY_DELAY_MS: '200',
      TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [tenant]: [operatorKey.publicJwk] }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return { name, child, output: () => output, exited };
}

const pinned = (replica: Replica) => replica.output().includes('this replica writes the projections now');

beforeAll(async () => {
  client = await connectClient(scope, 'client');
  store = await openStore(scope);
});

afterAll(async () => {
  for (const replica of replicas) {
    if (replica.child.exitCode === null && replica.child.signalCode === null) replica.child.kill('SIGTERM');
  }
  await Promise.all(replicas.map((replica) => replica.exited));
  await client?.drain();
  await store?.db.dropDatabase();
  await store?.close();
});

function makeCalls(count: number): CallEvent[] {
  return Array.from({ length: count }, (_, i) =>
    callEvents({
      tenant,
      workspace: 'dev',
      toolCallId: `kill-${i}`,
      ...(i % 3 === 0 ? { flowRunId: `kill-run-${i % 2}` } : {}),
      attempts: Array.from({ length: 1 + (i % 2) }, (_, a) => ({ outcome: a === 0 && i % 2 === 1 ? 'Uncertain' : 'Completed', approval: i % 5 === 0, sandbox: i % 2 === 0 })),
      startMs: Date.parse('2026-04-01T10:00:00.000Z') + i * 60_000,
    }),
  ).flat();
}

function canonical(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(sort) : v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => [k, sort(x)])) : v;
  return JSON.stringify(sort(value));
}

function expectedCalls(events: readonly CallEvent[]): Map<string, string> {
  const states = new Map<string, { event: CallEvent; state: CallFoldState }>();
  for (const event of events) states.set(callKey(event), { event, state: foldCallEvent(states.get(callKey(event))?.state ?? emptyCallState, event) });
  return new Map(
    [...states].map(([key, { event, state }]) => {
      const { version: _version, ...document } = callDocument(key, { tenant, workspace: event.metadata.workspace, toolCallId: event.metadata.toolCallId }, state, 1);
      return [key, canonical(document)];
    }),
  );
}

async function storedCalls(): Promise<Map<string, string>> {
  const documents = await store.collection(runtimeToolCallsCollection(1)).raw.find({ tenant }).toArray();
  return new Map(documents.map(({ version: _version, ...document }: RuntimeToolCallDocument) => [document._id, canonical(document)]));
}

describe('two projector processes, the pinned one SIGKILLed mid-stream', () => {
  it('leaves every acknowledged event in the read models exactly once', async () => {
    replicas.push(spawnReplica('replica-a'), spawnReplica('replica-b'));
    await eventually('both replicas to be ready', () => (replicas.every((replica) => replica.output().includes('audit-projector ready')) ? true : undefined), 60_000, 100);
    const events = makeCalls(300);
    await publishEvents(client, shuffled(events, 5));
    const victim = await eventually('one replica to be pinned', () => replicas.find(pinned), 30_000, 20);
    const survivor = replicas.find((replica) => replica !== victim) as Replica;
    await eventually('the pinned replica to have written some calls', async () => ((await storedCalls()).size > 0 ? true : undefined), 60_000, 20);
    // Only the pinned replica received anything: the other was never pinned.
    expect(pinned(survivor)).toBe(false);
    const info = await client.manager.consumers.info(streams.events.name, scope.consumer);
    expect(info.num_pending + info.num_ack_pending).toBeGreaterThan(0);
    victim.child.kill('SIGKILL');
    await victim.exited;
    const killedAt = Date.now();
    await eventually('the survivor to be pinned', () => (pinned(survivor) ? true : undefined), 30_000, 50);
    // The pin timeout is 2 s; the survivor's pulls wait up to 1 s each.
    expect(Date.now() - killedAt).toBeLessThan(10_000);

    await eventually(
      'every event to be acknowledged',
      async () => {
        const now = await client.manager.consumers.info(streams.events.name, scope.consumer);
        return now.num_pending === 0 && now.num_ack_pending === 0 ? true : undefined;
      },
      120_000,
      200,
    );
    const expected = expectedCalls(events);
    expect(await storedCalls()).toEqual(expected);
    const journal = journalInOrder(events.reduce<Journal>(foldJournal, new Map()));
    const storedJournal = await store.collection(flowJournalCollection(1)).raw.find({ tenant }).sort({ orderKey: 1, _id: 1 }).toArray();
    expect(storedJournal).toEqual(journal);
    const { from, to } = chainIdRange(tenant);
    const chain = await store.collection(auditChain).raw.find({ _id: { $gte: from, $lt: to } }, { sort: { _id: 1 } }).toArray();
    expect(chain.map((entry) => entry.eventId).sort()).toEqual(events.map((event) => event.metadata.eventId).sort());
    const verifier = new ChainVerifier(tenant);
    for (const entry of chain) verifier.push(entry);
    expect(verifier.finish()).toBeUndefined();
  }, 240_000);
});
