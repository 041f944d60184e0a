// Traces end to end: the pipeline services and the MCP endpoint as processes exporting over OTLP/HTTP to a receiver in
// this process, which registers tracing too (the agent's side). A governed call through the SDK client, and one
// through the MCP endpoint by an MCP client that sends its trace context in `params._meta`, must each come out as ONE
// connected trace: from the caller's span through the adapter's consumer and stage spans and the adapter's `tools/call`
// to the downstream server, to the audit projector's consumer and read-model write spans. No argument value and no
// token appears anywhere in what was exported.
import { randomUUID } from 'node:crypto';
import { context, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalRequested } from '@toolplane/contracts';
import { createToolplaneClient, type ToolplaneClient } from '@toolplane/client';
import { connectMcp } from '@toolplane/mcp';
import { FixtureServer, fixtureServerPath } from '@toolplane/mcp/testing';
import { createLogger, startTracing, type Tracing } from '@toolplane/service-kit';
import { testScope } from '@toolplane/testing';
import { startHttpProcess, type HttpProcess } from './http-process.js';
import { otlpSpanKind, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';
import { agent, e2eTenantPolicy, registerServer, startPlatform, waitFor, waitForTools, type Platform } from './platform-harness.js';

const infra = testScope('tracing');
let receiver: OtlpReceiver;
let platform: Platform;
let endpoint: HttpProcess;
let tracing: Tracing;
let client: ToolplaneClient;
/** Every context token this file handed out: none may be exported. */
const issuedTokens: string[] = [];

const read = ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural'];
// The stages a READ call that runs passes, each with its span (the tool adapter's names, `toolplane.stage <STAGE>`).
const stagesOfACall = ['TOOL_RESOLUTION', 'SCHEMA_VALIDATION', 'AGENT_PERMISSION', 'TENANT_POLICY', 'SIDE_EFFECT_CLASSIFICATION', 'APPROVAL', 'CREDENTIAL_BROKER', 'EXECUTE', 'FINISH'];

const otelEnv = (): Record<string, string> => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' });

async function agentToken(): Promise<string> {
  const token = await platform.agentToken();
  issuedTokens.push(token);
  return token;
}

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  platform = await startPlatform(infra, 'tracing', { env: otelEnv() });
  await registerServer(platform, 'meta', [process.execPath, fixtureServerPath(FixtureServer.metaEcho)], {}, [{ tool: 'echo_meta', flags: read }]);
  // The same tool declared WRITE, which the tenant policy gates behind an approval.
  await registerServer(platform, 'gatedmeta', [process.execPath, fixtureServerPath(FixtureServer.metaEcho)], {}, [
    { tool: 'echo_meta', flags: ['--effect', 'write', '--risk', 'medium', '--idempotency', 'none'] },
  ]);
  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: ['meta.*', 'gatedmeta.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
  await platform.putTenantPolicy(e2eTenantPolicy({ gateWrites: true }));
  await waitForTools(platform, ['meta.echo_meta', 'gatedmeta.echo_meta']);
  endpoint = await startHttpProcess('mcp-endpoint', platform, () => ({ ...otelEnv(), MCP_ENDPOINT_CALL_TIMEOUT_MS: '30000' }));
  // The agent's side: this process exports its spans to the same receiver.
  tracing = startTracing({ serviceName: 'e2e-agent', env: otelEnv(), logger: createLogger({ service: 'e2e-agent', level: 'silent' }) });
  client = await createToolplaneClient({ messaging: platform.messaging, scope: platform.scope, contextToken: agentToken });
}, 300_000);

afterAll(async () => {
  await client?.close();
  await tracing?.stop();
  await endpoint?.stop();
  await platform?.stop();
  await receiver?.close();
});

/** A trace as received: its spans by id, its root, and whether every parent named is a span of it. */
interface ReceivedTrace {
  readonly spans: readonly ReceivedSpan[];
  readonly byId: ReadonlyMap<string, ReceivedSpan>;
  readonly roots: readonly ReceivedSpan[];
  /** Spans whose parent is not (yet) in the trace. */
  readonly orphans: readonly ReceivedSpan[];
}

