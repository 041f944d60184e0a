import { ApprovalOutcomeEvent, InvocationRequest, SealingKeyId, TrustedKeysSetting, deadLetterSubject, eventFilter, flowWorkStream, invocationStateStream, streams } from '@toolplane/contracts';
import { createTokenVerifier } from '@toolplane/auth';
import { createMcpPool } from '@toolplane/mcp';
import { consume, createDescriptorCache, ensureConsumer, type ConsumerSpec } from '@toolplane/messaging';
import { baseServiceConfig, logConsumerDiagnostic, millisecondsSetting, serviceMetrics, type ServiceDefinition } from '@toolplane/service-kit';
import { toStoreError } from '@toolplane/store';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { approvalServiceGateway } from './adapters/approval-gateway.js';
import { secretBrokerLeaser } from './adapters/credential-leaser.js';
import { invocationMetrics } from './adapters/invocation-metrics.js';
import { jetStreamInvocationCalls } from './adapters/invocation-store.js';
import { natsFlowRunnerGateway } from './adapters/flow-runner-gateway.js';
import { McpExecutor } from './adapters/mcp-executor.js';
import { openPolicyBuckets } from './adapters/policy-buckets.js';
import { PolicyDocuments } from './adapters/policy-documents.js';
import { watchPolicies } from './adapters/policy-source.js';
import { RateCounters } from './adapters/rate-counters.js';
import { registryServerDirectory } from './adapters/server-directory.js';
import { handleApprovalDecision } from './app/approval-decisions.js';
import { receiptKeySetOf, serveAdapterCommands } from './app/adapter-commands.js';
import { serveEffectiveToolSet } from './app/effective-tool-set.js';
import { serveInvocationLookup } from './app/invocation-lookup.js';
import { handleInvocationRequest } from './app/invocation-handler.js';
import { natsOutlet } from './app/publishing.js';
import type { InvocationRuntime } from './app/invocation-runtime.js';
import { collections } from './collections.js';
import { ArgumentValidators } from './core/argument-validation.js';
import { receiptSigner } from './core/receipts.js';
import { SealingKeySetting } from './sealing-key-setting.js';
import { SigningKeySetting } from './signing-key-setting.js';

// The requests consumer's ack wait unless ADAPTER_ACK_WAIT_MS says otherwise.
const defaultAckWaitMs = 5_000;

/** The tool-adapter service's settings. */
export const toolAdapterConfig = baseServiceConfig({ httpPort: 7102 }).extend({
  /** Per tenant, the public keys context tokens are verified with: `{"<tenant>": [<public JWK with kid>, …]}`; unset trusts no tenant. */
  TOOLPLANE_TRUSTED_KEYS: TrustedKeysSetting.optional(),
  /**
   * The Ed25519 private key receipts are signed with (a private JWK, or base64 of a PKCS#8 DER key). Unset: an
   * ephemeral key, with a warning (receipts then verify only against this process's key).
   */
  ADAPTER_SIGNING_KEY: SigningKeySetting.optional(),
  /** The key id receipts name (a JWK's own `kid` wins). */
  ADAPTER_SIGNING_KEY_ID: z.string().regex(/^[!-~]{1,128}$/, 'must be 1-128 printable characters').default('tool-adapter'),
  /** The deadline of a call whose tool is unknown (a known tool's descriptor gives its own). */
  ADAPTER_DEFAULT_TIMEOUT_MS: millisecondsSetting(30_000),
  /**
   * How long a handler's claim on an invocation lasts without renewal (it is renewed with every write and every third
   * of it while the provider call runs); after it, another copy of the request or its redelivery takes the call over.
   */
  ADAPTER_PROCESSING_LEASE_MS: millisecondsSetting(5_000),
  /**
   * The requests consumer's ack wait: a request whose handler stops sending in-progress heartbeats (every half of
   * it; the process died) is redelivered after this long, so a dead adapter's calls are taken over within seconds.
   */
  ADAPTER_ACK_WAIT_MS: millisecondsSetting(defaultAckWaitMs),
  /** How long the adapter waits for the registry to say where a tool's server is. */
  ADAPTER_REGISTRY_TIMEOUT_MS: millisecondsSetting(5_000),
  /** How long the adapter waits for the approval service to consume a granted approval. */
  ADAPTER_APPROVAL_TIMEOUT_MS: millisecondsSetting(5_000),
  /**
   * The X25519 private key the secret broker seals credential leases to (base64url, the private half of this
   * adapter's entry in SECRET_BROKER_RECIPIENTS). Unset: calls of tools that need credentials are refused, with a warning.
   */
  TOOL_ADAPTER_SECRET_KEY: SealingKeySetting.optional(),
  /** This adapter's recipient key id in SECRET_BROKER_RECIPIENTS. */
  TOOL_ADAPTER_SECRET_KEY_ID: SealingKeyId.default('tool-adapter'),
  /** How long one lease request waits for the secret broker (asked again until the call's deadline). */
  ADAPTER_SECRET_BROKER_TIMEOUT_MS: millisecondsSetting(5_000),
  /** An MCP session (a stdio process) no call used for this long is closed: e.g. one holding a rotated credential. */
  ADAPTER_MCP_IDLE_TIMEOUT_MS: millisecondsSetting(300_000),
  /** `bubblewrap` (the default) runs every stdio server in its profile's sandbox and refuses calls when bwrap is missing; `off` as a plain child process. */
  MCP_STDIO_SANDBOX: z.enum(['bubblewrap', 'off'], { error: 'must be bubblewrap or off' }).default('bubblewrap'),
  /** Requests handled at once by this replica. */
  ADAPTER_CONCURRENCY: z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(1, 'must be at least 1').max(1024, 'must be at most 1024').default(32),
});

