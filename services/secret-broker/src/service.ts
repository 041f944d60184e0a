import type { z } from 'zod';
import { CachedAccessToken, LifecycleEvent, commandFilter, connectionSubject, eventMsgId, scopeOfSubject, secretBrokerContracts, secretBrokerStream, secretBrokerTokenBucket, streams, subjectOfEvent, toWireError, type Scope } from '@toolplane/contracts';
import { createTokenVerifier, verifyOperator, type TokenVerifier } from '@toolplane/auth';
import { openKv, publish, purgeSubject, serve, type ServeDiagnostic } from '@toolplane/messaging';
import { redactedPaths, type Logger, type ServiceContext, type ServiceDefinition } from '@toolplane/service-kit';
import { brokerAccess, type BrokerAccess } from './access.js';
import { createAccessTokens } from './access-tokens.js';
import { createBroker, type Broker } from './broker.js';
import { collections, connections, secretLeases } from './collections.js';
import { secretBrokerConfig, type SecretBrokerConfig } from './config.js';
import { createCredentialVault } from './credential-vault.js';
import { connectionEventStore, leaseEventStore } from './event-stores.js';
import { projectorConsumer, startProjector } from './projector.js';
import { runSweeper } from './sweeper.js';
import { tokenEndpointClient } from './token-endpoint.js';

export { secretBrokerConfig };

/**
 * Log paths censored on top of the service kit's: where a credential could sit if an object that carries one
 * were ever logged whole. The broker logs ids and codes only; this is the second fence.
 */
export const secretBrokerRedactedPaths: readonly string[] = [
  'credential',
  '*.credential',
  '*.*.credential',
  'password',
  'clientSecret',
  'client_secret',
  'access_token',
  'accessToken',
  'apiKey',
  'plaintext',
  'sealed',
  'secret',
  '*.client_secret',
  '*.access_token',
  '*.plaintext',
  '*.sealed',
  '*.*.password',
  '*.*.clientSecret',
  '*.*.apiKey',
  '*.*.token',
  '*.*.accessToken',
  'request.body',
  'body',
];

const queue = 'secret-broker';

/** SecretBroker: keeps connection credentials encrypted at rest and leases them, sealed, to the tool adapter for one invocation. */
export const secretBrokerService: ServiceDefinition<SecretBrokerConfig> = {
  name: 'secret-broker',
  config: secretBrokerConfig,
  streams: [streams.events, secretBrokerStream],
  consumers: [{ stream: secretBrokerStream.name, consumer: projectorConsumer }],
  // Leases and connection changes run on the broker's private stream; only listConnections and the sweeper read the
  // read models, which the projector catches up once MongoDB answers.
  storeReadiness: 'optional',
  collections,
  start: startSecretBroker,
};