function traceOf(traceId: string): ReceivedTrace {
  const spans = receiver.spans().filter((span) => span.traceId === traceId);
  const byId = new Map(spans.map((span) => [span.spanId, span]));
  return {
    spans,
    byId,
    roots: spans.filter((span) => span.parentSpanId === undefined),
    orphans: spans.filter((span) => span.parentSpanId !== undefined && !byId.has(span.parentSpanId)),
  };
}

/** The names of a span's ancestors, nearest first, as `service:name`. */
function ancestry(received: ReceivedTrace, span: ReceivedSpan): string[] {
  const names: string[] = [];
  for (let at = span.parentSpanId; at !== undefined; ) {
    const parent = received.byId.get(at);
    if (parent === undefined) break;
    names.push(`${parent.service}:${parent.name}`);
    at = parent.parentSpanId;
  }
  return names;
}

function only(received: ReceivedTrace, service: string, name: string): ReceivedSpan {
  const found = received.spans.filter((span) => span.service === service && span.name === name);
  expect(found.map((span) => `${span.service}:${span.name}`), `one ${service}:${name} span in the trace`).toEqual([`${service}:${name}`]);
  return found[0] as ReceivedSpan;
}

/** The spans of one governed call past the caller: each must be in the trace, for `waitFor` and the assertions. */
const pipelineSpans: readonly (readonly [string, string])[] = [
  ['tool-adapter', 'tool-adapter process'],
  ...stagesOfACall.map((stage) => ['tool-adapter', `toolplane.stage ${stage}`] as const),
  ['tool-adapter', 'tools/call echo_meta'],
  ['audit-projector', 'audit-projector process'],
  ['audit-projector', 'projector write batch'],
  ['audit-projector', 'projector write runtime_tool_calls'],
];

/** The projector's consumer spans in a trace: one per lifecycle event of the call it consumed (a call has several). */
const projectorSpans = (received: ReceivedTrace) => received.spans.filter((span) => span.service === 'audit-projector' && span.name === 'audit-projector process');

/**
 * Waits until the trace holds every span of the call, the projector's consumer spans of at least two of its events,
 * and is connected (the exporters send in batches, so one batch may hold the first event's span and not the next).
 */
async function completeTrace(traceId: string, callerSpans: readonly (readonly [string, string])[]): Promise<ReceivedTrace> {
  await tracing.flush();
  return waitFor(
    `the trace ${traceId} with every span of the call`,
    () => {
      const received = traceOf(traceId);
      const has = ([service, name]: readonly [string, string]) => received.spans.some((span) => span.service === service && span.name === name);
      return [...callerSpans, ...pipelineSpans].every(has) && projectorSpans(received).length >= 2 && received.orphans.length === 0 ? received : undefined;
    },
    60_000,
  );
}

