import { createHash, generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeTokenClaims } from '@toolplane/auth';
import {
  FlowRunRecord,
  InvocationRequest,
  LookupInvocationReply,
  LookupInvocationRequest,
  RunFlowReply,
  ToolplaneError,
  canonicalHash,
  commandSubject,
  deadLetterSubject,
  flowRunnerFilter,
  flowRunnerStream,
  flowRunnerSubject,
  flowRunIdentity,
  flowStepIdempotencyKey,
  flowToolId,
  invocationReplySubject,
  invocationRequestSubject,
  streams,
  type FlowDefinitionBody,
  type FlowVersion,
  type InvocationResult,
  type InvocationState,
  type JsonObject,
  type RunFlowRequest,
  type Scope,
  type ToolDefinition,
} from '@toolplane/contracts';
import { jetStreamEventStore, readAppendsMatching } from '@toolplane/event-store';
import { connectMessaging, consume, ensureConsumer, ensureStream, serve, type ConsumerHandle, type Messaging, type ServeHandle } from '@toolplane/messaging';
import { createLogger } from '@toolplane/service-kit';
import { eventually, testScope, uniqueName } from '@toolplane/testing';
import { handleFlowWork, natsOutcomeSender } from '../adapters/work-consumer.js';
import { stepTokenIssuer } from '../adapters/step-tokens.js';
import { planNext } from '../core/flow-interpreter.js';
import { flowFailpoints, runFlow, type FlowSource, type RunFlowDeps } from './run-flow.js';
import { getRun, listRuns } from './run-queries.js';
import { clientStepInvoker } from './step-invoker.js';

// FlowRunner's run handling on a real nats-server: the run's record in FlowRunner's stream, step calls published to
// the invocations work queue by the client SDK. A small stand-in plays the tool adapter: it takes this file's
// requests from the work queue and answers as the adapter does (one execution per idempotency key; the same key again
// joins the call and gets its result; lookups by key), and counts what it executed.

const infra = testScope('flow_runs');
const scope: Scope = { tenant: uniqueName('t').slice(0, 60), workspace: 'main' };
const principal = 'user:alice@example.com';

let messaging: Messaging;
let adapter: StandInAdapter;
let deps: RunFlowDeps;

/** The stand-in adapter's record of one call, by idempotency key. */
interface StandInCall {
  readonly request: InvocationRequest;
  readonly invocationId: string;
  readonly agentId: string | undefined;
  state: InvocationState;
  result?: InvocationResult;
  /** How often a request under this key arrived. */
  received: number;
}

interface StandInAdapter {
  readonly calls: Map<string, StandInCall>;
  /** Provider executions by tool id. */
  readonly executions: Map<string, number>;
  stop(): Promise<void>;
}

const signature = { alg: 'Ed25519' as const, keyId: 'stand-in', value: Buffer.alloc(64).toString('base64') };

/** A result as the adapter would send it: SUCCESS with content, or another ending with its failure. */
function resultOf(call: StandInCall, ending: { state: 'Observed'; structuredContent?: JsonObject; textContent?: string } | { state: 'Uncertain' | 'Failed'; code: 'UNKNOWN_OUTCOME' | 'TEMPORARY_UNAVAILABLE' }): InvocationResult {
  const now = new Date().toISOString();
  const base = {
    tenant: scope.tenant,
    workspace: scope.workspace,
    invocationId: call.invocationId,
    toolCallId: call.request.toolCallId ?? 'none',
    attempt: 1,
    idempotencyKey: call.request.idempotencyKey ?? 'none',
    principal,
    ...(call.agentId === undefined ? {} : { agentId: call.agentId, agentRevision: '1' }),
    toolId: call.request.toolId,
    toolVersion: '1',
    requestHash: canonicalHash(call.request.arguments),
    receivedAt: now,
    endedAt: now,
    signature,
  };
  if (ending.state === 'Observed') {
    return {
      status: 'SUCCESS',
      ...(ending.structuredContent === undefined ? {} : { structuredContent: ending.structuredContent }),
      ...(ending.textContent === undefined ? {} : { textContent: ending.textContent }),
      truncated: false,
      provenance: 'untrusted-tool-data',
      receipt: { ...base, state: 'Observed', resultHash: createHash('sha256').update('r').digest('hex') },
    };
  }
  return {
    status: ending.state === 'Uncertain' ? 'UNCERTAIN' : 'FAILED',
    truncated: false,
    provenance: 'untrusted-tool-data',
    receipt: { ...base, state: ending.state, failure: { code: ending.code, message: `stand-in ${ending.state}`, retryable: false } },
  };
}

