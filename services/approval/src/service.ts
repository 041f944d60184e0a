import { ApprovalRequested, ApprovalStreamEvent, RegistryEvent, TrustedKeysSetting, approvalStream, approvalStreamSubject, deadLetterSubject, eventFilter, streams } from '@toolplane/contracts';
import { createTokenVerifier } from '@toolplane/auth';
import { jetStreamEventStore, storedAppendSchema } from '@toolplane/event-store';
import { consume } from '@toolplane/messaging';
import { baseServiceConfig, logConsumerDiagnostic, millisecondsSetting, type ServiceDefinition } from '@toolplane/service-kit';
import { projectApproval } from './adapters/approval-projector.js';
import { approvals, collections } from './adapters/collections.js';
import { relayApprovalEvents } from './adapters/event-relay.js';
import { onApprovalRequested } from './app/approval-requests.js';
import type { ApprovalRuntime } from './app/approval-runtime.js';
import { serveApprovalCommands } from './app/commands.js';
import { onRegistryEvent } from './app/registry-changes.js';
import { runSweeper } from './app/sweeper.js';
import { approvalConsumers } from './consumers.js';

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
  collections,
  start: async (context) => {
    const { config, logger, messaging, store, signal } = context;
    const events = jetStreamEventStore(messaging, { stream: approvalStream.name, subjectOf: approvalStreamSubject, schema: ApprovalStreamEvent });
    const runtime: ApprovalRuntime = { events, approvals: store.collection(approvals), messaging, clock: () => new Date(), logger };
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

    const sweeper = runSweeper({ ...runtime, logger: logger.child({ component: 'sweeper' }) }, { intervalMs: config.APPROVAL_SWEEP_INTERVAL_MS, signal });
    context.onShutdown('approval-sweeper', () => sweeper);
  },
};