/** The assertions both calls share: one tree, the adapter's path through its stages to the MCP call, the projector's write, and what the downstream server received. */
function expectOneGovernedTrace(received: ReceivedTrace, topmost: string, meta: unknown): void {
  expect(received.roots.map((span) => `${span.service}:${span.name}`)).toEqual([topmost]);
  expect(received.orphans).toEqual([]);

  const consumer = only(received, 'tool-adapter', 'tool-adapter process');
  expect(consumer.kind).toBe(otlpSpanKind.consumer);
  expect(consumer.attributes['messaging.system']).toBe('nats');

  for (const stage of stagesOfACall) {
    const span = only(received, 'tool-adapter', `toolplane.stage ${stage}`);
    expect(span.attributes['toolplane.stage']).toBe(stage);
    expect(ancestry(received, span), `the ${stage} stage runs under the adapter's consumer span`).toContain('tool-adapter:tool-adapter process');
  }

  const mcpCall = only(received, 'tool-adapter', 'tools/call echo_meta');
  expect(mcpCall.kind).toBe(otlpSpanKind.client);
  expect(mcpCall.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'echo_meta' });
  expect(ancestry(received, mcpCall)).toContain('tool-adapter:toolplane.stage EXECUTE');
  // The downstream server was handed the adapter's MCP span as its parent.
  expect(meta).toMatchObject({ traceparent: `00-${mcpCall.traceId}-${mcpCall.spanId}-01` });

  // One CONSUMER span per lifecycle event of the call, each under the adapter span that appended the event.
  const projected = projectorSpans(received);
  expect(projected.length).toBeGreaterThanOrEqual(2);
  for (const span of projected) {
    expect(span.kind).toBe(otlpSpanKind.consumer);
    expect(ancestry(received, span), 'the projector consumes an event the adapter appended in this call').toContain('tool-adapter:tool-adapter process');
  }
  // The projector writes the call's record once per batch of its events it folds (a parked call's events come in two).
  const writes = received.spans.filter((span) => span.service === 'audit-projector' && span.name === 'projector write runtime_tool_calls');
  expect(writes.length).toBeGreaterThanOrEqual(1);
  for (const write of writes) {
    expect(write.attributes['db.collection.name']).toBe('runtime_tool_calls');
    expect(ancestry(received, write).slice(0, 2)).toEqual(['audit-projector:projector write batch', 'audit-projector:audit-projector process']);
    expect(ancestry(received, write).at(-1)).toBe(topmost);
  }
}

/** Nothing exported holds the argument value or any token this file issued. */
function expectNothingSecretExported(canary: string): void {
  const exported = receiver.rawBodies().join('\n');
  expect(exported.length).toBeGreaterThan(0);
  expect(exported).not.toContain(canary);
  for (const token of issuedTokens) {
    expect(exported).not.toContain(token);
    // A JWT's signature alone is as good a leak.
    expect(exported).not.toContain(token.split('.')[2] ?? token);
  }
  expect(exported).not.toMatch(/bearer /i);
}

