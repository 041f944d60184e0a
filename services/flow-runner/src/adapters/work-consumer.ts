import { RunFlowReply, RunFlowRequest, TenantId, WorkspaceId, deadLetterSubject, flowWorkFilter, flowWorkStream, toWireError, ToolplaneError, type RunFlowOutcome, type Scope } from '@toolplane/contracts';
import { consume, type ConsumerDiagnostic, type ConsumerHandle, type ConsumerSpec, type Messaging } from '@toolplane/messaging';
import type { Logger } from '@toolplane/service-kit';
import { runFlow, type RunFlowDeps } from '../app/run-flow.js';

// FlowRunner's durable consumer of the flow work queue, shared by every replica: one replica holds a message for as
// long as its run runs (the messaging kit sends working() while the handler runs, so a live run is never taken over)
// and acks it only after the outcome was sent to the adapter. A replica that dies leaves the message unacked: after
// the ack wait it is redelivered to another, which resumes the run from its record. A replica that stops hands the
// message back at once (the run's handling aborts without an ending).

/** The durable consumer of the flow work queue. */
export const FLOW_WORK_CONSUMER = 'flow-runner';

// Deliveries of one execution before it is dead-lettered: each crash of a replica holding it is one.
const maxDeliver = 10;

/** The consumer's declaration: the whole work queue, an ack wait that a dead replica's run is taken over after. */
export function flowWorkConsumer(ackWaitMs: number): ConsumerSpec {
  return { durableName: FLOW_WORK_CONSUMER, description: 'Executions of flow-backed tools: one replica runs each.', filterSubject: flowWorkFilter(), ackWaitMs };
}

const tenantAt = 3;
const workspaceAt = 4;

/** The scope of a flow work subject (`tp.v1.flowwork.{tenant}.{workspace}`): the publisher's, pinned by NATS permissions. */
export function scopeOfFlowWorkSubject(subject: string): Scope {
  const tokens = subject.split('.');
  const tenant = TenantId.safeParse(tokens[tenantAt]);
  const workspace = WorkspaceId.safeParse(tokens[workspaceAt]);
  if (tokens.length !== 5 || !tenant.success || !workspace.success) throw new ToolplaneError('INVALID_ARGUMENT', `${subject} is not a flow work subject`);
  return { tenant: tenant.data, workspace: workspace.data };
}

/** Where outcomes go: the adapter's reply subject, over core NATS (not kept: the run's record is). */
export interface OutcomeSender {
  /** Publishes the reply and resolves once the server has it. */
  send(replySubject: string, reply: RunFlowReply): Promise<void>;
}

/** The outcome sender on a NATS connection. */
export function natsOutcomeSender(messaging: Messaging): OutcomeSender {
  return {
    async send(replySubject, reply) {
      messaging.connection.publish(replySubject, JSON.stringify(RunFlowReply.parse(reply)));
      await messaging.connection.flush();
    },
  };
}

/** What the consumer runs with. */
export interface FlowWorkOptions {
  readonly deps: RunFlowDeps;
  readonly sender: OutcomeSender;
  /** Runs handled at once by this replica. */
  readonly concurrency: number;
  readonly logger: Logger;
  readonly onDiagnostic?: (diagnostic: ConsumerDiagnostic) => void;
  readonly signal?: AbortSignal;
}

/** Handles one delivery: run (or resume, or replay) the flow, send the outcome; resolving acks the message. */
export async function handleFlowWork(options: Pick<FlowWorkOptions, 'deps' | 'sender' | 'logger'>, request: RunFlowRequest, subject: string, signal: AbortSignal): Promise<void> {
  const scope = scopeOfFlowWorkSubject(subject);
  let outcome: RunFlowOutcome;
  try {
    outcome = await runFlow(options.deps, scope, request, signal);
  } catch (error) {
    // Retried (redelivered, the run resumes): the replica stopping, or a dependency away. Anything else is a fault
    // the adapter is told of at once (instead of waiting out its deadline) before the message is dead-lettered.
    const wire = toWireError(error);
    if (!signal.aborted && !wire.retryable) {
      options.logger.error({ err: error, toolCallId: request.toolCallId, invocationId: request.invocationId }, 'flow run failed');
      await options.sender.send(request.replySubject, { ok: false, error: { code: wire.code, message: wire.message, retryable: false } });
    }
    throw error;
  }
  await options.sender.send(request.replySubject, { ok: true, data: outcome });
  options.logger.info({ toolCallId: request.toolCallId, invocationId: request.invocationId, status: outcome.status, flowRunId: outcome.receipt?.flowRunId }, 'flow run ended');
}

/** Starts consuming the flow work queue (the consumer must have been declared, see flowWorkConsumer). */
export function consumeFlowWork(messaging: Messaging, options: FlowWorkOptions): Promise<ConsumerHandle> {
  return consume(messaging, {
    stream: flowWorkStream.name,
    consumer: FLOW_WORK_CONSUMER,
    schema: RunFlowRequest,
    handler: (request, delivery) => handleFlowWork(options, request, delivery.subject, delivery.signal),
    deadLetterSubject: deadLetterSubject(flowWorkStream.name, FLOW_WORK_CONSUMER),
    maxDeliver,
    concurrency: options.concurrency,
    ...(options.onDiagnostic === undefined ? {} : { onDiagnostic: options.onDiagnostic }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
}
