import { collectDefaultMetrics, Registry } from 'prom-client';
import type { z } from 'zod';
import { connectMessaging, consumerProgress, ensureConsumer, ensureStream, type ConsumerSpec, type Messaging, type StreamSpec } from '@toolplane/messaging';
import { openStore, type Store } from '@toolplane/store';
import { ConfigError, loadConfig, type BaseServiceConfig, type StorelessServiceConfig } from './config.js';
import { declareConsumerMetrics } from './consumer-metrics.js';
import { startHealthServer, type HealthServer, type HttpRouteHandler, type ReadinessCheck } from './health-server.js';
import { createLogger, type Logger } from './logger.js';
import { serviceMetrics } from './service-metrics.js';
import { ShutdownStack } from './shutdown.js';
import { monitorStore, type StoreCollections, type StoreStatus } from './store-monitor.js';
import { startTracing, type Tracing } from './tracing.js';

/** What every service declares about itself, with MongoDB or without. */
interface CommonDefinition<C extends StorelessServiceConfig> {
  /** Short name, e.g. `registry`: in logs, metrics and the NATS connection name. */
  readonly name: string;
  readonly config: z.ZodType<C>;
  /** Streams this service publishes to or consumes from; declared idempotently at start. */
  readonly streams?: readonly StreamSpec[];
  /** Durable consumers this service owns. */
  readonly consumers?: readonly { readonly stream: string; readonly consumer: ConsumerSpec }[];
}

/**
 * What MongoDB is to a service's job, and so to its /readyz:
 * - `required`: the service cannot do its job without it (a projector whose job is writing read models, a service
 *   whose queries all read them): /readyz fails (`mongodb: failing`) while MongoDB does not answer;
 * - `optional`: its hot path runs on JetStream alone and only some queries or background work read MongoDB: /readyz
 *   stays ready and lists `mongodb: degraded` while MongoDB does not answer.
 * Either way the service starts without MongoDB, and `toolplane_store_up` says whether it answers.
 */
export type StoreReadiness = 'required' | 'optional';

/** What a service declares about itself; `start` wires its behaviour onto the connections it is given. */
export interface ServiceDefinition<C extends BaseServiceConfig> extends CommonDefinition<C> {
  /**
   * MongoDB (the default): opened at start from MONGODB_URL without waiting for it (a malformed URL stops the start),
   * watched by the kit (indexes ensured once it answers, `toolplane_store_up`, /readyz per `storeReadiness`), closed last.
   */
  readonly store?: 'mongodb';
  /** Whether this replica can do its job while MongoDB does not answer; see StoreReadiness. */
  readonly storeReadiness: StoreReadiness;
  /** Collections this service owns, with their indexes (or made for the server's capabilities); ensured once MongoDB answers. */
  readonly collections?: StoreCollections;
  readonly start: (context: ServiceContext<C>) => Promise<void>;
}

/** A service that keeps nothing in MongoDB: no MongoDB settings, connection or readiness check. */
export interface StorelessServiceDefinition<C extends StorelessServiceConfig> extends CommonDefinition<C> {
  readonly store: 'none';
  readonly start: (context: StorelessServiceContext<C>) => Promise<void>;
}

/** The address the service's HTTP server listens on, once it does. */
export interface HttpAddress {
  readonly host: string;
  /** The bound port (the system's choice when HTTP_PORT is 0). */
  readonly port: number;
}

/** What `start` of a service without MongoDB receives: the parsed config and the service's connections and hooks. */
export interface StorelessServiceContext<C extends StorelessServiceConfig> {
  readonly config: C;
  readonly logger: Logger;
  readonly messaging: Messaging;
  readonly metrics: Registry;
  /** Aborts when the service begins shutting down (before any shutdown step runs). */
  readonly signal: AbortSignal;
  /** Registers a shutdown step; steps run in reverse order (consumers before connections). */
  onShutdown(name: string, run: () => Promise<void>): void;
  addReadinessCheck(check: ReadinessCheck): void;
  /**
   * Serves the service's own routes on its HTTP port: every path but /healthz, /readyz and /metrics goes to
   * `handler`. At shutdown the server stops accepting first and lets requests in flight finish.
   */
  serveHttp(handler: HttpRouteHandler): void;
  /** Calls `listener` once the HTTP server listens (after `start`, before the service reports ready). */
  onListening(listener: (address: HttpAddress) => void): void;
}

/** What `start` receives: the parsed config and the service's connections and hooks. */
export interface ServiceContext<C extends BaseServiceConfig> extends StorelessServiceContext<C> {
  /** Connected on first use: an operation while MongoDB does not answer fails with TEMPORARY_UNAVAILABLE. */
  readonly store: Store;
  /** Whether MongoDB answers now and the service's indexes are in place; writers of read models wait on it. */
  readonly storeStatus: StoreStatus;
}

/** A started service. */
export interface RunningService {
  readonly port: number;
  readonly logger: Logger;
  /** Drains consumers, then closes the HTTP server, NATS and MongoDB; resolves true when all was clean. */
  stop(): Promise<boolean>;
}