async function startSecretBroker(context: ServiceContext<SecretBrokerConfig>): Promise<void> {
  const { config, messaging, store, signal } = context;
  const logger = context.logger.child({ component: 'broker' }, { redact: { paths: [...redactedPaths, ...secretBrokerRedactedPaths], censor: '[redacted]' } });
  const now = () => new Date();
  const keyring = config.SECRET_BROKER_KEKS;
  logger.info({ kekIds: keyring.ids(), currentKekId: keyring.currentId, recipients: [...config.SECRET_BROKER_RECIPIENTS.keys()] }, 'keys loaded');

  const vault = createCredentialVault(keyring);
  const tokenBucket = await openKv(messaging, { name: secretBrokerTokenBucket.name, description: secretBrokerTokenBucket.description, history: 1, storage: 'file' }, CachedAccessToken, { signal });
  const tokens = createAccessTokens({
    bucket: tokenBucket,
    vault,
    fetchToken: tokenEndpointClient({ timeoutMs: config.SECRET_BROKER_TOKEN_TIMEOUT_MS, allowHttp: config.SECRET_BROKER_ALLOW_HTTP_TOKEN_ENDPOINTS }),
    refreshMarginMs: config.SECRET_BROKER_TOKEN_REFRESH_MARGIN_MS,
    uncachedLifetimeMs: config.SECRET_BROKER_LEASE_TTL_MS,
    now,
  });
  const connectionEvents = connectionEventStore(messaging);
  const leaseEvents = leaseEventStore(messaging);
  const purgeOlderRecords = async (scope: Scope, connectionId: string, purgeSignal?: AbortSignal) => {
    await purgeSubject(messaging, secretBrokerStream.name, connectionSubject(scope, connectionId), purgeSignal === undefined ? {} : { signal: purgeSignal });
  };
  const broker = createBroker({
    connectionEvents,
    leaseEvents,
    connections: store.collection(connections),
    vault,
    tokens,
    recipients: config.SECRET_BROKER_RECIPIENTS,
    publishEvent: async (event, eventSignal) => {
      await publish(messaging, { subject: subjectOfEvent(event), schema: LifecycleEvent, message: event, msgId: eventMsgId(event), signal: eventSignal });
    },
    purgeOlderRecords,
    policy: { allowHttpTokenEndpoints: config.SECRET_BROKER_ALLOW_HTTP_TOKEN_ENDPOINTS },
    maxLeaseTtlMs: config.SECRET_BROKER_LEASE_TTL_MS,
    now,
    logger,
  });

  const projector = await startProjector({
    messaging,
    connections: store.collection(connections),
    leases: store.collection(secretLeases),
    logger: logger.child({ component: 'projector' }),
    signal,
    storeStatus: context.storeStatus,
  });
  context.onShutdown('projector', () => projector.stop({ graceMs: 2_000 }));

  const trustedKeys = config.TOOLPLANE_TRUSTED_KEYS ?? {};
  if (Object.keys(trustedKeys).length === 0) logger.warn('TOOLPLANE_TRUSTED_KEYS names no tenant: every connection command will be refused');
  const verifier = createTokenVerifier(trustedKeys, { clockToleranceSeconds: config.TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S });
  for (const operation of Object.keys(secretBrokerContracts) as (keyof Broker)[]) {
    await serveOperation(context, broker, verifier, operation, logger);
  }

  const sweeping = runSweeper(
    {
      connections: store.collection(connections),
      leases: store.collection(secretLeases),
      connectionEvents,
      leaseEvents,
      vault,
      purgeOlderRecords,
      currentKekId: keyring.currentId,
      now,
      intervalMs: config.SECRET_BROKER_SWEEP_INTERVAL_MS,
      logger: logger.child({ component: 'sweeper' }),
      storeAvailable: () => context.storeStatus.available,
    },
    signal,
  );
  context.onShutdown('sweeper', () => sweeping);
}

async function serveOperation<K extends keyof Broker>(context: ServiceContext<SecretBrokerConfig>, broker: Broker, verifier: TokenVerifier, operation: K, logger: Logger): Promise<void> {
  const contract = secretBrokerContracts[operation];
  const access: BrokerAccess = brokerAccess[operation];
  // Whether the operation records who asked (create, rotate, revoke): the token's principal, never a body's `actor`.
  const recordsActor = 'actor' in contract.request.shape;
  const log = logger.child({ operation });
  const handle = broker[operation] as (scope: Scope, request: z.output<typeof contract.request>, signal: AbortSignal) => Promise<z.input<typeof contract.reply>>;
  await serve(context.messaging, {
    subject: commandFilter('secrets', { operation }),
    queue,
    requestSchema: contract.request,
    replySchema: contract.reply,
    signal: context.signal,
    handler: async (request, { subject, headers, signal }) => {
      const scope = scopeOfSubject(subject);
      log.debug({ tenant: scope.tenant, workspace: scope.workspace }, 'request');
      if (access === 'service') return handle(scope, request, signal);
      const operator = await verifyOperator(verifier, scope, headers, access);
      return handle(scope, recordsActor ? { ...request, actor: operator.principal } : request, signal);
    },
    onDiagnostic: (diagnostic) => logDiagnostic(log, diagnostic),
  });
}

function logDiagnostic(log: Logger, diagnostic: ServeDiagnostic): void {
  switch (diagnostic.type) {
    case 'handler_failed': {
      // Expected refusals are answers, not faults; only unexpected failures carry their error (never a request body).
      const wire = toWireError(diagnostic.error);
      if (wire.code === 'INTERNAL') log.error({ subject: diagnostic.subject, code: diagnostic.reply.code, err: diagnostic.error }, 'operation failed');
      else log.debug({ subject: diagnostic.subject, code: diagnostic.reply.code, reason: diagnostic.reply.message }, 'operation refused');
      return;
    }
    case 'invalid_request':
    case 'invalid_reply':
      log.warn({ subject: diagnostic.subject, code: diagnostic.reply.code, reason: diagnostic.reply.message }, diagnostic.type.replace('_', ' '));
      return;
    case 'reply_failed':
    case 'subscription_failed':
      log.error({ subject: diagnostic.subject, err: diagnostic.error }, diagnostic.type.replace('_', ' '));
  }
}
