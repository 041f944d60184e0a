import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { MAX_EVENT_BYTES, TenantId, TrustedKeysSetting, eventFilter, streams } from '@toolplane/contracts';
import { createTokenVerifier } from '@toolplane/auth';
import { ensureConsumer, minPinTimeoutMs, type ConsumerSpec, type ServeDiagnostic } from '@toolplane/messaging';
import { baseServiceConfig, logConsumerDiagnostic, millisecondsSetting, serviceMetrics, type ServiceDefinition } from '@toolplane/service-kit';
import { serveAuditApi } from './api.js';
import { CallWriter } from './call-writer.js';
import { ChainWriter } from './chain-writer.js';
import { collectionsFor } from './collections.js';
import { openGenerations } from './generations.js';
import { startProjectionConsumer } from './projection-consumer.js';
import { projectorMetrics } from './projector-metrics.js';
import { RebuildManager } from './rebuild.js';

const count = (fallback: number, max: number) => z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(1, 'must be at least 1').max(max, `must be at most ${max}`).default(fallback);

const defaultConcurrency = 4000;
const defaultPinTimeoutMs = 10_000;

/** The audit-projector service's settings. */
export const auditProjectorConfig = baseServiceConfig({ httpPort: 7105 }).extend({
  /** Per tenant, the public keys operator tokens are verified with: `{"<tenant>": [<public JWK with kid>, …]}`; unset refuses every query. */
  TOOLPLANE_TRUSTED_KEYS: TrustedKeysSetting.optional(),
  /** Events written per batch: a call costs one write per batch, whatever its number of events. */
  AUDIT_PROJECTOR_BATCH_SIZE: count(2000, 10_000),
  /** How long the first event of a batch waits for more before the batch is written. */
  AUDIT_PROJECTOR_LINGER_MS: millisecondsSetting(20),
  /** How long a call that has not settled waits for the rest of its events, so that it is written once. */
  AUDIT_PROJECTOR_HOLD_MS: millisecondsSetting(1000),
  /** Events in flight per replica; twice a batch lets the next batch fill while one is written. */
  AUDIT_PROJECTOR_CONCURRENCY: count(defaultConcurrency, 20_000),
  /** Deliveries of an event that keeps failing to be written before it is dead-lettered. */
  AUDIT_PROJECTOR_MAX_DELIVER: count(5, 100),
  /** The first redelivery delay after a failed write (later ones grow from it). */
  AUDIT_PROJECTOR_RETRY_DELAY_MS: millisecondsSetting(1000),
  /** The projector's own bound on an event (canonical JSON bytes); bigger events are dead-lettered. */
  AUDIT_PROJECTOR_MAX_EVENT_BYTES: count(MAX_EVENT_BYTES, 1_048_576),
  /** How long stopping lets batches being formed finish before their messages go back for redelivery. */
  AUDIT_PROJECTOR_STOP_GRACE_MS: millisecondsSetting(5000),
  /**
   * How long the replica that writes the projections may go without pulling before another replica takes over (the
   * consumer's pin timeout, and its ack wait): the pause in projection after a replica dies, and the longest stall a
   * live replica can have without another one writing beside it. A replica that stops cleanly hands over at once.
   */
  AUDIT_PROJECTOR_PIN_TIMEOUT_MS: millisecondsSetting(defaultPinTimeoutMs).pipe(z.number().min(minPinTimeoutMs, `must be at least ${minPinTimeoutMs}`)),
  /** The durable consumer the replicas share; another name runs a separate projector (a shard, a test). */
  AUDIT_PROJECTOR_CONSUMER: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be 1-100 letters, digits, _ or -')
    .default('audit-projector'),
  /** Only this tenant's events (a shard of the projector); all tenants when unset. */
  AUDIT_PROJECTOR_TENANT: TenantId.optional(),
  /**
   * Where a consumer that does not exist yet starts: `all` (the stream's first event) or `new` (events stored from
   * now on: read models filled some other way, such as the benchmark's preload). An existing consumer keeps its own.
   */
  AUDIT_PROJECTOR_DELIVER_POLICY: z.enum(['all', 'new']).default('all'),
  /** How often a rebuild checks its progress and writes its heartbeat. */
  AUDIT_REBUILD_POLL_MS: millisecondsSetting(500),
  /** A rebuild without a heartbeat for this long is taken to be dead and may be started again. */
  AUDIT_REBUILD_STALE_MS: millisecondsSetting(60_000),
});
export type AuditProjectorConfig = z.infer<typeof auditProjectorConfig>;