/** A start-up failure that names the setting responsible: printed as one line, then the process exits 1. */
export class StartupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StartupError';
  }
}

/** Starts a service in this process: parse config, connect, declare, call `start`, then serve HTTP. */
export function startService<C extends BaseServiceConfig>(definition: ServiceDefinition<C>, env: Record<string, string | undefined>): Promise<RunningService>;
export function startService<C extends StorelessServiceConfig>(definition: StorelessServiceDefinition<C>, env: Record<string, string | undefined>): Promise<RunningService>;
export function startService(definition: ServiceDefinition<BaseServiceConfig> | StorelessServiceDefinition<StorelessServiceConfig>, env: Record<string, string | undefined>): Promise<RunningService> {
  return definition.store === 'none' ? startWith(definition, env, undefined) : startWith(definition, env, definition);
}

/** The one start path; `withStore` is the definition again when the service has MongoDB. */
async function startWith<C extends StorelessServiceConfig>(
  definition: CommonDefinition<C> & { readonly start: (context: ServiceContext<C & BaseServiceConfig>) => Promise<void> },
  env: Record<string, string | undefined>,
  withStore: { readonly collections?: StoreCollections; readonly storeReadiness: StoreReadiness } | undefined,
): Promise<RunningService> {
  let config: C;
  try {
    config = loadConfig(definition.config, env);
  } catch (error) {
    if (error instanceof ConfigError) throw new StartupError(`invalid configuration: ${error.message}`);
    throw error;
  }
  const logger = createLogger({ service: definition.name, level: config.LOG_LEVEL, instanceId: config.INSTANCE_ID });
  const tracing = startServiceTracing(definition.name, env, logger, config.INSTANCE_ID);
  const shutdown = new ShutdownStack(logger);
  // Registered first, so it runs last: the spans of draining consumers and closing connections are exported too.
  shutdown.push('tracing', () => tracing.stop());
  const controller = new AbortController();
  const readiness: ReadinessCheck[] = [];
  const metrics = new Registry();
  metrics.setDefaultLabels({ service: definition.name });
  collectDefaultMetrics({ register: metrics, prefix: 'toolplane_' });

  const natsLog = logger.child({ component: 'nats' });
  let messaging: Messaging;
  try {
    messaging = await connectMessaging({
      url: config.NATS_URL,
      name: `toolplane-${definition.name}`,
      streamReplicas: config.NATS_STREAM_REPLICAS,
      ...(config.NATS_INBOX_PREFIX === undefined ? {} : { inboxPrefix: config.NATS_INBOX_PREFIX }),
      onStatus: (status) => natsLog.info({ status }, `nats ${status.type}`),
    });
  } catch (error) {
    throw new StartupError(`NATS_URL: cannot connect to NATS: ${messageOf(error)}`, { cause: error });
  }
  shutdown.push('nats', () => messaging.drain());

  let store: Store | undefined;
  // A definition with MongoDB has a config with its settings (ServiceDefinition's config is a BaseServiceConfig).
  const mongo = withStore === undefined ? undefined : (config as C & BaseServiceConfig);
  if (mongo !== undefined) {
    // Nothing is sent yet: only a URL the driver cannot parse stops the start. MongoDB holds read models, not what the
    // service needs to serve, so a server that does not answer is waited for in the background (below).
    try {
      store = openStore({ url: mongo.MONGODB_URL, dbName: mongo.MONGODB_DATABASE, appName: `toolplane-${definition.name}`, serverSelectionTimeoutMs: mongo.MONGODB_CONNECT_TIMEOUT_MS });
    } catch (error) {
      await shutdown.run(config.SHUTDOWN_TIMEOUT_MS);
      throw new StartupError(`invalid configuration: MONGODB_URL: ${messageOf(error)}`, { cause: error });
    }
    const opened = store;
    shutdown.push('mongodb', () => opened.close());
  }

  let health: HealthServer | undefined;
  let routes: HttpRouteHandler | undefined;
  const listeners: ((address: HttpAddress) => void)[] = [];
  try {
    for (const stream of definition.streams ?? []) await ensureStream(messaging, stream);
    for (const { stream, consumer } of definition.consumers ?? []) await ensureConsumer(messaging, stream, consumer);
    const metricsLog = logger.child({ component: 'metrics' });
    const connection = messaging;
    declareConsumerMetrics(
      serviceMetrics(metrics),
      (definition.consumers ?? []).map(({ stream, consumer }) => ({ stream, consumer: consumer.durableName })),
      (stream, consumer, signal) => consumerProgress(connection, stream, consumer, signal),
      {
        signal: controller.signal,
        // Debug only: a scrape every few seconds while NATS is down would otherwise flood the log with one cause.
        onReadFailed: (ref, err) => metricsLog.debug({ err, ...ref }, 'consumer info unavailable: its gauges are left out of this scrape'),
      },
    );
    readiness.push({ name: 'nats', check: () => Promise.resolve(messaging.isConnected()) });
    let storeStatus: StoreStatus | undefined;
    if (store !== undefined && withStore !== undefined) {
      const monitor = monitorStore({ store, collections: withStore.collections ?? [], logger: logger.child({ component: 'mongodb' }) });
      // The service sees the status only: the kit owns the loop and stops it.
      storeStatus = {
        get available() {
          return monitor.available;
        },
        whenAvailable: (options) => monitor.whenAvailable(options),
      };
      // Registered after the store's close, so it stops before it.
      shutdown.push('mongodb monitor', () => monitor.stop());
      readiness.push(
        withStore.storeReadiness === 'required'
          ? { name: 'mongodb', check: (signal) => monitor.answersNow(signal) }
          : { name: 'mongodb', required: false, check: () => Promise.resolve(monitor.available) },
      );
      serviceMetrics(metrics).gauge({
        name: 'store_up',
        help: 'Whether MongoDB answers this replica and its indexes are in place (1) or not (0): its read models lag meanwhile.',
        labelNames: [],
        collect: (set) => set({}, monitor.available ? 1 : 0),
      });
    }
    // A service without MongoDB is given no store: its definition's start takes a context without one.
    await definition.start({
      config: config as C & BaseServiceConfig,
      logger,
      messaging,
      store: store as Store,
      storeStatus: storeStatus as StoreStatus,
      metrics,
      signal: controller.signal,
      onShutdown: (name, run) => shutdown.push(name, run),
      addReadinessCheck: (check) => readiness.push(check),
      serveHttp: (handler) => {
        if (routes !== undefined) throw new Error('serveHttp: the service already serves its routes');
        routes = handler;
      },
      onListening: (listener) => listeners.push(listener),
    });

    health = await startHealthServer({ host: config.HTTP_HOST, port: config.HTTP_PORT, service: definition.name, metrics, checks: readiness, ...(routes === undefined ? {} : { routes }) });
    for (const listener of listeners) listener({ host: config.HTTP_HOST, port: health.port });
  } catch (error) {
    controller.abort();
    // The server listens already when a listener of onListening failed.
    await health?.close();
    await shutdown.run(config.SHUTDOWN_TIMEOUT_MS);
    if (error instanceof StartupError) throw error;
    const code = (error as { code?: unknown }).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      throw new StartupError(`HTTP_PORT: cannot listen on ${config.HTTP_HOST}:${config.HTTP_PORT}: ${messageOf(error)}`, { cause: error });
    }
    throw new StartupError(`start-up failed: ${messageOf(error)}`, { cause: error });
  }
  const server = health;
  // The HTTP server closes after consumers drained (registered last, runs first: stop taking traffic).
  shutdown.push('http', () => server.close());
  logger.info({ port: server.port, natsUrl: redactUrl(config.NATS_URL), ...(mongo === undefined ? {} : { database: mongo.MONGODB_DATABASE }) }, `${definition.name} ready`);

  return {
    port: server.port,
    logger,
    stop: async () => {
      server.markShuttingDown();
      controller.abort();
      return shutdown.run(config.SHUTDOWN_TIMEOUT_MS);
    },
  };
}