/**
 * What each stand-in tool does: `t.echo` echoes its arguments, `t.text` answers text, `t.uncertain` ends Uncertain,
 * `t.park` waits for an approval that never comes, `t.hang` executes and never reports.
 */
function execute(call: StandInCall): void {
  const { toolId } = call.request;
  if (toolId === 't.park') {
    call.state = 'AwaitingApproval';
    return;
  }
  adapter.executions.set(toolId, (adapter.executions.get(toolId) ?? 0) + 1);
  if (toolId === 't.hang') {
    call.state = 'Executing';
    return;
  }
  const result =
    toolId === 't.echo'
      ? resultOf(call, { state: 'Observed', structuredContent: { echo: call.request.arguments } })
      : toolId === 't.text'
        ? resultOf(call, { state: 'Observed', textContent: 'plain words' })
        : resultOf(call, { state: 'Uncertain', code: 'UNKNOWN_OUTCOME' });
  call.result = result;
  call.state = result.receipt.state;
}

async function startStandInAdapter(m: Messaging): Promise<StandInAdapter> {
  const durable = uniqueName('stand_in_adapter');
  await ensureConsumer(m, streams.invocations.name, { durableName: durable, filterSubject: invocationRequestSubject(scope), ackWaitMs: 30_000 });
  const calls = new Map<string, StandInCall>();
  const requests: ConsumerHandle = await consume(m, {
    stream: streams.invocations.name,
    consumer: durable,
    schema: InvocationRequest,
    deadLetterSubject: deadLetterSubject(streams.invocations.name, durable),
    maxDeliver: 3,
    concurrency: 16,
    handler: async (request) => {
      const key = request.idempotencyKey ?? '';
      let call = calls.get(key);
      if (call === undefined) {
        const claims = decodeTokenClaims(request.contextToken);
        call = { request, invocationId: randomUUID(), agentId: claims?.kind === 'agent' ? claims.agentId : undefined, state: 'Received', received: 0 };
        calls.set(key, call);
        execute(call);
      }
      call.received += 1;
      if (call.result !== undefined && request.replyInbox !== undefined) {
        m.connection.publish(invocationReplySubject(scope, request.replyInbox), JSON.stringify({ ok: true, data: call.result }));
      }
      return Promise.resolve();
    },
  });
  const lookups: ServeHandle = await serve(m, {
    subject: commandSubject(scope, 'adapter', 'lookupInvocation'),
    queue: durable,
    requestSchema: LookupInvocationRequest,
    replySchema: LookupInvocationReply,
    handler: (request) => {
      const call = calls.get(request.idempotencyKey);
      if (call === undefined) return Promise.reject(new ToolplaneError('NOT_FOUND', `no call under ${request.idempotencyKey}`));
      return Promise.resolve({
        toolCallId: call.request.toolCallId ?? 'none',
        invocationId: call.invocationId,
        attempt: 1,
        state: call.state,
        ...(call.result === undefined ? {} : { result: call.result }),
      });
    },
  });
  return {
    calls,
    executions: new Map(),
    stop: async () => {
      await requests.stop();
      await lookups.stop();
    },
  };
}

/** The flows and definitions this file's runs find, by tool id and flow id. */
const definitions = new Map<string, ToolDefinition>();
const flowVersions = new Map<string, FlowVersion>();

const objectSchema = { type: 'object' };