/** The durable consumer every replica of the live projector shares, unless configured otherwise. */
export const PROJECTOR_CONSUMER = 'audit-projector';

/** The priority group every replica pulls the projector's consumers with; the server delivers to one of them. */
export const WRITER_GROUP = 'writer';

/** How a projector's consumer is declared, beyond its name. */
export interface ProjectorConsumerOptions {
  /** Only this tenant's events; all when absent. */
  readonly tenant?: string;
  readonly deliverPolicy?: 'all' | 'new';
  /** The pin timeout (default the setting's default). */
  readonly pinTimeoutMs?: number;
  /** Messages the one active replica holds unacknowledged at once: its concurrency (default the setting's default). */
  readonly maxAckPending?: number;
}

/**
 * The consumer a projector reads the events stream with: all events, or one tenant's, pinned to one replica at a
 * time, so the read models have a single writer.
 */
export function projectorConsumerSpec(durableName: string, options: ProjectorConsumerOptions = {}): ConsumerSpec {
  const { tenant, deliverPolicy = 'all', pinTimeoutMs = defaultPinTimeoutMs } = options;
  return {
    durableName,
    ...(deliverPolicy === 'all' ? {} : { deliverPolicy }),
    description: tenant === undefined ? 'Every lifecycle event, folded into the audit projections.' : `The lifecycle events of ${tenant}, folded into the audit projections.`,
    ...(tenant === undefined ? {} : { filterSubject: eventFilter({ tenant }) }),
    pinned: { group: WRITER_GROUP, timeoutMs: pinTimeoutMs },
    // A replica that died holds up to max_ack_pending messages, which stop delivery until their ack wait runs out:
    // the same bound as the pin's, so a takeover waits for one timeout, not for two different ones.
    ackWaitMs: pinTimeoutMs,
    // Only the pinned replica holds messages: its concurrency bounds them (the client buffers what the server sends).
    maxAckPending: options.maxAckPending ?? defaultConcurrency,
  };
}