/**
 * The composition root's entry: starts the service, exits 1 with one line on stderr when it cannot start,
 * and drains and exits 0 on SIGTERM or SIGINT (a second signal exits at once).
 */
export function runService<C extends BaseServiceConfig>(definition: ServiceDefinition<C>, env: Record<string, string | undefined>): Promise<void>;
export function runService<C extends StorelessServiceConfig>(definition: StorelessServiceDefinition<C>, env: Record<string, string | undefined>): Promise<void>;
export async function runService(definition: ServiceDefinition<BaseServiceConfig> | StorelessServiceDefinition<StorelessServiceConfig>, env: Record<string, string | undefined>): Promise<void> {
  let service: RunningService;
  try {
    service = await (definition.store === 'none' ? startService(definition, env) : startService(definition, env));
  } catch (error) {
    process.stderr.write(`${definition.name}: ${error instanceof StartupError ? error.message : `start-up failed: ${messageOf(error)}`}\n`);
    process.exit(1);
  }
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      service.logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    service.logger.info({ signal }, 'shutting down');
    service.stop().then(
      (clean) => {
        service.logger.info({ clean }, 'stopped');
        service.logger.flush();
        process.exit(clean ? 0 : 1);
      },
      (err: unknown) => {
        service.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/** Tracing for a service (off without an OTLP endpoint); a malformed `OTEL_*` setting fails start-up with one line. */
function startServiceTracing(serviceName: string, env: Record<string, string | undefined>, logger: Logger, instanceId: string | undefined): Tracing {
  try {
    return startTracing({ serviceName, env, logger, ...(instanceId === undefined ? {} : { instanceId }) });
  } catch (error) {
    if (error instanceof ConfigError) throw new StartupError(`invalid configuration: ${error.message}`);
    throw error;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A URL list with any user:password removed, for logs. */
export function redactUrl(urls: string): string {
  return urls
    .split(',')
    .map((part) => {
      try {
        const url = new URL(part.trim());
        url.username = '';
        url.password = '';
        return url.toString().replace(/\/$/, '');
      } catch {
        return '[unparseable url]';
      }
    })
    .join(',');
}
