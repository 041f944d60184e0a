import {
  ApprovalRequested,
  ApprovalStreamEvent,
  RegistryEvent,
  ToolDescriptor,
  TrustedKeysSetting,
  approvalStream,
  approvalStreamSubject,
  deadLetterSubject,
  descriptorBucketSettings,
  descriptorKey,
  eventFilter,
  streams,
} from '@toolplane/contracts';
import { createTokenVerifier } from '@toolplane/auth';
import { jetStreamEventStore, storedAppendSchema } from '@toolplane/event-store';
import { consume, openKv } from '@toolplane/messaging';
import { baseServiceConfig, logConsumerDiagnostic, millisecondsSetting, serviceMetrics, type ServiceDefinition } from '@toolplane/service-kit';
import { approvalMetrics } from './adapters/approval-metrics.js';
import { projectApproval } from './adapters/approval-projector.js';
import { approvals, collections } from './adapters/collections.js';
import { relayApprovalEvents } from './adapters/event-relay.js';
import { postWebhook } from './adapters/webhook-sender.js';
import { onApprovalRequested } from './app/approval-requests.js';
import { notifyApprovalRequested, webhookMaxDeliveries, webhookRetryBackoffMs } from './app/approval-webhooks.js';
import type { ApprovalRuntime } from './app/approval-runtime.js';
import { serveApprovalCommands } from './app/commands.js';
import { onRegistryEvent } from './app/registry-changes.js';
import { runSweeper } from './app/sweeper.js';
import { approvalConsumers } from './consumers.js';
import { ApprovalWebhooksSetting, consolePublicUrlSetting } from './webhook-settings.js';

export { approvalConsumers } from './consumers.js';

/** The approval service's settings. */
export const approvalConfig = baseServiceConfig({ httpPort: 7103 }).extend({
  /**
   * Per tenant, the public keys operator tokens are verified with: `{"<tenant>": [<public JWK with kid>, …]}`.
   * Unset means no tenant is trusted (every token is refused, and a warning says so); a malformed value stops
   * the start.
   */
  TOOLPLANE_TRUSTED_KEYS: TrustedKeysSetting.optional(),
  /** How often a replica looks for expired approvals. */
  APPROVAL_SWEEP_INTERVAL_MS: millisecondsSetting(5_000),
  /**
   * Per tenant, the webhook told of every approval requested: `{"<tenant>": {"url": "https://…", "secret": "<at
   * least 32 characters>", "workspaces"?: ["<workspace>", …]}}`; default none. The secrets print as `[redacted]`.
   */
  APPROVAL_WEBHOOKS: ApprovalWebhooksSetting,
  /** How long one webhook POST may take before it counts as failed. */
  APPROVAL_WEBHOOK_TIMEOUT_MS: millisecondsSetting(5_000),
  /** The console's public address: webhooks then link to the approval there. */
  CONSOLE_PUBLIC_URL: consolePublicUrlSetting.optional(),
});

// Retryable failures (NATS briefly away) are retried this often before the message is dead-lettered.
const maxDeliver = 10;
// The stream's own consumers wait out a store or NATS outage instead of dead-lettering: what they skip, nobody redoes.
const streamConsumerRetry = { maxDeliver: 100_000, nakBackoffMs: [250, 1_000, 2_000, 5_000] } as const;
const appended = storedAppendSchema(ApprovalStreamEvent);

