import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { LifecycleEvent, eventSubject, subjectOfEvent } from '@toolplane/contracts';
import type { Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import type { Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { auditChain, flowJournalCollection, runtimeToolCallsCollection } from '../src/collections.js';
import { callEvents } from './events.js';
import { connectClient, eventually, openStore, projectorScope, publishEvents, startProjector, watchDeadLetters } from './harness.js';

// Bad input: each message goes to the dead-letter subject with a reason, nothing of it reaches any projection,
// and the projector goes on with the next message.

const scope = projectorScope(testScope('bad_input'), 'bad');
const tenant = scope.tenant;
let client: Messaging;
let store: Store;
let projector: RunningService;
let deadLetters: Awaited<ReturnType<typeof watchDeadLetters>>;

beforeAll(async () => {
  client = await connectClient(scope, 'client');
  store = await openStore(scope);
  deadLetters = await watchDeadLetters(client, scope.consumer);
  // A small bound of its own, so that an event within the contract can still be too big for the projector.
  projector = await startProjector(scope, { AUDIT_PROJECTOR_MAX_EVENT_BYTES: '4096' });
});

afterAll(async () => {
  await projector?.stop();
  await deadLetters?.stop();
  await client?.drain();
  await store?.db.dropDatabase();
  await store?.close();
});

/** Publishes raw bytes on a subject, as a broken or hostile publisher would (the kit's publish would refuse them). */
async function publishRaw(subject: string, payload: string | Uint8Array): Promise<number> {
  const ack = await client.jetstream.publish(subject, payload, { msgID: randomUUID() });
  return ack.seq;
}

describe('bad input', () => {
  it('dead-letters each bad event with its reason, changes nothing, and goes on', async () => {
    const [received, , started] = callEvents({ tenant, workspace: 'dev', toolCallId: 'victim-call', attempts: [{ outcome: 'Completed', approval: true }] });
    if (received === undefined || started === undefined) throw new Error('no events');
    const approval = callEvents({ tenant, workspace: 'dev', toolCallId: 'big-call', attempts: [{ outcome: 'InFlight', approval: true }] }).find((event) => event.type === 'ApprovalRequested');
    if (approval?.type !== 'ApprovalRequested') throw new Error('no approval event');
    const subject = subjectOfEvent(started);
    const { eventId: _missing, ...withoutEventId } = started.metadata;

    const expected: { sequence: number; reason: RegExp }[] = [];
    // A missing field.
    expected.push({ sequence: await publishRaw(subject, JSON.stringify({ ...started, metadata: withoutEventId })), reason: /metadata\.eventId/ });
    // A malformed field.
    expected.push({ sequence: await publishRaw(subject, JSON.stringify({ ...started, metadata: { ...started.metadata, occurredAt: 'yesterday' } })), reason: /metadata\.occurredAt/ });
    // An unknown event type.
    expected.push({ sequence: await publishRaw(subject, JSON.stringify({ ...started, type: 'ToolCallExploded' })), reason: /type/ });
    // Not JSON at all.
    expected.push({ sequence: await publishRaw(subject, '{"type":'), reason: /not UTF-8 JSON/ });
    // An event of another tenant, published on this tenant's subject.
    const foreign = LifecycleEvent.parse({ ...received, metadata: { ...received.metadata, tenant: 'someone-else' } });
    expected.push({ sequence: await publishRaw(eventSubject({ tenant, workspace: 'dev' }, foreign.type), JSON.stringify(foreign)), reason: /names someone-else\/dev but it was published on a subject of/ });
    // An event of this tenant on another workspace's subject.
    expected.push({ sequence: await publishRaw(eventSubject({ tenant, workspace: 'prod' }, received.type), JSON.stringify(received)), reason: new RegExp(`names ${tenant}/dev but it was published on a subject of ${tenant}/prod`) });
    // Within the contract but beyond the projector's own bound (4096 bytes here).
    const big = LifecycleEvent.parse({
      ...approval,
      data: { ...approval.data, summary: 'x'.repeat(2000), approvers: { roles: [], principals: Array.from({ length: 64 }, (_, i) => `user:approver-with-a-long-name-${i}@example.com`) } },
    });
    expect(Buffer.byteLength(JSON.stringify(big))).toBeGreaterThan(4096);
    expected.push({ sequence: await publishRaw(subjectOfEvent(big), JSON.stringify(big)), reason: /may not exceed 4096 bytes/ });
    // About 1 MB: the largest message the stream takes, far beyond any event.
    const huge = JSON.stringify({ ...started, data: { ...started.data, padding: 'p'.repeat(1_000_000) } });
    expected.push({ sequence: await publishRaw(subject, huge), reason: /data/ });

    // Then a good call: once it is projected, every bad message before it has been handled.
    const good = callEvents({ tenant, workspace: 'dev', toolCallId: 'good-call', flowRunId: 'good-run', attempts: [{ outcome: 'Completed' }] });
    await publishEvents(client, good);
    const calls = store.collection(runtimeToolCallsCollection(1));
    await eventually('the good call to be projected', async () => ((await calls.raw.findOne({ _id: `${tenant}/dev/good-call` }))?.state === 'Observed' ? true : undefined));
    await eventually('every bad message to be dead-lettered', () => (deadLetters.letters.length >= expected.length ? true : undefined));

    const letters = [...deadLetters.letters].sort((a, b) => a.streamSequence - b.streamSequence);
    expect(letters.map((letter) => letter.streamSequence)).toEqual(expected.map((entry) => entry.sequence));
    letters.forEach((letter, i) => {
      expect(letter.reason.code, letter.reason.message).toBe('INVALID_ARGUMENT');
      expect(letter.reason.message).toMatch((expected[i] as (typeof expected)[number]).reason);
      expect(letter.consumer).toBe(scope.consumer);
    });
    // The 1 MB message is kept as far as a dead letter can hold it, and says how long it was.
    expect(letters.at(-1)?.reason.details?.['payloadTruncatedFromBytes']).toBe(Buffer.byteLength(huge));

    // Nothing of the bad messages reached any projection: only the good call is there.
    expect((await calls.raw.find({}).toArray()).map((call) => call.toolCallId)).toEqual(['good-call']);
    // The chain is written after the calls in the same batch (src/projector.ts writeBatch): a projected call does
    // not mean its events are chained yet, so wait for the chain itself.
    const chained = await eventually('the good call to be chained', async () => {
      const ids = (await store.collection(auditChain).raw.find({}).toArray()).map((entry) => entry.eventId);
      return ids.length >= good.length ? ids : undefined;
    });
    expect(chained.sort()).toEqual(good.map((event) => event.metadata.eventId).sort());
    expect((await store.collection(flowJournalCollection(1)).raw.find({}).toArray()).map((entry) => entry.toolCallId)).toEqual(['good-call', 'good-call']);
  }, 120_000);
});
