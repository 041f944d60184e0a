import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import {
  McpServerRecord,
  ReleaseRecord,
  ServerNameRecord,
  ToolDescriptorRecord,
  TrustedKeysSetting,
  WatchLease,
  registryStream,
  registrySubject,
  registryWatchBucket,
  streams,
} from '@toolplane/contracts';
import { createTokenVerifier } from '@toolplane/auth';
import { jetStreamEventStore, readAppendsMatching } from '@toolplane/event-store';
import { openKv } from '@toolplane/messaging';
import { baseServiceConfig, millisecondsSetting, type ServiceDefinition } from '@toolplane/service-kit';
import { lifecyclePublisher } from './adapters/lifecycle-publisher.js';
import { readModelCatchUp } from './adapters/read-model-progress.js';
import { createMcpGateway } from './adapters/mcp-gateway.js';
import { adapterPolicyChecks } from './adapters/adapter-policy-checks.js';
import type { RegistryContext } from './app/registry-context.js';
import { startWatcher } from './app/watcher.js';
import { collections, mcpServers, toolDescriptors } from './collections.js';
import { serveRegistry } from './handlers.js';
import { createDescriptorPublisher } from './read-model/descriptor-publisher.js';
import { publisherConsumer, readModelConsumer, startRegistryProjection } from './read-model/registry-projector.js';

/** The registry service's settings. */
export const registryConfig = baseServiceConfig({ httpPort: 7101 })
  .extend({
    /**
     * Per tenant, the public keys operator tokens are verified with: `{"<tenant>": [<public JWK with kid>, …]}`.
     * Unset means no tenant is trusted (every operator command is refused, and a warning says so); a malformed value
     * stops the start.
     */
    TOOLPLANE_TRUSTED_KEYS: TrustedKeysSetting.optional(),
    /** How often watched (Active and Degraded) servers are health-checked. */
    REGISTRY_HEALTH_INTERVAL_MS: millisecondsSetting(15_000),
    /** How long one health check may take before it counts as a failure. */
    REGISTRY_HEALTH_TIMEOUT_MS: millisecondsSetting(5_000),
    /** Consecutive failed health checks after which an Active server becomes Degraded. */
    REGISTRY_HEALTH_FAILURE_THRESHOLD: z.coerce.number({ error: 'must be a whole number' }).int('must be a whole number').min(1, 'must be at least 1').max(100, 'must be at most 100').default(3),
    /** How often watched servers are re-discovered without a tools/list_changed notification. */
    REGISTRY_DISCOVERY_INTERVAL_MS: millisecondsSetting(300_000),
    /** How long a replica's watch lease on a server holds without renewal; longer than a health interval plus a check. */
    REGISTRY_WATCH_LEASE_MS: millisecondsSetting(60_000),
    /** `off` runs no watch in this replica (it still answers commands). */
    REGISTRY_WATCH: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
    /** Deadline of an MCP handshake. */
    MCP_HANDSHAKE_TIMEOUT_MS: millisecondsSetting(15_000),
    /** Deadline of one MCP request (a list page, a ping). */
    MCP_REQUEST_TIMEOUT_MS: millisecondsSetting(30_000),
    /** The PATH stdio servers run with and their commands are looked up on (default: node's directory and the system's). */
    MCP_STDIO_PATH: z.string().min(1, 'is empty').optional(),
    /** `bubblewrap` runs every stdio server it discovers and watches in its sandbox (bwrap must be installed); `off` as a plain child process. */
    MCP_STDIO_SANDBOX: z.enum(['bubblewrap', 'off'], { error: 'must be bubblewrap or off' }).default('bubblewrap'),
  })
  .refine((config) => config.REGISTRY_WATCH_LEASE_MS > config.REGISTRY_HEALTH_INTERVAL_MS + config.REGISTRY_HEALTH_TIMEOUT_MS, {
    path: ['REGISTRY_WATCH_LEASE_MS'],
    error: 'must exceed REGISTRY_HEALTH_INTERVAL_MS plus REGISTRY_HEALTH_TIMEOUT_MS, or watched servers would change hands every round',
  });

// How long a list query waits for the read models to hold the changes committed before it.
const readModelCatchUpMs = 2_000;
// How long a registration or a bind waits for the tool adapter's policy checks (a bundle exists; which agent profiles
// a published tool conflicts with) before it goes on without them.
const policyCheckTimeoutMs = 3_000;

/** The parsed settings of the registry. */
export type RegistryConfig = z.infer<typeof registryConfig>;