/** ApprovalService: holds gated invocations for a human decision; owns the Approval aggregate. */
export const approvalService: ServiceDefinition<ReturnType<typeof approvalConfig.parse>> = {
  name: 'approval',
  config: approvalConfig,
  streams: [streams.events, streams.deadLetters, approvalStream],
  consumers: [
    {
      stream: streams.events.name,
      consumer: {
        durableName: approvalConsumers.requests,
        description: 'ApprovalRequested events from the tool adapter.',
        filterSubject: eventFilter({ type: 'ApprovalRequested' }),
      },
    },
    {
      stream: streams.events.name,
      consumer: {
        durableName: approvalConsumers.registry,
        description: 'Registry events that suspend or retire a tool version, voiding its approvals.',
        filterSubjects: [eventFilter({ type: 'McpToolDefinitionChanged' }), eventFilter({ type: 'ToolDescriptorRetired' })],
      },
    },
    {
      stream: streams.events.name,
      consumer: {
        durableName: approvalConsumers.webhooks,
        description: 'ApprovalRequested events, for the tenants’ webhook receivers.',
        filterSubject: eventFilter({ type: 'ApprovalRequested' }),
        // Created on a stream with history, it must not page every receiver about approvals long decided.
        deliverPolicy: 'new',
        // The server stops there too: a delivery that crashed the process each time is not retried for ever.
        maxDeliver: webhookMaxDeliveries,
      },
    },
    {
      stream: approvalStream.name,
      // One message in flight across replicas: each read-model document has a single writer, in stream order.
      consumer: { durableName: approvalConsumers.projector, description: 'Folds the approval stream into the approvals read model.', maxAckPending: 1 },
    },
    {
      stream: approvalStream.name,
      // One message in flight across replicas: an approval's events are published in the order they were decided.
      consumer: { durableName: approvalConsumers.events, description: 'Publishes the approval stream’s outcome events on the events stream.', maxAckPending: 1 },
    },
  ],
  // Approvals are opened, shown, decided and consumed from the approval stream; only list queries and the expiry
  // sweeper read the read model, which catches up once MongoDB answers (a decision still checks the deadline itself).
  storeReadiness: 'optional',
  collections,
  start: async (context) => {
    const { config, logger, messaging, store, signal } = context;
    const events = jetStreamEventStore(messaging, { stream: approvalStream.name, subjectOf: approvalStreamSubject, schema: ApprovalStreamEvent });
    const readModel = store.collection(approvals);
    const metrics = approvalMetrics(serviceMetrics(context.metrics), { approvals: readModel, signal, logger: logger.child({ component: 'metrics' }) });
    // The registry's descriptor read model (open to every service): an approval requested for a retired version is void.
    const descriptors = await openKv(messaging, descriptorBucketSettings, ToolDescriptor, { signal });
    const runtime: ApprovalRuntime = {
      events,
      approvals: readModel,
      messaging,
      clock: () => new Date(),
      logger,
      onDecided: metrics.decided,
      descriptorOf: async (scope, toolId, toolVersion, readSignal) => (await descriptors.get(descriptorKey(scope, toolId, toolVersion), readSignal === undefined ? {} : { signal: readSignal }))?.value,
    };
    const trustedKeys = config.TOOLPLANE_TRUSTED_KEYS ?? {};
    if (Object.keys(trustedKeys).length === 0) logger.warn('TOOLPLANE_TRUSTED_KEYS names no tenant: every operator token will be refused');
    const verifier = createTokenVerifier(trustedKeys, { clock: runtime.clock, clockToleranceSeconds: config.TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S });

    // Consumers and responders stop in the shutdown steps, with a grace period for in-flight work (steps run in
    // reverse order, so before the store and NATS close); the sweeper stops with the start signal.
    const relayLog = logger.child({ component: 'event-relay' });
    const relay = await consume(messaging, {
      stream: approvalStream.name,
      consumer: approvalConsumers.events,
      schema: appended,
      handler: (message, delivery) => relayApprovalEvents(messaging, message, delivery),
      deadLetterSubject: deadLetterSubject(approvalStream.name, approvalConsumers.events),
      ...streamConsumerRetry,
      onDiagnostic: logConsumerDiagnostic(relayLog),
    });
    context.onShutdown('approval-events', () => relay.stop({ graceMs: 2_000 }));

    const projectorLog = logger.child({ component: 'projector' });
    const projector = await consume(messaging, {
      stream: approvalStream.name,
      consumer: approvalConsumers.projector,
      schema: appended,
      handler: (message, delivery) => projectApproval(runtime, message, delivery),
      deadLetterSubject: deadLetterSubject(approvalStream.name, approvalConsumers.projector),
      ...streamConsumerRetry,
      onDiagnostic: logConsumerDiagnostic(projectorLog),
    });
    context.onShutdown('approval-projector', () => projector.stop({ graceMs: 2_000 }));

    const requestsLog = logger.child({ component: 'approval-requests' });
    const requests = await consume(messaging, {
      stream: streams.events.name,
      consumer: approvalConsumers.requests,
      schema: ApprovalRequested,
      handler: (event, delivery) => onApprovalRequested({ ...runtime, logger: requestsLog }, event, delivery),
      deadLetterSubject: deadLetterSubject(streams.events.name, approvalConsumers.requests),
      maxDeliver,
      concurrency: 4,
      onDiagnostic: logConsumerDiagnostic(requestsLog),
    });
    context.onShutdown('approval-requests', () => requests.stop({ graceMs: 2_000 }));

    // Its own consumer: a slow or failing receiver delays only other notifications, never an approval.
    const webhooksLog = logger.child({ component: 'approval-webhooks' });
    const webhookRuntime = {
      webhooks: config.APPROVAL_WEBHOOKS,
      consolePublicUrl: config.CONSOLE_PUBLIC_URL,
      timeoutMs: config.APPROVAL_WEBHOOK_TIMEOUT_MS,
      clock: runtime.clock,
      logger: webhooksLog,
      post: postWebhook,
      onDelivery: metrics.webhookDelivery,
    };
    const webhooks = await consume(messaging, {
      stream: streams.events.name,
      consumer: approvalConsumers.webhooks,
      schema: ApprovalRequested,
      handler: (event, delivery) => notifyApprovalRequested(webhookRuntime, event, delivery),
      deadLetterSubject: deadLetterSubject(streams.events.name, approvalConsumers.webhooks),
      maxDeliver: webhookMaxDeliveries,
      nakBackoffMs: webhookRetryBackoffMs,
      concurrency: 8,
      onDiagnostic: logConsumerDiagnostic(webhooksLog),
    });
    context.onShutdown('approval-webhooks', () => webhooks.stop({ graceMs: 2_000 }));
    if (Object.keys(config.APPROVAL_WEBHOOKS).length > 0) webhooksLog.info({ tenants: Object.keys(config.APPROVAL_WEBHOOKS) }, 'approval webhooks configured');

    const registryLog = logger.child({ component: 'registry-changes' });
    const registry = await consume(messaging, {
      stream: streams.events.name,
      consumer: approvalConsumers.registry,
      schema: RegistryEvent,
      handler: (event, delivery) => onRegistryEvent({ ...runtime, logger: registryLog }, event, delivery),
      deadLetterSubject: deadLetterSubject(streams.events.name, approvalConsumers.registry),
      // It reads the read model for candidates: a store outage is waited out like the stream's own consumers do.
      ...streamConsumerRetry,
      onDiagnostic: logConsumerDiagnostic(registryLog),
    });
    context.onShutdown('approval-registry', () => registry.stop({ graceMs: 2_000 }));

    const responders = await serveApprovalCommands(runtime, verifier);
    context.onShutdown('approval-commands', async () => {
      await Promise.all(responders.map((responder) => responder.stop({ graceMs: 2_000 })));
    });

    const sweeper = runSweeper(
      { ...runtime, logger: logger.child({ component: 'sweeper' }) },
      { intervalMs: config.APPROVAL_SWEEP_INTERVAL_MS, signal, storeAvailable: () => context.storeStatus.available },
    );
    context.onShutdown('approval-sweeper', () => sweeper);
  },
};
