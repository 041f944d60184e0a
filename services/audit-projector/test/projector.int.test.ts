import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_ADMIN_ROLE, hasErrorCode, streams, type RuntimeToolCallDocument } from '@toolplane/contracts';
import { generateSigningKeyPair, issueToken } from '@toolplane/auth';
import type { Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import type { Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { callKey, emptyCallState, foldCallEvent, type CallEvent, type CallFoldState } from '../src/call-fold.js';
import { callDocument } from '../src/call-writer.js';
import { auditChain, flowJournalCollection, runtimeToolCallsCollection } from '../src/collections.js';
import { foldJournal, journalInOrder, type Journal } from '../src/journal-fold.js';
import { callEvents, shuffled, type AttemptOutcome } from './events.js';
import { call, codeOf, connectClient, eventually, openStore, operatorKey, operatorToken, projectorScope, publishEvents, startProjector } from './harness.js';

// Two projector replicas share one durable consumer over real NATS and FerretDB. The test publishes events out
// of order and again under new message ids (so JetStream does not drop them), stops a replica in the middle of
// its batches, and checks that the stored documents are exactly what the pure folds give for the events.

const scope = projectorScope(testScope('projector'), 'proj');
const tenant = scope.tenant;
let client: Messaging;
let store: Store;
const replicas: RunningService[] = [];

beforeAll(async () => {
  client = await connectClient(scope, 'client');
  store = await openStore(scope);
});

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await client?.drain();
  await store?.db.dropDatabase();
  await store?.close();
});

const outcomes: AttemptOutcome[] = ['Completed', 'Failed', 'Cancelled', 'Uncertain', 'Denied', 'InFlight'];

/** Calls of every shape: one to three attempts, approvals, sandboxes, every third in a FlowRun. */
function makeCalls(label: string, count: number): CallEvent[] {
  return Array.from({ length: count }, (_, i) =>
    callEvents({
      tenant,
      workspace: i % 4 === 0 ? 'ops' : 'dev',
      toolCallId: `${label}-${i}`,
      ...(i % 3 === 0 ? { flowRunId: `${label}-run-${i % 2}` } : {}),
      agentId: `agent-${i % 3}`,
      attempts: Array.from({ length: 1 + (i % 3) }, (_, a) => ({ outcome: outcomes[(i + a) % outcomes.length] as AttemptOutcome, approval: i % 5 === 0, sandbox: i % 2 === 0 })),
      startMs: Date.parse('2026-03-01T10:00:00.000Z') + i * 60_000,
    }),
  ).flat();
}

/** The documents the pure folds give for the events: what the store must hold, version aside. */
function expectedCalls(events: readonly CallEvent[]): Map<string, Omit<RuntimeToolCallDocument, 'version'>> {
  const states = new Map<string, { event: CallEvent; state: CallFoldState }>();
  for (const event of events) {
    const known = states.get(callKey(event));
    states.set(callKey(event), { event, state: foldCallEvent(known?.state ?? emptyCallState, event) });
  }
  const out = new Map<string, Omit<RuntimeToolCallDocument, 'version'>>();
  for (const [key, { event, state }] of states) {
    const { version: _version, ...document } = callDocument(key, { tenant, workspace: event.metadata.workspace, toolCallId: event.metadata.toolCallId }, state, 1);
    out.set(key, document);
  }
  return out;
}

async function storedCalls(prefix: string, generation = 1): Promise<Map<string, Omit<RuntimeToolCallDocument, 'version'>>> {
  const documents = await store.collection(runtimeToolCallsCollection(generation)).raw.find({ tenant }).toArray();
  return new Map(documents.filter((document) => document.toolCallId.startsWith(`${prefix}-`)).map(({ version: _version, ...document }) => [document._id, document]));
}

