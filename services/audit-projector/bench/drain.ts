// `npm run bench:projector`: how fast the audit projector drains a backlog, on empty read models and (with
// BENCH_PRELOAD=N) again once the stream and the read models already hold the history of N calls. It starts
// local NATS and FerretDB (or uses NATS_URL and MONGODB_URL), publishes BENCH_CALLS realistic calls of five
// events each (received, sandbox leased, started, completed, sandbox released; a third of them in FlowRuns, over
// four tenants), then starts BENCH_REPLICAS projector replicas in this process and measures the time until every
// event is acknowledged, which the projector does only once the batch holding it was written. It checks the
// counts in the database and prints, as its last line, one JSON object with both figures. A harness, not a test.
//
// The preload is not folded through the projector (that would take as long as the history took to arrive): its
// events are published to the stream (pipelined), and the documents the projector would have written for them
// (the same pure folds: planBatch, callDocument, chainEntries) are inserted directly, the chain continuing from the
// heads the first drain recorded. The second drain's consumer starts after the preload (deliver policy `new`).
import { randomBytes } from 'node:crypto';
import { LifecycleEvent, eventMsgId, streams, subjectOfEvent } from '@toolplane/contracts';
import { connectMessaging, consumerProgress, ensureConsumer, ensureStream, publish, streamPosition, type Messaging } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { connectStore, findByIds, type Store } from '@toolplane/store';
import { startInfra } from '@toolplane/testing';
import { chainEntries, emptyHead, type ChainHead } from '../src/audit-chain.js';
import type { CallEvent } from '../src/call-fold.js';
import { callDocument } from '../src/call-writer.js';
import { auditChain, auditChainHeads, flowJournalCollection, runtimeToolCallsCollection } from '../src/collections.js';
import { acceptEvent } from '../src/event-checks.js';
import { planBatch } from '../src/projector.js';
import { auditProjectorService, projectorConsumerSpec } from '../src/service.js';
import { callEvents } from '../test/events.js';

const env = process.env;
const calls = Number(env['BENCH_CALLS'] ?? 20_000);
const preload = Number(env['BENCH_PRELOAD'] ?? 0);
const replicaCount = Number(env['BENCH_REPLICAS'] ?? 1);
const tenants = ['acme', 'globex', 'initech', 'umbrella'];
const sampleSize = Number(env['BENCH_SAMPLE'] ?? 100);
const log = (line: string) => process.stderr.write(`${line}\n`);

const infra = await startInfra(env);
const run = randomBytes(4).toString('hex');
const dbName = `bench_projector_${run}`;
const messaging = await connectMessaging({ url: infra.natsUrl, name: 'bench-projector' });
const store = await connectStore({ url: infra.mongoUrl, dbName, appName: 'bench-projector' });

let callNumber = 0;
/** The events of the next `count` calls, as the tool adapter emits them. */
function nextCalls(count: number, label: string): CallEvent[] {
  return Array.from({ length: count }, () => {
    const i = callNumber;
    callNumber += 1;
    return callEvents({
      tenant: tenants[i % tenants.length] as string,
      workspace: i % 2 === 0 ? 'dev' : 'prod',
      toolCallId: `bench-${run}-${label}-${i}`,
      agentId: `agent-${i % 17}`,
      ...(i % 3 === 0 ? { flowRunId: `run-${run}-${Math.floor(i / 30)}` } : {}),
      attempts: [{ outcome: 'Completed', sandbox: true }],
      startMs: Date.parse('2026-03-01T00:00:00.000Z') + i * 1000,
    });
  }).flat();
}

async function publishAll(m: Messaging, events: readonly LifecycleEvent[]): Promise<void> {
  const window = 4000;
  for (let i = 0; i < events.length; i += window) {
    await Promise.all(events.slice(i, i + window).map((event) => publish(m, { subject: subjectOfEvent(event), schema: LifecycleEvent, message: event, msgId: eventMsgId(event) })));
  }
}

/** Each tenant's recorded chain head position (0 for none). */
async function chainPositions(s: Store): Promise<number> {
  const heads = await findByIds(s.collection(auditChainHeads), tenants);
  return heads.reduce((sum, head) => sum + (head?.position ?? 0), 0);
}