/** McpServerRegistry: registers, discovers, binds and watches MCP servers; owns the McpServer and ToolDescriptor aggregates. */
export const registryService: ServiceDefinition<RegistryConfig> = {
  name: 'registry',
  config: registryConfig,
  streams: [streams.events, streams.deadLetters, registryStream],
  consumers: [
    { stream: registryStream.name, consumer: publisherConsumer },
    { stream: registryStream.name, consumer: readModelConsumer },
  ],
  // Commands, getServer (the adapter's hot path) and the descriptor KV run on the registry's stream alone; only the
  // scope-wide lists and the watcher's choice of servers read the read models, which catch up once MongoDB answers.
  storeReadiness: 'optional',
  collections,
  async start(service) {
    const { config, logger, messaging, signal } = service;
    const onShutdown = (name: string, run: () => Promise<void>) => service.onShutdown(name, run);
    const instanceId = `${config.INSTANCE_ID ?? hostname()}-${randomUUID().slice(0, 8)}`;
    const mcpLog = logger.child({ component: 'mcp' });
    const mcp = createMcpGateway({
      handshakeTimeoutMs: config.MCP_HANDSHAKE_TIMEOUT_MS,
      requestTimeoutMs: config.MCP_REQUEST_TIMEOUT_MS,
      stdioPath: config.MCP_STDIO_PATH,
      sandbox: { mode: config.MCP_STDIO_SANDBOX },
      // A server's stderr is its own diagnostics: its size only, never its text, which may echo arguments.
      onStderr: (serverId, text) => mcpLog.debug({ serverId, bytes: text.length }, 'stdio server wrote to stderr'),
    });
    onShutdown('mcp', () => mcp.close());
    const publishLog = logger.child({ component: 'publication' });
    const store = <S extends Parameters<typeof jetStreamEventStore>[1]['schema']>(kind: 'server' | 'descriptor' | 'name' | 'release', schema: S) =>
      jetStreamEventStore(messaging, { stream: registryStream.name, subjectOf: (streamId) => registrySubject(kind, streamId), schema });
    const context: RegistryContext = {
      stores: {
        servers: store('server', McpServerRecord),
        descriptors: store('descriptor', ToolDescriptorRecord),
        names: store('name', ServerNameRecord),
        releases: store('release', ReleaseRecord),
        releaseAppends: (scope, readSignal) =>
          readAppendsMatching(messaging, { stream: registryStream.name, filter: registrySubject('release', `${scope.tenant}.${scope.workspace}.*`), schema: ReleaseRecord, ...(readSignal === undefined ? {} : { signal: readSignal }) }),
      },
      readModels: { servers: service.store.collection(mcpServers), descriptors: service.store.collection(toolDescriptors) },
      readModelsCaughtUp: readModelCatchUp(messaging, registryStream.name, readModelConsumer.durableName, readModelCatchUpMs),
      mcp,
      publishEvents: lifecyclePublisher(messaging),
      publishDescriptor: await createDescriptorPublisher(messaging, signal),
      now: () => new Date().toISOString(),
      newId: () => randomUUID(),
      failureThreshold: config.REGISTRY_HEALTH_FAILURE_THRESHOLD,
      policies: adapterPolicyChecks(messaging, { timeoutMs: policyCheckTimeoutMs }),
      onPolicyCheckError: (err, what) => publishLog.warn({ err, what }, 'the tool adapter could not check a policy bundle; the registration goes on (calls through a missing bundle are refused)'),
      onPublishError: (err, what) => publishLog.warn({ err, what }, 'publishing after an append failed; the publisher consumer publishes it from the record'),
    };

    const projectionLog = logger.child({ component: 'projection' });
    const projection = await startRegistryProjection(messaging, context, {
      signal,
      onDiagnostic: (consumer, diagnostic) => {
        if (diagnostic.type === 'dead_lettered' || diagnostic.type === 'dead_letter_failed') projectionLog.error({ consumer, type: diagnostic.type, reason: diagnostic.reason }, 'a registry append was given up on');
        else projectionLog.warn({ consumer, type: diagnostic.type, err: 'error' in diagnostic ? diagnostic.error : undefined }, 'registry projection trouble');
      },
    });
    onShutdown('projection', async () => {
      await Promise.all(projection.map((handle) => handle.stop({ graceMs: 2_000 })));
    });

    if (config.REGISTRY_WATCH === 'on') {
      const watcher = startWatcher(context, {
        instanceId,
        healthIntervalMs: config.REGISTRY_HEALTH_INTERVAL_MS,
        healthTimeoutMs: config.REGISTRY_HEALTH_TIMEOUT_MS,
        discoveryIntervalMs: config.REGISTRY_DISCOVERY_INTERVAL_MS,
        leaseMs: config.REGISTRY_WATCH_LEASE_MS,
        concurrency: 8,
        leases: await openKv(messaging, registryWatchBucket, WatchLease, { signal }),
        logger: logger.child({ component: 'watcher', instanceId }),
        nowMs: () => Date.now(),
        storeAvailable: () => service.storeStatus.available,
      });
      onShutdown('watcher', () => watcher.stop());
    }

    const requestLog = logger.child({ component: 'requests' });
    const trustedKeys = config.TOOLPLANE_TRUSTED_KEYS ?? {};
    if (Object.keys(trustedKeys).length === 0) requestLog.warn('TOOLPLANE_TRUSTED_KEYS names no tenant: every operator command will be refused');
    const verifier = createTokenVerifier(trustedKeys, { clockToleranceSeconds: config.TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S });
    const handles = await serveRegistry(messaging, context, verifier, (diagnostic) => {
      if (diagnostic.type === 'handler_failed' && diagnostic.reply.code !== 'INTERNAL') requestLog.info({ subject: diagnostic.subject, code: diagnostic.reply.code }, diagnostic.reply.message);
      else if (diagnostic.type === 'handler_failed') requestLog.error({ subject: diagnostic.subject, err: diagnostic.error }, 'request failed');
      else requestLog.warn({ subject: diagnostic.subject, type: diagnostic.type }, 'request not answered normally');
    });
    // Registered last, so it runs first at shutdown: no new commands while the watch and MCP sessions close.
    onShutdown('responders', async () => {
      await Promise.all(handles.map((handle) => handle.stop({ graceMs: 2_000 })));
    });
  },
};