/** AuditProjector: folds lifecycle events into RuntimeToolCall records, flow journals and the per-tenant audit chain. */
export const auditProjectorService: ServiceDefinition<AuditProjectorConfig> = {
  name: 'audit-projector',
  config: auditProjectorConfig,
  streams: [streams.events, streams.deadLetters],
  consumers: [{ stream: streams.events.name, consumer: projectorConsumerSpec(PROJECTOR_CONSUMER) }],
  // Its only job is writing the read models and answering queries from them: without MongoDB it is not ready (it
  // still starts, holds the events it could not write, and writes them once MongoDB answers).
  storeReadiness: 'required',
  // The first generation's query indexes too, on servers whose queries use them (the kit asks the server first).
  collections: collectionsFor,
  start: async (context) => {
    const { config, logger, messaging, store } = context;
    const generations = await openGenerations(messaging, store.dbName);
    const onShutdown = (name: string, run: () => Promise<void>) => context.onShutdown(name, run);
    const holder = config.INSTANCE_ID ?? `audit-projector-${randomUUID()}`;
    const now = () => new Date();
    const log = logger.child({ component: 'projector' });
    const concurrency = Math.max(config.AUDIT_PROJECTOR_CONCURRENCY, config.AUDIT_PROJECTOR_BATCH_SIZE);
    const onDiagnostic = logConsumerDiagnostic(log);
    const delay = config.AUDIT_PROJECTOR_RETRY_DELAY_MS;
    const consumerSettings = {
      batchSize: config.AUDIT_PROJECTOR_BATCH_SIZE,
      lingerMs: config.AUDIT_PROJECTOR_LINGER_MS,
      holdMs: config.AUDIT_PROJECTOR_HOLD_MS,
      concurrency,
      maxDeliver: config.AUDIT_PROJECTOR_MAX_DELIVER,
      nakBackoffMs: [delay, 5 * delay, 15 * delay, 30 * delay],
      maxEventBytes: config.AUDIT_PROJECTOR_MAX_EVENT_BYTES,
      stopGraceMs: config.AUDIT_PROJECTOR_STOP_GRACE_MS,
      onDiagnostic,
      onWriteFailure: (err: unknown, events: number) => log.warn({ err, events }, 'writing a batch failed'),
      // A batch MongoDB could not take waits for it (its messages held, not nak'ed) and is written again.
      storeStatus: context.storeStatus,
    };
    const consumer = projectorConsumerSpec(config.AUDIT_PROJECTOR_CONSUMER, {
      ...(config.AUDIT_PROJECTOR_TENANT === undefined ? {} : { tenant: config.AUDIT_PROJECTOR_TENANT }),
      deliverPolicy: config.AUDIT_PROJECTOR_DELIVER_POLICY,
      pinTimeoutMs: config.AUDIT_PROJECTOR_PIN_TIMEOUT_MS,
      maxAckPending: concurrency,
    });
    await ensureConsumer(messaging, streams.events.name, consumer);
    const live = await startProjectionConsumer({
      ...consumerSettings,
      messaging,
      stream: streams.events.name,
      consumer: consumer.durableName,
      writers: { store, generations, calls: new CallWriter(store), chain: new ChainWriter(store, { now }) },
      target: { kind: 'live' },
      // The live projection only: a rebuild re-reads old events, whose lag says nothing about the projector now.
      onWritten: projectorMetrics(serviceMetrics(context.metrics), now).written,
      // Which replica writes: the one line an operator looks for after a failover.
      onPinChange: (change) => log.info({ holder, pinned: change.pinned }, change.pinned ? 'this replica writes the projections now' : 'this replica no longer writes the projections'),
    });
    onShutdown('projection consumer', () => live.stop());

    const rebuilds = new RebuildManager({
      messaging,
      store,
      generations,
      holder,
      now,
      pollMs: config.AUDIT_REBUILD_POLL_MS,
      staleMs: config.AUDIT_REBUILD_STALE_MS,
      consumer: consumerSettings,
      consumerSpec: (generation) => ({ ...consumer, durableName: `${consumer.durableName}-rebuild-g${generation}`, deliverPolicy: 'all' }),
      onFailure: (err) => log.error({ err }, 'rebuild failed'),
    });
    onShutdown('rebuild', () => rebuilds.stop());

    const apiLog = logger.child({ component: 'api' });
    const trustedKeys = config.TOOLPLANE_TRUSTED_KEYS ?? {};
    if (Object.keys(trustedKeys).length === 0) apiLog.warn('TOOLPLANE_TRUSTED_KEYS names no tenant: every query will be refused');
    const handles = await serveAuditApi(messaging, {
      store,
      generations,
      rebuilds,
      verifier: createTokenVerifier(trustedKeys, { clockToleranceSeconds: config.TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S }),
      onDiagnostic: (diagnostic: ServeDiagnostic) => {
        const { error: err, ...rest } = { error: undefined as unknown, ...diagnostic };
        apiLog.debug({ ...rest, err }, `api ${diagnostic.type}`);
      },
    });
    onShutdown('audit api', async () => {
      await Promise.all(handles.map((handle) => handle.stop()));
    });
    log.info({ holder, batchSize: consumerSettings.batchSize, concurrency: consumerSettings.concurrency }, 'projecting lifecycle events');
  },
};