describe('traces', () => {
  it('follow a governed call from the SDK client through the adapter’s stages and MCP call to the projector’s write, as one tree', { timeout: 120_000 }, async () => {
    const canary = `canary-${randomUUID()}`;
    const result = await client.invoke('meta.echo_meta', { text: canary }, { idempotencyKey: `traced-${randomUUID()}` });
    expect(result.status).toBe('SUCCESS');

    const rootName = 'e2e-agent:toolplane.invoke meta.echo_meta';
    await tracing.flush();
    const invoked = await waitFor('the client span', () => receiver.spans().find((span) => span.service === 'e2e-agent' && span.name === 'toolplane.invoke meta.echo_meta'));
    expect(invoked.kind).toBe(otlpSpanKind.client);
    expect(invoked.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'meta.echo_meta',
      'toolplane.tenant': platform.scope.tenant,
      'toolplane.workspace': platform.scope.workspace,
      'toolplane.tool_call_id': result.receipt.toolCallId,
    });

    const received = await completeTrace(invoked.traceId, [['e2e-agent', 'toolplane.invoke meta.echo_meta']]);
    expectOneGovernedTrace(received, rootName, result.structuredContent?.['meta']);
    expect(only(received, 'tool-adapter', 'toolplane.stage EXECUTE').attributes['toolplane.tool_call_id']).toBe(result.receipt.toolCallId);
    expect(received.byId.get(only(received, 'tool-adapter', 'tool-adapter process').parentSpanId ?? '')?.name).toBe('toolplane.invoke meta.echo_meta');
    expectNothingSecretExported(canary);
  });

  it('follow a call through the MCP endpoint, whose span continues the `_meta.traceparent` the MCP client sent', { timeout: 120_000 }, async () => {
    const canary = `canary-${randomUUID()}`;
    const token = await agentToken();
    const url = `${endpoint.url}/mcp/${platform.scope.tenant}/${platform.scope.workspace}`;
    const turn = trace.getTracer('e2e-agent').startSpan('agent turn');
    let meta: unknown;
    try {
      await context.with(trace.setSpan(context.active(), turn), async () => {
        const session = await connectMcp({ transport: 'http', url, headers: { Authorization: `Bearer ${token}` } }, { requestTimeoutMs: 60_000 });
        try {
          const answer = await session.callTool('meta.echo_meta', { text: canary });
          expect(answer.isError).toBe(false);
          meta = answer.structuredContent?.['meta'];
        } finally {
          await session.close();
        }
      });
    } finally {
      turn.end();
    }

    const received = await completeTrace(turn.spanContext().traceId, [
      ['e2e-agent', 'agent turn'],
      ['e2e-agent', 'tools/call meta.echo_meta'],
      ['mcp-endpoint', 'tools/call meta.echo_meta'],
    ]);
    expectOneGovernedTrace(received, 'e2e-agent:agent turn', meta);
    const sent = only(received, 'e2e-agent', 'tools/call meta.echo_meta');
    const served = only(received, 'mcp-endpoint', 'tools/call meta.echo_meta');
    expect(sent.kind).toBe(otlpSpanKind.client);
    expect(served.kind).toBe(otlpSpanKind.server);
    expect(served.parentSpanId, 'the endpoint’s span is the child of the span whose context the client sent in _meta').toBe(sent.spanId);
    expect(served.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'meta.echo_meta', 'gen_ai.operation.name': 'execute_tool' });
    // The endpoint calls through the SDK client, whose CLIENT span the adapter's consumer span continues.
    expect(ancestry(received, only(received, 'tool-adapter', 'tool-adapter process')).slice(0, 2)).toEqual(['mcp-endpoint:toolplane.invoke meta.echo_meta', 'mcp-endpoint:tools/call meta.echo_meta']);
    expectNothingSecretExported(canary);
  });

  it('keep a call that waited for a human approval in one trace: its resumed stages continue the call’s trace beside an approval wait span linked to the decision', { timeout: 120_000 }, async () => {
    const canary = `canary-${randomUUID()}`;
    const recorder = await platform.recordEvents();
    const invoking = client.invoke('gatedmeta.echo_meta', { text: canary }, { idempotencyKey: `traced-gated-${randomUUID()}` });
    const requested = await waitFor('ApprovalRequested', () =>
      recorder.events.find((event): event is ApprovalRequested => event.type === 'ApprovalRequested' && event.metadata.toolId === 'gatedmeta.echo_meta'),
    );
    recorder.stop();
    expect(await platform.toolplane('approvals', 'approve', requested.data.approvalId, '--reason', 'traced')).toMatchObject({ code: 0, err: '' });
    const result = await invoking;
    expect(result.status).toBe('SUCCESS');

    await tracing.flush();
    const invoked = await waitFor('the client span', () => receiver.spans().find((span) => span.service === 'e2e-agent' && span.name === 'toolplane.invoke gatedmeta.echo_meta'));
    const received = await completeTrace(invoked.traceId, [
      ['e2e-agent', 'toolplane.invoke gatedmeta.echo_meta'],
      ['tool-adapter', 'approval wait'],
      ['tool-adapter', 'toolplane.stage APPROVAL_DECISION'],
    ]);
    expectOneGovernedTrace(received, 'e2e-agent:toolplane.invoke gatedmeta.echo_meta', result.structuredContent?.['meta']);
    const wait = only(received, 'tool-adapter', 'approval wait');
    expect(wait.attributes['toolplane.approval_id']).toBe(requested.data.approvalId);
    expect(received.byId.get(wait.parentSpanId ?? '')?.name, 'the wait hangs off the stage that parked the call').toBe('toolplane.stage APPROVAL');
    // Linked to the decision, which is a trace of its own (the operator's command, the approval service's event).
    expect(wait.links).toHaveLength(1);
    expect(wait.links[0]?.traceId).not.toBe(invoked.traceId);
    // The resumed stages continue from the stage that parked the call, beside the wait.
    for (const stage of ['APPROVAL_DECISION', 'EXECUTE']) {
      expect(ancestry(received, only(received, 'tool-adapter', `toolplane.stage ${stage}`)), `the resumed ${stage} stage continues the parked call`).toContain('tool-adapter:toolplane.stage APPROVAL');
    }
    expectNothingSecretExported(canary);
  });
});
