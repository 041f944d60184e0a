import { setMaxListeners } from 'node:events';
import { z } from 'zod';
import { FlowRunRecord, TrustedKeysSetting, flowDefinitionNameOf, flowRunnerFilter, flowRunnerStream, flowRunnerSubject, flowWorkStream, streams, type Scope } from '@toolplane/contracts';
import { createTokenVerifier } from '@toolplane/auth';
import { jetStreamEventStore, readAppendsMatching } from '@toolplane/event-store';
import { ensureConsumer, type ServeDiagnostic } from '@toolplane/messaging';
import { failpoint, logConsumerDiagnostic, millisecondsSetting, storelessServiceConfig, type Logger, type StorelessServiceDefinition } from '@toolplane/service-kit';
import { StepSigningKeySetting, stepTokenIssuer } from './adapters/step-tokens.js';
import { consumeFlowWork, flowWorkConsumer, natsOutcomeSender } from './adapters/work-consumer.js';
import { readDefinition, readFlow } from './app/management-context.js';
import { flowRunnerRecords, serveManagement, type FlowRunnerRecords } from './app/management.js';
import type { FlowSource, RunFlowDeps } from './app/run-flow.js';
import { serveRunQueries } from './app/run-queries.js';
import { clientStepInvoker } from './app/step-invoker.js';
import { definitionDocument } from './core/definition-aggregate.js';
import { activeVersionOf, flowVersionDocument, flowVersionOf } from './core/flow-aggregate.js';
import { planNext } from './core/flow-interpreter.js';

// The work consumer's ack wait unless FLOW_RUNNER_ACK_WAIT_MS says otherwise.
const defaultAckWaitMs = 10_000;

/** The flow-runner service's settings (no MongoDB: every aggregate and listing is read from FlowRunner's stream). */
export const flowRunnerConfig = storelessServiceConfig({ httpPort: 7106 }).extend({
  /** Per tenant, the public keys operator tokens are verified with: `{"<tenant>": [<public JWK with kid>, …]}`; unset trusts no tenant. */
  TOOLPLANE_TRUSTED_KEYS: TrustedKeysSetting.optional(),
  /** The private Ed25519 JWK (with kid) step context tokens are signed with; its public half goes into the adapter's TOOLPLANE_TRUSTED_KEYS. */
  FLOW_RUNNER_SIGNING_KEY: StepSigningKeySetting,
  /** Runs this replica handles at once (each holds its work message until it ends, parked approvals included). */
  FLOW_RUNNER_MAX_CONCURRENT_RUNS: z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(1, 'must be at least 1').max(1024, 'must be at most 1024').default(32),
  /**
   * The work consumer's ack wait: a run whose replica stops sending in-progress heartbeats (every half of it; the
   * process died) is redelivered to another replica after this long, which resumes it.
   */
  FLOW_RUNNER_ACK_WAIT_MS: millisecondsSetting(defaultAckWaitMs),
});

/** FlowRunner's parsed settings. */
export type FlowRunnerConfig = z.infer<typeof flowRunnerConfig>;

/** The FlowRun event store on its subjects of FlowRunner's private stream. */
function runStore(messaging: Parameters<typeof jetStreamEventStore>[0]) {
  return jetStreamEventStore(messaging, { stream: flowRunnerStream.name, subjectOf: (id) => flowRunnerSubject('run', id), schema: FlowRunRecord });
}

/** Where a run finds its definition and Flow version: the Flow and ToolDefinition aggregates' own records. */
export function recordFlowSource(records: FlowRunnerRecords): FlowSource {
  return {
    async definitionForTool(scope: Scope, toolId: string, signal?: AbortSignal) {
      const name = flowDefinitionNameOf(toolId);
      if (name === undefined) return undefined;
      return definitionDocument(scope, await readDefinition(records, scope, name, signal));
    },
    async flowVersion(scope: Scope, flowId: string, version: number | 'active', signal?: AbortSignal) {
      const flow = await readFlow(records, scope, flowId, signal);
      const state = version === 'active' ? activeVersionOf(flow) : flowVersionOf(flow, version);
      return state === undefined ? undefined : flowVersionDocument(scope, flowId, flow, state);
    },
  };
}