async function expectProjected(prefix: string, events: readonly CallEvent[], generation = 1): Promise<void> {
  const expected = expectedCalls(events);
  // On a timeout the comparison below shows what differs.
  await eventually(`the ${expected.size} ${prefix} calls to be projected`, async () => {
    const stored = await storedCalls(prefix, generation);
    return stored.size === expected.size && [...expected].every(([key, document]) => JSON.stringify(sortDeep(stored.get(key))) === JSON.stringify(sortDeep(document))) ? true : undefined;
  }).catch(() => undefined);
  expect(await storedCalls(prefix, generation)).toEqual(expected);
  const journal = journalInOrder(events.reduce<Journal>(foldJournal, new Map()));
  const storedJournal = await store
    .collection(flowJournalCollection(generation))
    .raw.find({ tenant, toolCallId: { $regex: `^${prefix}-` } })
    .sort({ orderKey: 1, _id: 1 })
    .toArray();
  expect(storedJournal).toEqual(journal);
}

function sortDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortDeep);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, field]) => [key, sortDeep(field)]));
}

async function chainedEventIds(): Promise<string[]> {
  const entries = await store.collection(auditChain).raw.find({ tenant }).toArray();
  return entries.map((entry) => entry.eventId);
}

describe('the audit projector over NATS and FerretDB', () => {
  it('folds a reordered, duplicated stream shared by two replicas into exactly the expected documents, journals and chain', async () => {
    replicas.push(await startProjector(scope), await startProjector(scope));
    const events = makeCalls('mix', 40);
    // Everything out of order; then a third of it again, reversed, under new message ids; then attempt-2 events first.
    await publishEvents(client, shuffled(events, 7));
    await publishEvents(client, shuffled(events, 11).slice(0, Math.floor(events.length / 3)).reverse(), 'again');
    await publishEvents(client, events.filter((event) => event.metadata.attempt === 2), 'attempt-2');
    await expectProjected('mix', events);
    const chained = await eventually('every event to be chained once', async () => {
      const ids = await chainedEventIds();
      return ids.length >= events.length ? ids : undefined;
    });
    expect(chained.sort()).toEqual(events.map((event) => event.metadata.eventId).sort());
    const verified = await call(client, { tenant, workspace: 'dev' }, 'verifyChain', {});
    expect(verified).toMatchObject({ tenant, ok: true, entries: events.length, verifiedThrough: events.length });
  }, 180_000);

  it('loses and duplicates nothing when a replica is stopped in the middle of its batches', async () => {
    // One replica with small batches, so that it is writing one batch with more waiting when it is stopped.
    for (const replica of replicas.splice(0)) await replica.stop();
    const first = await startProjector(scope, { AUDIT_PROJECTOR_BATCH_SIZE: '100', AUDIT_PROJECTOR_CONCURRENCY: '400' });
    replicas.push(first);
    const events = makeCalls('stop', 300);
    const before = (await chainedEventIds()).length;
    await publishEvents(client, shuffled(events, 3));
    await eventually('the first replica to have written some calls', async () => ((await storedCalls('stop')).size > 0 ? true : undefined), 60_000, 20);
    await first.stop();
    replicas.splice(replicas.indexOf(first), 1);
    expect((await storedCalls('stop')).size).toBeLessThan(300);
    replicas.push(await startProjector(scope));
    await expectProjected('stop', events);
    const chained = await eventually('every event to be chained once', async () => {
      const ids = await chainedEventIds();
      return ids.length >= before + events.length ? ids : undefined;
    });
    expect(new Set(chained).size).toBe(chained.length);
    expect(chained.length).toBe(before + events.length);
    expect((await call(client, { tenant, workspace: 'dev' }, 'verifyChain', {})).ok).toBe(true);
  }, 180_000);

  it('rebuilds the projections from the first sequence into a new generation without losing events published meanwhile', async () => {
    const before = makeCalls('rbold', 30);
    await publishEvents(client, before);
    await expectProjected('rbold', before);
    const chainBefore = (await chainedEventIds()).length;
    const started = await call(client, { tenant, workspace: 'dev' }, 'rebuildProjections', {});
    expect(started).toMatchObject({ live: 1, rebuild: { generation: 2, state: 'Running' } });
    expect(await codeOf(call(client, { tenant, workspace: 'dev' }, 'rebuildProjections', {}))).toBe('CONFLICT');
    // Published while the rebuild replays: they must end up in the new generation too.
    const during = makeCalls('rbduring', 30);
    await publishEvents(client, during);
    const status = await eventually(
      'the rebuild to complete',
      async () => {
        const current = await call(client, { tenant, workspace: 'dev' }, 'projectionStatus', {});
        return current.rebuild?.state === 'Completed' || current.rebuild?.state === 'Failed' ? current : undefined;
      },
      120_000,
      200,
    );
    expect(status).toMatchObject({ live: 2, previous: 1, rebuild: { generation: 2, state: 'Completed' } });
    const after = makeCalls('rbafter', 10);
    await publishEvents(client, after);
    await expectProjected('rbold', before, 2);
    await expectProjected('rbduring', during, 2);
    await expectProjected('rbafter', after, 2);
    // Everything projected before the rebuild is in the new generation as well.
    expect((await storedCalls('mix', 2)).size).toBe((await storedCalls('mix', 1)).size);
    // The chain is never rebuilt: each event stays chained once.
    const chained = await eventually('the new events to be chained', async () => {
      const ids = await chainedEventIds();
      return ids.length >= chainBefore + during.length + after.length ? ids : undefined;
    });
    expect(new Set(chained).size).toBe(chained.length);
    // The rebuild's consumer is gone once it completed.
    const consumers: string[] = [];
    for await (const info of client.manager.consumers.list(streams.events.name)) consumers.push(info.name);
    expect(consumers.filter((name) => name.startsWith(`${scope.consumer}-rebuild`))).toEqual([]);
  }, 240_000);

  it('answers only operators of the scope: no, forged or other-workspace tokens are AUTHENTICATION_FAILED; a rebuild needs platform-admin', async () => {
    const dev = { tenant, workspace: 'dev' };
    const refusal = async (work: Promise<unknown>): Promise<string> => {
      try {
        await work;
      } catch (error) {
        if (hasErrorCode(error)) return `${error.code}: ${error.message}`;
        throw error;
      }
      return 'OK';
    };
    const someCall = (await storedCalls('mix', 2)).keys().next().value ?? 'none';
    for (const [operation, body] of [
      ['getCall', { toolCallId: someCall }],
      ['listCalls', {}],
      ['flowJournal', { flowRunId: 'run-1' }],
      ['verifyChain', {}],
      ['projectionStatus', {}],
      ['rebuildProjections', {}],
    ] as const) {
      expect(await refusal(call(client, dev, operation, body as never, 30_000, null))).toBe('AUTHENTICATION_FAILED: no operator token: send one as "Authorization: Bearer <token>"');
    }
    const forger = await generateSigningKeyPair(operatorKey.kid);
    const forged = await issueToken({ kind: 'human', tenant, workspaces: ['dev'], principal: 'user:mallory@example.com', roles: [PLATFORM_ADMIN_ROLE] }, forger.privateKey, { kid: forger.kid, expiresIn: '5m' });
    expect(await refusal(call(client, dev, 'listCalls', {}, 30_000, forged))).toBe('AUTHENTICATION_FAILED: token refused: the signature does not verify');
    expect(await refusal(call(client, dev, 'verifyChain', {}, 30_000, await operatorToken(tenant, ['prod'])))).toBe('AUTHENTICATION_FAILED: token refused: it does not cover workspace dev');

    // Any operator of the scope reads; only platform-admin rebuilds, and a refused rebuild starts nothing.
    const reader = await operatorToken(tenant, ['dev'], ['auditor']);
    const status = await call(client, dev, 'projectionStatus', {}, 30_000, reader);
    expect((await call(client, dev, 'verifyChain', {}, 30_000, reader)).ok).toBe(true);
    expect(await refusal(call(client, dev, 'rebuildProjections', {}, 30_000, reader))).toBe(`AUTHORIZATION_DENIED: operator user:auditor@example.com lacks the role ${PLATFORM_ADMIN_ROLE} this operation needs`);
    expect(await call(client, dev, 'projectionStatus', {}, 30_000, reader)).toEqual(status);
  }, 60_000);
});