/**
 * How many of a sample of these ids are stored, read by `_id`. Counting a whole collection on FerretDB 1.x reads
 * every document (minutes at 100 000 calls), and so do some of its `_id` lookups; the acknowledgements already say
 * every event was written, so the check samples.
 */
async function present(s: Store, name: 'calls' | 'journal', ids: readonly string[]): Promise<number> {
  const found = name === 'calls' ? await findByIds(s.collection(runtimeToolCallsCollection(1)), ids, { concurrency: 16 }) : await findByIds(s.collection(flowJournalCollection(1)), ids, { concurrency: 16 });
  return found.filter((document) => document !== null).length;
}

interface DrainFigure {
  readonly events: number;
  readonly seconds: number;
  readonly eventsPerSec: number;
  /** Calls stored before the drain started. */
  readonly storedCalls: number;
}

let storedCalls = 0;

/** Publishes a fresh backlog, starts the replicas on a consumer that begins with it, and times the drain. */
async function drain(label: string): Promise<DrainFigure> {
  const consumer = `bench_projector_${run}_${label}`;
  const chainBefore = await chainPositions(store);
  log(`[${label}] building ${calls} calls of 5 events`);
  const events = nextCalls(calls, label);
  const plan = planBatch(events.map((event) => acceptEvent(event, subjectOfEvent(event))));
  const callIds = plan.calls.map((delta) => delta.key);
  const journalIds = plan.journal.map((entry) => entry._id);
  // The consumer starts with this backlog, whatever the stream held before.
  await ensureConsumer(messaging, streams.events.name, projectorConsumerSpec(consumer, { deliverPolicy: 'new' }));
  log(`[${label}] publishing ${events.length} events`);
  const publishStarted = performance.now();
  await publishAll(messaging, events);
  const lastSequence = (await streamPosition(messaging, streams.events.name)).lastSequence;
  log(`[${label}] published in ${((performance.now() - publishStarted) / 1000).toFixed(1)} s (stream sequences ..${lastSequence})`);

  const replicas: RunningService[] = [];
  const started = performance.now();
  try {
    for (let i = 0; i < replicaCount; i += 1) {
      replicas.push(
        await startService(auditProjectorService, {
          ...env,
          NATS_URL: infra.natsUrl,
          MONGODB_URL: infra.mongoUrl,
          MONGODB_DATABASE: dbName,
          HTTP_PORT: '0',
          LOG_LEVEL: env['BENCH_LOG_LEVEL'] ?? 'warn',
          AUDIT_PROJECTOR_CONSUMER: consumer,
          AUDIT_PROJECTOR_DELIVER_POLICY: 'new',
          INSTANCE_ID: `bench-${label}-${i}`,
        }),
      );
    }
    let lastReport = 0;
    for (;;) {
      const progress = await consumerProgress(messaging, streams.events.name, consumer);
      if (progress.ackFloor >= lastSequence && progress.ackPending === 0) break;
      const elapsed = (performance.now() - started) / 1000;
      if (elapsed - lastReport >= 5) {
        lastReport = elapsed;
        log(`[${label}] ${elapsed.toFixed(0)} s: acknowledged through ${progress.ackFloor} of ${lastSequence}`);
      }
      if (elapsed > Number(env['BENCH_TIMEOUT_S'] ?? 900)) throw new Error(`not drained after ${elapsed.toFixed(0)} s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await Promise.all(replicas.map((replica) => replica.stop()));
  }
  const seconds = (performance.now() - started) / 1000;
  await messaging.manager.consumers.delete(streams.events.name, consumer).catch(() => false);
  // Every call and journal entry of the backlog read back by id, and the chains grown by one entry per event.
  const sample = (ids: readonly string[]) => ids.filter((_, i) => i % Math.max(1, Math.floor(ids.length / sampleSize)) === 0);
  const [callSample, journalSample] = [sample(callIds), sample(journalIds)];
  const grew = { calls: await present(store, 'calls', callSample), journal: await present(store, 'journal', journalSample), chain: (await chainPositions(store)) - chainBefore };
  log(`[${label}] drained in ${seconds.toFixed(1)} s: ${grew.calls} of ${callSample.length} sampled calls, ${grew.journal} of ${journalSample.length} sampled journal entries, ${grew.chain} chain entries (expected ${events.length})`);
  if (grew.calls !== callSample.length || grew.journal !== journalSample.length || grew.chain !== events.length) throw new Error('the projections do not hold what was published');
  const figure = { events: events.length, seconds: Number(seconds.toFixed(2)), eventsPerSec: Math.round(events.length / seconds), storedCalls };
  storedCalls += calls;
  return figure;
}

/** Publishes the history of `count` calls and inserts what the projector would have made of it. */
async function preloadHistory(count: number): Promise<{ calls: number; events: number; seconds: number }> {
  const started = performance.now();
  const heads = new Map<string, ChainHead>();
  const recorded = await findByIds(store.collection(auditChainHeads), tenants);
  tenants.forEach((tenant, i) => heads.set(tenant, recorded[i] ? { position: (recorded[i] as { position: number }).position, hash: (recorded[i] as { hash: string }).hash } : emptyHead));
  const chunk = 10_000;
  let published = 0;
  for (let done = 0; done < count; done += chunk) {
    const events = nextCalls(Math.min(chunk, count - done), 'preload');
    await publishAll(messaging, events);
    published += events.length;
    const plan = planBatch(events.map((event) => acceptEvent(event, subjectOfEvent(event))));
    const appendedAt = new Date().toISOString();
    const chain = [...plan.chain].flatMap(([tenant, items]) => {
      const entries = chainEntries(tenant, heads.get(tenant) ?? emptyHead, items, appendedAt);
      const last = entries.at(-1);
      if (last) heads.set(tenant, { position: last.position, hash: last.hash });
      return entries;
    });
    const documents = plan.calls.map((delta) => callDocument(delta.key, delta.scope, delta.delta, 1));
    const insert = async <T extends object>(name: string, docs: readonly T[]) => {
      const raw = store.db.collection(name);
      for (let i = 0; i < docs.length; i += 1000) await raw.insertMany(docs.slice(i, i + 1000).map((doc) => ({ ...doc })), { ordered: false });
    };
    await insert(runtimeToolCallsCollection(1).name, documents);
    await insert(flowJournalCollection(1).name, plan.journal);
    await insert(auditChain.name, chain);
    log(`[preload] ${done + documents.length} of ${count} calls (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }
  const now = new Date().toISOString();
  for (const [tenant, head] of heads) await store.collection(auditChainHeads).raw.replaceOne({ _id: tenant }, { position: head.position, hash: head.hash, updatedAt: now }, { upsert: true });
  storedCalls += count;
  return { calls: count, events: published, seconds: Number(((performance.now() - started) / 1000).toFixed(1)) };
}

try {
  await ensureStream(messaging, streams.events);
  await ensureStream(messaging, streams.deadLetters);
  const startSequence = (await streamPosition(messaging, streams.events.name)).lastSequence;
  // The figures are this run's only on servers of its own. Run without NATS_URL and MONGODB_URL to get fresh ones.
  if (startSequence > 0) throw new Error(`the events stream already holds ${startSequence} events; run the benchmark on fresh servers (unset NATS_URL and MONGODB_URL)`);
  const fresh = await drain('fresh');
  let loaded: { preload: Awaited<ReturnType<typeof preloadHistory>>; drain: DrainFigure } | undefined;
  if (preload > 0) {
    const history = await preloadHistory(preload);
    loaded = { preload: history, drain: await drain('preloaded') };
  }
  const perEventMs = (figure: DrainFigure) => Number(((figure.seconds * 1000) / figure.events).toFixed(3));
  process.stdout.write(
    `${JSON.stringify({
      events: fresh.events,
      seconds: fresh.seconds,
      eventsPerSec: fresh.eventsPerSec,
      replicas: replicaCount,
      documents: calls,
      msPerEvent: perEventMs(fresh),
      ...(loaded
        ? {
            preloadCalls: loaded.preload.calls,
            preloadEvents: loaded.preload.events,
            preloadSeconds: loaded.preload.seconds,
            preloadedStoredCalls: loaded.drain.storedCalls,
            preloadedSeconds: loaded.drain.seconds,
            preloadedEventsPerSec: loaded.drain.eventsPerSec,
            preloadedMsPerEvent: perEventMs(loaded.drain),
          }
        : {}),
    })}\n`,
  );
} finally {
  await store.db.dropDatabase().catch(() => undefined);
  await store.close();
  await messaging.drain();
  await infra.stop();
}