/** Logs what a responder could not answer: the kind, subject and code only (never a body or token). */
const serveLog = (logger: Logger) => (diagnostic: ServeDiagnostic) =>
  logger.warn({ type: diagnostic.type, subject: diagnostic.subject, ...('reply' in diagnostic ? { code: diagnostic.reply.code } : { err: diagnostic.error }) }, 'request not answered');

/** FlowRunner: publishes versioned Flows as governed tools through ToolDefinitions and runs their calls through the governed pipeline. */
export const flowRunnerService: StorelessServiceDefinition<FlowRunnerConfig> = {
  name: 'flow-runner',
  store: 'none',
  config: flowRunnerConfig,
  // Its own record and work queue; the invocation requests its steps are published to; where dead letters go.
  streams: [flowRunnerStream, flowWorkStream, streams.invocations, streams.deadLetters],
  consumers: [{ stream: flowWorkStream.name, consumer: flowWorkConsumer(defaultAckWaitMs) }],
  start: async (context) => {
    const { config, logger, messaging, signal } = context;
    // One long-lived abort listener per responder (ten management operations, two run queries) and the consumer: a
    // fixed count, not a leak, above Node's default warning threshold of ten.
    setMaxListeners(32, signal);
    const trustedKeys = config.TOOLPLANE_TRUSTED_KEYS ?? {};
    if (Object.keys(trustedKeys).length === 0) logger.warn('TOOLPLANE_TRUSTED_KEYS names no tenant: every operator token will be refused');
    const clock = () => new Date();
    const verifier = createTokenVerifier(trustedKeys, { clock, clockToleranceSeconds: config.TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S });
    const steps = clientStepInvoker(messaging, stepTokenIssuer(config.FLOW_RUNNER_SIGNING_KEY, clock));
    const runs = runStore(messaging);
    const deps: RunFlowDeps = { runs, flows: recordFlowSource(flowRunnerRecords(messaging)), steps, planNext, clock, failpoint };
    logger.info({ kid: config.FLOW_RUNNER_SIGNING_KEY.kid }, 'step context tokens are signed with FLOW_RUNNER_SIGNING_KEY');

    const managementLog = logger.child({ component: 'management' });
    const management = await serveManagement({ messaging, verifier, signal, onDiagnostic: serveLog(managementLog) });
    context.onShutdown('management', () => Promise.all(management.map((handle) => handle.stop({ graceMs: 2_000 }))).then(() => undefined));

    const queriesLog = logger.child({ component: 'run-queries' });
    const queries = await serveRunQueries(messaging, {
      queries: { runs, steps, readAllRuns: (scope, readSignal) => readAppendsMatching(messaging, { stream: flowRunnerStream.name, filter: flowRunnerFilter('run', scope), schema: FlowRunRecord, ...(readSignal === undefined ? {} : { signal: readSignal }) }) },
      verifier,
      signal,
      onDiagnostic: serveLog(queriesLog),
    });
    context.onShutdown('run-queries', () => Promise.all(queries.map((handle) => handle.stop({ graceMs: 2_000 }))).then(() => undefined));

    const workLog = logger.child({ component: 'runs' });
    // Declared above with the default ack wait; an existing consumer (or another setting) is brought to the setting.
    await ensureConsumer(messaging, flowWorkStream.name, flowWorkConsumer(config.FLOW_RUNNER_ACK_WAIT_MS));
    const work = await consumeFlowWork(messaging, {
      deps,
      sender: natsOutcomeSender(messaging),
      concurrency: config.FLOW_RUNNER_MAX_CONCURRENT_RUNS,
      logger: workLog,
      onDiagnostic: logConsumerDiagnostic(workLog),
    });
    // Runs in flight are cut at once: their messages go back to the queue and another replica resumes each from its record.
    context.onShutdown('runs', () => work.stop({ graceMs: 0 }));
  },
};