function publishFlow(flowId: string, body: Omit<FlowDefinitionBody, 'inputSchema' | 'outputSchema'>, timeoutMs = 30_000): string {
  const name = `ops.${flowId}`;
  const at = new Date().toISOString();
  flowVersions.set(flowId, {
    tenant: scope.tenant,
    workspace: scope.workspace,
    flowId,
    version: 1,
    status: 'Published',
    active: true,
    body: { inputSchema: objectSchema, outputSchema: objectSchema, ...body },
    bodyHash: 'a'.repeat(64),
    createdBy: principal,
    createdAt: at,
    updatedBy: principal,
    updatedAt: at,
  });
  definitions.set(flowToolId(name), {
    tenant: scope.tenant,
    workspace: scope.workspace,
    name,
    mcpName: flowId,
    description: `the ${flowId} flow`,
    enabled: true,
    approval: 'Policy',
    sideEffectClass: 'WRITE',
    riskClass: 'LOW',
    inputSchema: objectSchema,
    outputSchema: objectSchema,
    timeoutMs,
    flow: { flowId, follow: 'active' },
    version: 1,
    etag: '"1"',
    createdBy: principal,
    createdAt: at,
    updatedBy: principal,
    updatedAt: at,
  });
  return flowToolId(name);
}

const flows: FlowSource = {
  definitionForTool: (_scope, toolId) => Promise.resolve(definitions.get(toolId)),
  flowVersion: (_scope, flowId) => Promise.resolve(flowVersions.get(flowId)),
};

function requestFor(toolId: string, input: JsonObject, options: { deadlineMs?: number; toolCallId?: string } = {}): RunFlowRequest {
  return {
    toolCallId: options.toolCallId ?? uniqueName('call'),
    invocationId: randomUUID(),
    attempt: 1,
    idempotencyKey: uniqueName('key'),
    toolId,
    toolVersion: '1',
    input,
    principal,
    agentId: 'agent-support',
    agentRevision: '7',
    correlationId: uniqueName('corr'),
    deadline: new Date(Date.now() + (options.deadlineMs ?? 20_000)).toISOString(),
    replySubject: `_INBOX.${uniqueName('flow_reply')}`,
  };
}

const never = new AbortController().signal;

beforeAll(async () => {
  messaging = await connectMessaging({ url: infra.natsUrl, name: 'flow-runs-int-test' });
  for (const stream of [flowRunnerStream, streams.invocations, streams.deadLetters]) await ensureStream(messaging, stream);
  adapter = await startStandInAdapter(messaging);
  deps = {
    runs: jetStreamEventStore(messaging, { stream: flowRunnerStream.name, subjectOf: (id) => flowRunnerSubject('run', id), schema: FlowRunRecord }),
    flows,
    steps: clientStepInvoker(messaging, stepTokenIssuer({ kid: 'flow-runner-test-1', privateKey: generateKeyPairSync('ed25519').privateKey })),
    planNext,
    clock: () => new Date(),
    failpoint: () => undefined,
  };
});

afterAll(async () => {
  await adapter?.stop();
  await messaging?.drain();
});

const twoSteps = {
  steps: [
    { id: 'first', kind: 'call' as const, tool: 't.echo', arguments: '{"n": input.n}' },
    { id: 'second', kind: 'call' as const, tool: 't.text', arguments: '{"after": steps.first.echo.n}' },
  ],
  output: '{"n": steps.first.echo.n, "said": steps.second.text}',
};

const queries = () => ({
  runs: deps.runs,
  steps: deps.steps,
  readAllRuns: (where: Scope) => readAppendsMatching(messaging, { stream: flowRunnerStream.name, filter: flowRunnerFilter('run', where), schema: FlowRunRecord }),
});

