import { collectDefaultMetrics, Registry } from 'prom-client';
import type { z } from 'zod';
import { connectMessaging, ensureConsumer, ensureStream, type ConsumerSpec, type Messaging, type StreamSpec } from '@toolplane/messaging';
import { connectStore, ensureIndexes, type CollectionDefinition, type Store } from '@toolplane/store';
import { ConfigError, loadConfig, type BaseServiceConfig } from './config.js';
import { startHealthServer, type HealthServer, type ReadinessCheck } from './health-server.js';
import { createLogger, type Logger } from './logger.js';
import { ShutdownStack } from './shutdown.js';

/** What a service declares about itself; `start` wires its behaviour onto the connections it is given. */
export interface ServiceDefinition<C extends BaseServiceConfig> {
  /** Short name, e.g. `registry`: in logs, metrics and the NATS connection name. */
  readonly name: string;
  readonly config: z.ZodType<C>;
  /** Streams this service publishes to or consumes from; declared idempotently at start. */
  readonly streams?: readonly StreamSpec[];
  /** Durable consumers this service owns. */
  readonly consumers?: readonly { readonly stream: string; readonly consumer: ConsumerSpec }[];
  /** Collections this service owns, with their indexes. */
  readonly collections?: readonly CollectionDefinition[];
  readonly start: (context: ServiceContext<C>) => Promise<void>;
}

/** What `start` receives: the parsed config and the service's connections and hooks. */
export interface ServiceContext<C extends BaseServiceConfig> {
  readonly config: C;
  readonly logger: Logger;
  readonly messaging: Messaging;
  readonly store: Store;
  readonly metrics: Registry;
  /** Aborts when the service begins shutting down. */
  readonly signal: AbortSignal;
  /** Registers a shutdown step; steps run in reverse order (consumers before connections). */
  onShutdown(name: string, run: () => Promise<void>): void;
  addReadinessCheck(check: ReadinessCheck): void;
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

/** Starts a service in this process: parse config, connect, declare, serve health, then call `start`. */
export async function startService<C extends BaseServiceConfig>(definition: ServiceDefinition<C>, env: Record<string, string | undefined>): Promise<RunningService> {
  let config: C;
  try {
    config = loadConfig(definition.config, env);
  } catch (error) {
    if (error instanceof ConfigError) throw new StartupError(`invalid configuration: ${error.message}`);
    throw error;
  }
  const logger = createLogger({ service: definition.name, level: config.LOG_LEVEL, instanceId: config.INSTANCE_ID });
  const shutdown = new ShutdownStack(logger);
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
      ...(config.NATS_INBOX_PREFIX === undefined ? {} : { inboxPrefix: config.NATS_INBOX_PREFIX }),
      onStatus: (status) => natsLog.info({ status }, `nats ${status.type}`),
    });
  } catch (error) {
    throw new StartupError(`NATS_URL: cannot connect to NATS: ${messageOf(error)}`, { cause: error });
  }
  shutdown.push('nats', () => messaging.drain());

  let store: Store;
  try {
    store = await connectStore({ url: config.MONGODB_URL, dbName: config.MONGODB_DATABASE, appName: `toolplane-${definition.name}`, serverSelectionTimeoutMs: config.MONGODB_CONNECT_TIMEOUT_MS });
  } catch (error) {
    await shutdown.run(config.SHUTDOWN_TIMEOUT_MS);
    throw new StartupError(`MONGODB_URL: cannot connect to MongoDB: ${messageOf(error)}`, { cause: error });
  }
  shutdown.push('mongodb', () => store.close());

  let health: HealthServer | undefined;
  try {
    for (const stream of definition.streams ?? []) await ensureStream(messaging, stream);
    for (const { stream, consumer } of definition.consumers ?? []) await ensureConsumer(messaging, stream, consumer);
    await ensureIndexes(store, definition.collections ?? []);

    readiness.push({ name: 'nats', check: () => Promise.resolve(messaging.isConnected()) });
    readiness.push({ name: 'mongodb', check: (signal) => store.ping(signal).then(() => true) });
    await definition.start({
      config,
      logger,
      messaging,
      store,
      metrics,
      signal: controller.signal,
      onShutdown: (name, run) => shutdown.push(name, run),
      addReadinessCheck: (check) => readiness.push(check),
    });

    health = await startHealthServer({ host: config.HTTP_HOST, port: config.HTTP_PORT, service: definition.name, metrics, checks: readiness });
  } catch (error) {
    controller.abort();
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
  logger.info({ port: server.port, natsUrl: redactUrl(config.NATS_URL), database: config.MONGODB_DATABASE }, `${definition.name} ready`);

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
export async function runService<C extends BaseServiceConfig>(definition: ServiceDefinition<C>, env: Record<string, string | undefined>): Promise<void> {
  let service: RunningService;
  try {
    service = await startService(definition, env);
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
