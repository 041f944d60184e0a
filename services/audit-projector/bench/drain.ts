// `npm run bench:projector`: how fast the audit projector drains a backlog. It starts local NATS and FerretDB
// (or uses NATS_URL and MONGODB_URL), publishes BENCH_CALLS realistic calls of five events each (received,
// sandbox leased, started, completed, sandbox released; a third of them in FlowRuns, over four tenants), then
// starts BENCH_REPLICAS projector replicas in this process and measures the time until every event is
// acknowledged, which the projector does only once the batch holding it was written. It then checks the counts
// in the database and prints, as its last line, one JSON object with the figure. A harness, not a test.
import { randomBytes } from 'node:crypto';
import { LifecycleEvent, eventMsgId, streams, subjectOfEvent } from '@toolplane/contracts';
import { connectMessaging, consumerProgress, ensureStream, publish, streamPosition } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { connectStore } from '@toolplane/store';
import { startInfra } from '@toolplane/testing';
import { auditChain, flowJournalCollection, runtimeToolCallsCollection } from '../src/collections.js';
import { auditProjectorService } from '../src/service.js';
import { callEvents } from '../test/events.js';

const env = process.env;
const calls = Number(env['BENCH_CALLS'] ?? 20_000);
const replicaCount = Number(env['BENCH_REPLICAS'] ?? 1);
const tenants = ['acme', 'globex', 'initech', 'umbrella'];
const log = (line: string) => process.stderr.write(`${line}\n`);

const infra = await startInfra(env);
const run = randomBytes(4).toString('hex');
const dbName = `bench_projector_${run}`;
const consumer = `bench_projector_${run}`;
const messaging = await connectMessaging({ url: infra.natsUrl, name: 'bench-projector' });
const store = await connectStore({ url: infra.mongoUrl, dbName, appName: 'bench-projector' });
const replicas: RunningService[] = [];
try {
  await ensureStream(messaging, streams.events);
  await ensureStream(messaging, streams.deadLetters);
  const startSequence = (await streamPosition(messaging, streams.events.name)).lastSequence;
  // The projector replays the stream from its first sequence: on servers that already hold events the figure
  // would not be this run's. Run without NATS_URL and MONGODB_URL to get fresh local servers.
  if (startSequence > 0) throw new Error(`the events stream already holds ${startSequence} events; run the benchmark on fresh servers (unset NATS_URL and MONGODB_URL)`);

  log(`building ${calls} calls of 5 events`);
  const events = Array.from({ length: calls }, (_, i) =>
    callEvents({
      tenant: tenants[i % tenants.length] as string,
      workspace: i % 2 === 0 ? 'dev' : 'prod',
      toolCallId: `bench-${run}-${i}`,
      agentId: `agent-${i % 17}`,
      ...(i % 3 === 0 ? { flowRunId: `run-${run}-${Math.floor(i / 30)}` } : {}),
      attempts: [{ outcome: 'Completed', sandbox: true }],
      startMs: Date.parse('2026-03-01T00:00:00.000Z') + i * 1000,
    }),
  ).flat();
  const journalEntries = events.filter((event) => event.metadata.flowRunId !== undefined && (event.type === 'ToolCallStarted' || event.type === 'ToolCallCompleted')).length;

  log(`publishing ${events.length} events`);
  const publishStarted = performance.now();
  const window = 2000;
  for (let i = 0; i < events.length; i += window) {
    await Promise.all(events.slice(i, i + window).map((event) => publish(messaging, { subject: subjectOfEvent(event), schema: LifecycleEvent, message: event, msgId: eventMsgId(event) })));
  }
  const lastSequence = (await streamPosition(messaging, streams.events.name)).lastSequence;
  log(`published in ${((performance.now() - publishStarted) / 1000).toFixed(1)} s (stream sequences ${startSequence + 1}..${lastSequence})`);

  const started = performance.now();
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
        INSTANCE_ID: `bench-${i}`,
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
      log(`${elapsed.toFixed(0)} s: acknowledged through ${progress.ackFloor - startSequence} of ${lastSequence - startSequence}`);
    }
    if (elapsed > Number(env['BENCH_TIMEOUT_S'] ?? 900)) throw new Error(`not drained after ${elapsed.toFixed(0)} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const seconds = (performance.now() - started) / 1000;

  const documents = await store.collection(runtimeToolCallsCollection(1)).raw.countDocuments({});
  const journal = await store.collection(flowJournalCollection(1)).raw.countDocuments({});
  const chained = await store.collection(auditChain).raw.countDocuments({});
  log(`drained in ${seconds.toFixed(1)} s: ${documents} calls (expected ${calls}), ${journal} journal entries (expected ${journalEntries}), ${chained} chain entries (expected ${events.length})`);
  if (documents !== calls || journal !== journalEntries || chained !== events.length) throw new Error('the projections do not hold what was published');
  process.stdout.write(`${JSON.stringify({ events: events.length, seconds: Number(seconds.toFixed(2)), eventsPerSec: Math.round(events.length / seconds), replicas: replicaCount, documents })}\n`);
} finally {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await messaging.manager.consumers.delete(streams.events.name, consumer).catch(() => false);
  await store.db.dropDatabase().catch(() => undefined);
  await store.close();
  await messaging.drain();
  await infra.stop();
}