describe('running a flow-backed call', () => {
  it('completes a two-step run, replies through the work handler, and replays the same outcome for a duplicate without calling a step again', async () => {
    const toolId = publishFlow('pair', twoSteps);
    const request = requestFor(toolId, { n: 4 });
    const replies: RunFlowReply[] = [];
    const subscription = messaging.connection.subscribe(request.replySubject, { callback: (_error, message) => {
        replies.push(RunFlowReply.parse(JSON.parse(message.string())));
      },
    });
    await handleFlowWork({ deps, sender: natsOutcomeSender(messaging), logger: createLogger({ service: 'flow-runner-test', level: 'silent' }) }, request, `tp.v1.flowwork.${scope.tenant}.${scope.workspace}`, never);
    await eventually('the reply', () => (replies.length > 0 ? replies[0] : undefined));
    subscription.unsubscribe();
    const { flowRunId, workItemId } = flowRunIdentity(scope, request.toolCallId);
    expect(replies[0]).toEqual({
      ok: true,
      data: {
        status: 'Completed',
        output: { n: 4, said: 'plain words' },
        receipt: { workItemId, flowRunId, flowId: 'pair', flowVersion: 1, definitionName: 'ops.pair', toolCallId: request.toolCallId, correlationId: request.correlationId },
      },
    });

    // The steps ran as the flow's agent, under their own keys, tied to the run.
    const first = adapter.calls.get(flowStepIdempotencyKey(flowRunId, 'first', 1));
    expect(first?.agentId).toBe('flow.pair');
    expect(first?.request).toMatchObject({ flowRunId, workItemId, correlationId: request.correlationId, causationId: request.invocationId, toolCallId: `${flowRunId}:first:1`, arguments: { n: 4 } });

    const again = await runFlow(deps, scope, { ...request, invocationId: randomUUID(), attempt: 2 }, never);
    expect(again).toEqual((replies[0] as { data: unknown }).data);
    expect(adapter.calls.get(flowStepIdempotencyKey(flowRunId, 'first', 1))?.received).toBe(1);
    expect(adapter.calls.get(flowStepIdempotencyKey(flowRunId, 'second', 1))?.received).toBe(1);

    const other = await runFlow(deps, scope, { ...request, input: { n: 5 } }, never);
    expect(other).toMatchObject({ status: 'Failed', failure: { code: 'CONFLICT' } });
    expect(other.receipt).toBeUndefined();

    const { run } = await getRun(queries(), scope, flowRunId);
    expect(run).toMatchObject({ state: 'Completed', definitionName: 'ops.pair', flowVersion: 1, principal });
    expect(run.steps.map((step) => [step.stepId, step.status, step.attempt, step.invocationId === first?.invocationId])).toEqual([
      ['first', 'Succeeded', 1, true],
      ['second', 'Succeeded', 1, false],
    ]);
    expect(JSON.stringify(run)).not.toContain('plain words');
    const listed = await listRuns(queries(), scope, { definitionName: 'ops.pair', limit: 10 });
    expect(listed.runs.map((summary) => [summary.flowRunId, summary.state, summary.stepCount])).toEqual([[flowRunId, 'Completed', 2]]);
  });

  it('resumes a run whose handler stopped after step 1 was recorded without calling step 1 again; one stopped before step 2 was recorded re-joins step 2 by its key', async () => {
    const toolId = publishFlow('resume', twoSteps);
    const request = requestFor(toolId, { n: 9 });
    const { flowRunId } = flowRunIdentity(scope, request.toolCallId);
    const stopAt = (point: string) => {
      const stop = new AbortController();
      return { signal: stop.signal, deps: { ...deps, failpoint: (name: string) => name === point && stop.abort() } };
    };

    const afterFirst = stopAt(`${flowFailpoints.afterStepRecorded}.first`);
    await expect(runFlow(afterFirst.deps, scope, request, afterFirst.signal)).rejects.toMatchObject({ code: 'CANCELLED' });
    expect((await getRun(queries(), scope, flowRunId)).run.steps.map((step) => [step.stepId, step.status])).toEqual([['first', 'Succeeded']]);

    const beforeSecond = stopAt(`${flowFailpoints.beforeStepOutcome}.second`);
    await expect(runFlow(beforeSecond.deps, scope, request, beforeSecond.signal)).rejects.toMatchObject({ code: 'CANCELLED' });
    const parked = (await getRun(queries(), scope, flowRunId)).run;
    expect(parked.state).toBe('Running');
    expect(parked.steps.map((step) => [step.stepId, step.status, step.invocation?.state])).toEqual([
      ['first', 'Succeeded', undefined],
      ['second', 'Started', 'Observed'],
    ]);

    const resumed = await runFlow(deps, scope, request, never);
    expect(resumed).toMatchObject({ status: 'Completed', output: { n: 9, said: 'plain words' } });
    const first = adapter.calls.get(flowStepIdempotencyKey(flowRunId, 'first', 1));
    const second = adapter.calls.get(flowStepIdempotencyKey(flowRunId, 'second', 1));
    expect(first?.received).toBe(1);
    // Step 2 was asked for again under the same key: the same request message (dropped as a duplicate by the work
    // queue), its outcome learnt by looking the key up; it was executed once.
    expect(second?.received).toBe(1);
    expect(second?.result?.status).toBe('SUCCESS');
    const { run } = await getRun(queries(), scope, flowRunId);
    expect(run.steps.map((step) => [step.stepId, step.status, step.attempt])).toEqual([
      ['first', 'Succeeded', 1],
      ['second', 'Succeeded', 1],
    ]);
  });

  it('ends the run Uncertain when a step ends UNCERTAIN, and never calls the steps after it', async () => {
    const toolId = publishFlow('doubt', {
      steps: [
        { id: 'charge', kind: 'call', tool: 't.uncertain', arguments: '{}' },
        { id: 'notify', kind: 'call', tool: 't.echo', arguments: '{"x": 1}' },
      ],
      output: '{"done": true}',
    });
    const request = requestFor(toolId, {});
    const outcome = await runFlow(deps, scope, request, never);
    expect(outcome).toMatchObject({ status: 'Uncertain', failure: { code: 'UNKNOWN_OUTCOME' }, receipt: { flowId: 'doubt' } });
    const { flowRunId } = flowRunIdentity(scope, request.toolCallId);
    expect(adapter.calls.has(flowStepIdempotencyKey(flowRunId, 'notify', 1))).toBe(false);
    const { run } = await getRun(queries(), scope, flowRunId);
    expect(run).toMatchObject({ state: 'Uncertain', failedStepId: 'charge' });
    // Asked again (the adapter's next attempt), it answers the same and calls nothing.
    expect(await runFlow(deps, scope, { ...request, invocationId: randomUUID(), attempt: 2 }, never)).toEqual(outcome);
    expect(adapter.calls.get(flowStepIdempotencyKey(flowRunId, 'charge', 1))?.received).toBe(1);
  });

  it('stops at the deadline: Failed TIMEOUT while a step waits for an approval, Uncertain while one executes without reporting; both answered before the deadline', async () => {
    const parkTool = publishFlow('park', { steps: [{ id: 'gate', kind: 'call', tool: 't.park', arguments: '{}' }], output: '{}' });
    const hangTool = publishFlow('hang', { steps: [{ id: 'work', kind: 'call', tool: 't.hang', arguments: '{}' }], output: '{}' });
    const parkRequest = requestFor(parkTool, {}, { deadlineMs: 4_000 });
    const hangRequest = requestFor(hangTool, {}, { deadlineMs: 4_000 });
    const [parked, hung] = await Promise.all([runFlow(deps, scope, parkRequest, never), runFlow(deps, scope, hangRequest, never)]);
    const answeredAt = Date.now();
    expect(parked).toMatchObject({ status: 'Failed', failure: { code: 'TIMEOUT' }, receipt: { flowId: 'park' } });
    expect(hung).toMatchObject({ status: 'Uncertain', failure: { code: 'UNKNOWN_OUTCOME' }, receipt: { flowId: 'hang' } });
    expect(answeredAt).toBeLessThan(Math.max(Date.parse(parkRequest.deadline), Date.parse(hangRequest.deadline)));
    const { run } = await getRun(queries(), scope, flowRunIdentity(scope, hangRequest.toolCallId).flowRunId);
    expect(run).toMatchObject({ state: 'Uncertain', failedStepId: 'work' });
    expect(run.steps[0]).toMatchObject({ stepId: 'work', status: 'Started', invocation: { state: 'Executing' } });
    // A call whose deadline passed before its run could start is refused without a run.
    const late = await runFlow(deps, scope, requestFor(parkTool, {}, { deadlineMs: -1 }), never);
    expect(late).toMatchObject({ status: 'Failed', failure: { code: 'TIMEOUT' } });
    expect(late.receipt).toBeUndefined();
  });
});