/** The tool-adapter's parsed settings. */
export type ToolAdapterConfig = z.infer<typeof toolAdapterConfig>;

/**
 * Classifies a handler's failure by the store's taxonomy before the consumer settles the message: a driver error
 * that an adapter let through untranslated (the database away) is then retried, not dead-lettered as INTERNAL.
 */
function storeFailure(what: string): (error: unknown) => never {
  return (error) => {
    throw toStoreError(error, what);
  };
}

/** The durable consumers of the tool adapter. */
export const toolAdapterConsumers = { requests: 'tool-adapter', approvals: 'tool-adapter-approvals' } as const;

// Retryable failures (the store or NATS briefly away, a call in flight elsewhere) are retried this often.
const maxDeliver = 10;

/** The durable consumer of invocation requests with its ack wait. */
function requestsConsumer(ackWaitMs: number): ConsumerSpec {
  return { durableName: toolAdapterConsumers.requests, description: 'Invocation requests for the governed pipeline.', ackWaitMs };
}

/** ToolAdapter: runs every invocation request through the governed pipeline; owns the ToolInvocation aggregate and its receipts. */
export const toolAdapterService: ServiceDefinition<ToolAdapterConfig> = {
  name: 'tool-adapter',
  config: toolAdapterConfig,
  // The invocation state is the adapter's private stream: its calls' records, arguments and results included.
  streams: [streams.invocations, streams.events, streams.deadLetters, invocationStateStream, flowWorkStream],
  consumers: [
    {
      stream: streams.invocations.name,
      consumer: requestsConsumer(defaultAckWaitMs),
    },
    {
      stream: streams.events.name,
      consumer: {
        durableName: toolAdapterConsumers.approvals,
        description: 'Approval decisions that resume or end parked invocations.',
        filterSubjects: (['ApprovalGranted', 'ApprovalRejected', 'ApprovalExpired', 'ApprovalVoided'] as const).map((type) => eventFilter({ type })),
        ackWaitMs: 30_000,
      },
    },
  ],
  // Nothing the adapter does reads MongoDB (it has no collection; calls, policies and counters live in JetStream):
  // it is ready, and governs calls, while MongoDB is away.
  storeReadiness: 'optional',
  collections,
  start: async (context) => {
    const { config, logger, messaging, signal } = context;
    const trustedKeys = config.TOOLPLANE_TRUSTED_KEYS ?? {};
    if (Object.keys(trustedKeys).length === 0) logger.warn('TOOLPLANE_TRUSTED_KEYS names no tenant: every context token will be refused');
    let signingKey = config.ADAPTER_SIGNING_KEY;
    if (signingKey === undefined) {
      logger.warn('ADAPTER_SIGNING_KEY is unset: receipts are signed with an ephemeral key no verifier knows');
      signingKey = { privateKey: generateKeyPairSync('ed25519').privateKey, keyId: undefined };
    }
    if (config.TOOL_ADAPTER_SECRET_KEY === undefined) logger.warn('TOOL_ADAPTER_SECRET_KEY is unset: calls of tools that need credentials will be refused');
    const clock = () => new Date();

    const descriptorLog = logger.child({ component: 'descriptors' });
    const descriptors = await createDescriptorCache(messaging, { signal, onProblem: (problem) => descriptorLog.warn(problem, 'descriptor read model problem') });
    context.onShutdown('descriptors', () => Promise.resolve(descriptors.close()));
    await descriptors.ready;

    // Profiles and policies (kill switches included) are answered from watched copies: nothing is governed until
    // both hold their whole bucket.
    const policyLog = logger.child({ component: 'policies' });
    const policyBuckets = await openPolicyBuckets(messaging, { signal });
    const policies = watchPolicies(policyBuckets, { signal, onProblem: (problem) => policyLog.warn(problem, 'policy copy problem') });
    context.onShutdown('policies', () => Promise.resolve(policies.close()));
    await policies.ready;
    const rateCounters = await RateCounters.open(messaging, { signal });

    const sandbox = { mode: config.MCP_STDIO_SANDBOX };
    const pool = createMcpPool({ idleTimeoutMs: config.ADAPTER_MCP_IDLE_TIMEOUT_MS, connect: { sandbox } });
    context.onShutdown('mcp-pool', () => pool.close());

    const executor = new McpExecutor(pool);
    const observer = invocationMetrics(serviceMetrics(context.metrics), () => executor.circuits());

    const receiptKey = { keyId: signingKey.keyId ?? config.ADAPTER_SIGNING_KEY_ID, privateKey: signingKey.privateKey };
    const runtime: InvocationRuntime = {
      messaging,
      calls: jetStreamInvocationCalls(messaging, config.ADAPTER_PROCESSING_LEASE_MS),
      outlet: natsOutlet(messaging),
      descriptors,
      servers: registryServerDirectory(messaging, { timeoutMs: config.ADAPTER_REGISTRY_TIMEOUT_MS, ttlMs: 30_000 }),
      executor,
      flows: natsFlowRunnerGateway(messaging, config.NATS_INBOX_PREFIX),
      approvals: approvalServiceGateway(messaging, config.ADAPTER_APPROVAL_TIMEOUT_MS),
      leaser:
        config.TOOL_ADAPTER_SECRET_KEY === undefined
          ? undefined
          : secretBrokerLeaser(messaging, { recipient: { keyId: config.TOOL_ADAPTER_SECRET_KEY_ID, privateKey: config.TOOL_ADAPTER_SECRET_KEY }, timeoutMs: config.ADAPTER_SECRET_BROKER_TIMEOUT_MS }),
      validators: new ArgumentValidators(),
      policies,
      rateCounters,
      verifier: createTokenVerifier(trustedKeys, { clock, clockToleranceSeconds: config.TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S }),
      signReceipt: receiptSigner(receiptKey),
      clock,
      elapsedMs: () => performance.now(),
      observer,
      newId: randomUUID,
      logger,
      defaultTimeoutMs: config.ADAPTER_DEFAULT_TIMEOUT_MS,
      sandbox,
    };

    const requestsLog = logger.child({ component: 'invocations' });
    // Declared above with the default ack wait; an existing consumer (or another setting) is brought to the setting.
    await ensureConsumer(messaging, streams.invocations.name, requestsConsumer(config.ADAPTER_ACK_WAIT_MS));
    const requests = await consume(messaging, {
      stream: streams.invocations.name,
      consumer: toolAdapterConsumers.requests,
      schema: InvocationRequest,
      handler: (request, delivery) => handleInvocationRequest({ ...runtime, logger: requestsLog }, request, delivery).catch(storeFailure('handling an invocation request')),
      deadLetterSubject: deadLetterSubject(streams.invocations.name, toolAdapterConsumers.requests),
      maxDeliver,
      concurrency: config.ADAPTER_CONCURRENCY,
      onDiagnostic: logConsumerDiagnostic(requestsLog),
    });
    context.onShutdown('invocations', () => requests.stop({ graceMs: 2_000 }));

    const approvalsLog = logger.child({ component: 'approval-decisions' });
    const decisions = await consume(messaging, {
      stream: streams.events.name,
      consumer: toolAdapterConsumers.approvals,
      schema: ApprovalOutcomeEvent,
      handler: (event, delivery) => handleApprovalDecision({ ...runtime, logger: approvalsLog }, event, delivery).catch(storeFailure('handling an approval decision')),
      deadLetterSubject: deadLetterSubject(streams.events.name, toolAdapterConsumers.approvals),
      maxDeliver,
      concurrency: 4,
      onDiagnostic: logConsumerDiagnostic(approvalsLog),
    });
    context.onShutdown('approval-decisions', () => decisions.stop({ graceMs: 2_000 }));

    const toolSets = await serveEffectiveToolSet({ ...runtime, logger: logger.child({ component: 'effective-tools' }) });
    context.onShutdown('effective-tools', () => toolSets.stop({ graceMs: 2_000 }));
    const commands = await serveAdapterCommands({ ...runtime, logger: logger.child({ component: 'commands' }) }, new PolicyDocuments(policyBuckets, policies), {
      receiptKeys: receiptKeySetOf(receiptKey),
    });
    context.onShutdown('commands', () => Promise.all(commands.map((handle) => handle.stop({ graceMs: 2_000 }))).then(() => undefined));
    const lookups = await serveInvocationLookup({ ...runtime, logger: logger.child({ component: 'invocation-lookup' }) });
    context.onShutdown('invocation-lookup', () => lookups.stop({ graceMs: 2_000 }));
  },
};
