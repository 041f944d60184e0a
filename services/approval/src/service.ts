import { ApprovalRequested, RegistryEvent, TrustedKeysSetting, deadLetterSubject, eventFilter, streams } from '@toolplane/contracts';
import { createTokenVerifier } from '@toolplane/auth';
import { consume } from '@toolplane/messaging';
import { baseServiceConfig, logConsumerDiagnostic, millisecondsSetting, type ServiceDefinition } from '@toolplane/service-kit';
import { onApprovalRequested } from './approval-requests.js';
import type { ApprovalRuntime } from './approval-runtime.js';
import { approvals, collections } from './collections.js';
import { serveApprovalCommands } from './commands.js';
import { onRegistryEvent } from './registry-changes.js';
import { runSweeper } from './sweeper.js';

/** The approval service's settings. */
export const approvalConfig = baseServiceConfig({ httpPort: 7103 }).extend({
  /**
   * Per tenant, the public keys operator tokens are verified with: `{"<tenant>": [<public JWK with kid>, …]}`.
   * Unset means no tenant is trusted (every token is refused, and a warning says so); a malformed value stops
   * the start.
   */
  TOOLPLANE_TRUSTED_KEYS: TrustedKeysSetting.optional(),
  /** How often a replica looks for expired approvals and unpublished events. */
  APPROVAL_SWEEP_INTERVAL_MS: millisecondsSetting(5_000),
  /** How long a transition's own writer has to publish its events before a sweeper republishes them. */
  APPROVAL_OUTBOX_GRACE_MS: millisecondsSetting(10_000),
});

/** The durable consumers of the approval service. */
export const approvalConsumers = {
  requests: 'approval',
  registry: 'approval-registry',
} as const;

// Retryable failures (the store or NATS briefly away) are retried this often before the message is dead-lettered.
const maxDeliver = 10;

/** ApprovalService: holds gated invocations for a human decision; owns the Approval aggregate. */
export const approvalService: ServiceDefinition<ReturnType<typeof approvalConfig.parse>> = {
  name: 'approval',
  config: approvalConfig,
  streams: [streams.events, streams.deadLetters],
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
  ],
  collections,
  start: async (context) => {
    const { config, logger, messaging, store, signal } = context;
    const runtime: ApprovalRuntime = { approvals: store.collection(approvals), messaging, clock: () => new Date(), logger };
    const trustedKeys = config.TOOLPLANE_TRUSTED_KEYS ?? {};
    if (Object.keys(trustedKeys).length === 0) logger.warn('TOOLPLANE_TRUSTED_KEYS names no tenant: every operator token will be refused');
    const verifier = createTokenVerifier(trustedKeys, { clock: runtime.clock, clockToleranceSeconds: config.TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S });

    // Consumers and responders stop in the shutdown steps, with a grace period for in-flight work (steps run in
    // reverse order, so before the store and NATS close); the sweeper stops with the start signal.
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
      maxDeliver,
      onDiagnostic: logConsumerDiagnostic(registryLog),
    });
    context.onShutdown('approval-registry', () => registry.stop({ graceMs: 2_000 }));

    const responders = await serveApprovalCommands(runtime, verifier);
    context.onShutdown('approval-commands', async () => {
      await Promise.all(responders.map((responder) => responder.stop({ graceMs: 2_000 })));
    });

    const sweeper = runSweeper(
      { ...runtime, logger: logger.child({ component: 'sweeper' }) },
      { intervalMs: config.APPROVAL_SWEEP_INTERVAL_MS, outboxGraceMs: config.APPROVAL_OUTBOX_GRACE_MS, signal },
    );
    context.onShutdown('approval-sweeper', () => sweeper);
  },
};
