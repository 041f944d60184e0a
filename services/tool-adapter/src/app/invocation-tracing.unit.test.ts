// The adapter's trace spans against the in-memory event store and an in-memory span exporter: one span per stage
// performed, named and attributed per the design (what the core decided, the failure code of a stage that failed the
// call, never an argument), children of the context the handler runs in; a parked call's resumed stages continue the
// call's trace, after an `approval wait` span linked to the decision's trace.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { invocationRequestSubject, type ApprovalOutcomeEvent, type InvocationRequest, type InvocationStateEvent, type Scope, type ToolCallIndexed, type ToolDescriptor } from '@toolplane/contracts';
import type { TokenVerifier } from '@toolplane/auth';
import { inMemoryEventStore } from '@toolplane/event-store';
import type { DeliveryContext, DescriptorCache, Messaging } from '@toolplane/messaging';
import { recordSpansInMemory, type InMemoryTracing, type Logger, type ReadableSpan } from '@toolplane/service-kit';
import { InvocationCalls } from '../adapters/invocation-store.js';
import type { McpExecutor } from '../adapters/mcp-executor.js';
import type { RateCounters } from '../adapters/rate-counters.js';
import { ArgumentValidators } from '../core/argument-validation.js';
import { defaultTenantPolicy } from '../core/policy-evaluator.js';
import { receiptSigner } from '../core/receipts.js';
import { agentProfileDocument, stdioServerDocument, testDescriptor } from '../testing.js';
import { handleApprovalDecision } from './approval-decisions.js';
import { handleInvocationRequest } from './invocation-handler.js';
import { unobservedInvocations } from './invocation-observer.js';
import type { InvocationRuntime } from './invocation-runtime.js';

const scope: Scope = { tenant: 'acme', workspace: 'support' };
const agentId = 'agent-support';
const argumentValue = 'customer-4711-private-note';

/** Calls recorded without their trace context, as a call parked while the adapter was not tracing was. */
class UntracedCalls extends InvocationCalls {
  override record(...[position, transition, signal]: Parameters<InvocationCalls['record']>): ReturnType<InvocationCalls['record']> {
    return super.record(position, { ...transition, traceContext: undefined }, signal);
  }
}

function runtimeFor(descriptorOverrides: Partial<ToolDescriptor>, allowed: readonly string[] = ['fixture.*'], Calls: typeof InvocationCalls = InvocationCalls): { runtime: InvocationRuntime; calls: InvocationCalls } {
  const serverId = randomUUID();
  const descriptor = testDescriptor({ scope, toolId: 'fixture.echo', providerToolName: 'echo', mcpServerId: serverId }, { sandboxKind: 'None', ...descriptorOverrides });
  const profile = agentProfileDocument(scope, agentId, allowed);
  const calls = new Calls(inMemoryEventStore<InvocationStateEvent>(), inMemoryEventStore<ToolCallIndexed>(), 5_000);
  const runtime: InvocationRuntime = {
    messaging: {} as Messaging,
    calls,
    outlet: { publish: () => Promise.resolve(), reply: () => undefined },
    descriptors: { resolve: (_scope: Scope, toolId: string) => (toolId === descriptor.toolId ? descriptor : undefined), list: () => [descriptor] } as unknown as DescriptorCache,
    servers: () => Promise.resolve(stdioServerDocument({ serverId, scope, name: 'echo' }, { args: ['echo.mjs'] })),
    executor: { execute: () => Promise.resolve({ result: 'returned', output: { content: [{ type: 'text', text: argumentValue }] } }) } as unknown as McpExecutor,
    flows: { execute: () => Promise.reject(new Error('no flows here')) },
    approvals: () => Promise.resolve(),
    validators: new ArgumentValidators(),
    policies: {
      agentProfile: () => Promise.resolve(profile),
      tenantPolicy: (tenant: string) => Promise.resolve(defaultTenantPolicy(tenant, new Date().toISOString())),
      policyBundle: () => Promise.resolve({ kind: 'none' }),
    },
    rateCounters: { load: () => Promise.resolve(new Map()), claim: () => Promise.resolve(true) } as unknown as RateCounters,
    verifier: { verify: () => Promise.resolve({ principal: 'user:alice@acme.example', agentId, agentRevision: '7', roles: [] }) } as unknown as TokenVerifier,
    signReceipt: receiptSigner({ keyId: 'tracing-test', privateKey: generateKeyPairSync('ed25519').privateKey }),
    clock: () => new Date(),
    elapsedMs: () => performance.now(),
    observer: unobservedInvocations,
    newId: randomUUID,
    logger: { warn: () => undefined, info: () => undefined } as unknown as Logger,
    defaultTimeoutMs: 30_000,
  };
  return { runtime, calls };
}

function request(key: string): InvocationRequest {
  return { toolId: 'fixture.echo', arguments: { text: argumentValue }, idempotencyKey: key, correlationId: 'run-1', contextToken: 'a.b.c', replyInbox: `inbox_${randomUUID().replaceAll('-', '')}` };
}

function delivery(): DeliveryContext {
  return { signal: new AbortController().signal, deliveryCount: 1, subject: invocationRequestSubject(scope), streamSequence: 1, headers: {}, msgId: undefined };
}

const tracer = trace.getTracer('invocation-tracing-test');

/** Runs `work` inside a span standing for the messaging span the handler runs in; that span's ids. */
async function underSpan(name: string, work: () => Promise<void>): Promise<{ readonly traceId: string; readonly spanId: string }> {
  return tracer.startActiveSpan(name, async (span) => {
    try {
      await work();
    } finally {
      span.end();
    }
    return { traceId: span.spanContext().traceId, spanId: span.spanContext().spanId };
  });
}

function stageSpans(spans: readonly ReadableSpan[]): ReadableSpan[] {
  return spans.filter((span) => span.name.startsWith('toolplane.stage '));
}

function attributeText(spans: readonly ReadableSpan[]): string {
  return JSON.stringify(spans.map((span) => ({ name: span.name, attributes: span.attributes, events: span.events, links: span.links })));
}

describe('adapter spans', () => {
  let tracing: InMemoryTracing;
  beforeAll(() => {
    tracing = recordSpansInMemory('tool-adapter-test');
  });
  afterAll(async () => {
    await tracing.stop();
  });
  beforeEach(() => tracing.reset());

  it('records one span per stage performed, in order, as children of the handler’s span, with what the core decided', async () => {
    const { runtime } = runtimeFor({});
    const parent = await underSpan('adapter.invoke process', () => handleInvocationRequest(runtime, request('read-1'), delivery()));
    const stages = stageSpans(tracing.spans());
    const performed = ['TOOL_RESOLUTION', 'SCHEMA_VALIDATION', 'AGENT_PERMISSION', 'TENANT_POLICY', 'SIDE_EFFECT_CLASSIFICATION', 'APPROVAL', 'CREDENTIAL_BROKER', 'SANDBOX', 'START', 'EXECUTE', 'SANITIZE', 'FINISH', 'PUBLISH_TERMINAL', 'REPLY'];
    expect(stages.map((span) => span.name)).toEqual(performed.map((step) => `toolplane.stage ${step}`));
    for (const span of stages) {
      expect(span.spanContext().traceId).toBe(parent.traceId);
      expect(span.parentSpanContext?.spanId).toBe(parent.spanId);
      expect(span.attributes).toMatchObject({ 'toolplane.tenant': 'acme', 'toolplane.workspace': 'support' });
      expect(typeof span.attributes['toolplane.tool_call_id']).toBe('string');
      expect(span.attributes['toolplane.error_code']).toBeUndefined();
      expect(span.status.code).not.toBe(SpanStatusCode.ERROR);
    }
    const decisions: Record<string, unknown> = Object.fromEntries(stages.map((span) => [String(span.attributes['toolplane.stage']), span.attributes['toolplane.decision']]));
    expect(decisions).toEqual({
      TOOL_RESOLUTION: 'resolved',
      SCHEMA_VALIDATION: 'valid',
      AGENT_PERMISSION: 'allow',
      TENANT_POLICY: 'allow',
      SIDE_EFFECT_CLASSIFICATION: 'allow',
      APPROVAL: 'not_required',
      CREDENTIAL_BROKER: 'leased',
      SANDBOX: 'not_needed',
      START: 'execute',
      EXECUTE: 'returned',
      SANITIZE: 'observed',
      FINISH: 'recorded',
      PUBLISH_TERMINAL: 'published',
      REPLY: 'replied',
    });
    expect(stages.find((span) => span.name === 'toolplane.stage SANITIZE')?.attributes['toolplane.side_effect_class']).toBe('READ');
    // Neither the arguments nor the result (the executor echoes the same text) reach any span.
    expect(attributeText(tracing.spans())).not.toContain(argumentValue);
  });

  it('names the failure code on the stage that denied the call, and performs no stage after it but the ending', async () => {
    const { runtime } = runtimeFor({}, ['other.*']);
    await underSpan('adapter.invoke process', () => handleInvocationRequest(runtime, request('denied-1'), delivery()));
    const stages = stageSpans(tracing.spans());
    expect(stages.map((span) => span.attributes['toolplane.stage'])).toEqual(['TOOL_RESOLUTION', 'SCHEMA_VALIDATION', 'AGENT_PERMISSION', 'FINISH', 'PUBLISH_TERMINAL', 'REPLY']);
    const denied = stages.find((span) => span.attributes['toolplane.stage'] === 'AGENT_PERMISSION');
    expect(denied?.attributes).toMatchObject({ 'toolplane.decision': 'deny', 'toolplane.error_code': 'AUTHORIZATION_DENIED' });
    expect(denied?.status.code).toBe(SpanStatusCode.ERROR);
    expect(attributeText(tracing.spans())).not.toContain(argumentValue);
  });

  it('continues a parked call’s trace when the decision resumes it: an approval wait span from parking to resumption, linked to the decision', async () => {
    const { runtime } = runtimeFor({ sideEffectClass: 'DESTRUCTIVE', riskClass: 'HIGH' });
    // The parking record keeps the trace context it was written in: the call's.
    const call = await underSpan('adapter.invoke process', async () => {
      await handleInvocationRequest(runtime, request('parked-1'), delivery());
    });
    const approvalStage = stageSpans(tracing.spans()).find((span) => span.attributes['toolplane.stage'] === 'APPROVAL');
    expect(approvalStage?.attributes['toolplane.decision']).toBe('park');
    if (approvalStage === undefined) return;
    const { state } = await runtime.calls.read(scope, 'parked-1');
    expect(state.parkedTrace?.traceparent).toMatch(new RegExp(`^00-${call.traceId}-[0-9a-f]{16}-01$`));
    const parked = state.invocation;
    if (parked?.approvalId === undefined || parked.toolVersion === undefined) throw new Error('the call did not park');
    tracing.reset();

    const granted = {
      type: 'ApprovalGranted',
      data: { approvalId: parked.approvalId, requestHash: parked.requestHash, decidedBy: 'user:bob@acme.example' },
      metadata: { toolCallId: parked.toolCallId, toolVersion: parked.toolVersion },
    } as unknown as ApprovalOutcomeEvent;
    const decision = await underSpan('approval consume', () => handleApprovalDecision(runtime, granted, delivery()));

    const spans = tracing.spans();
    const wait = spans.find((span) => span.name === 'approval wait');
    expect(wait?.spanContext().traceId).toBe(call.traceId);
    expect(wait?.parentSpanContext?.spanId).toBe(approvalStage.spanContext().spanId);
    expect(wait?.links.map((link) => link.context.spanId)).toEqual([decision.spanId]);
    expect(wait?.attributes['toolplane.approval_id']).toBe(parked.approvalId);
    if (wait === undefined) return;
    // From when the call parked (its record's time) to the resumption.
    expect(wait.startTime[0] * 1000 + Math.floor(wait.startTime[1] / 1e6)).toBe(Date.parse(parked.updatedAt));
    const resumed = stageSpans(spans);
    expect(resumed.map((span) => span.attributes['toolplane.stage'])).toEqual(['APPROVAL_DECISION', 'CREDENTIAL_BROKER', 'SANDBOX', 'START', 'EXECUTE', 'SANITIZE', 'FINISH', 'PUBLISH_TERMINAL', 'REPLY']);
    expect(resumed[0]?.attributes['toolplane.decision']).toBe('granted');
    for (const span of resumed) expect(span.spanContext().traceId).toBe(call.traceId);
    expect(decision.traceId).not.toBe(call.traceId);
    expect(attributeText(spans)).not.toContain(argumentValue);
  });

  it('keeps a resumed call in the decision’s trace when no context was kept with it', async () => {
    const { runtime } = runtimeFor({ sideEffectClass: 'DESTRUCTIVE', riskClass: 'HIGH' }, ['fixture.*'], UntracedCalls);
    await underSpan('adapter.invoke process', () => handleInvocationRequest(runtime, request('parked-2'), delivery()));
    const { state } = await runtime.calls.read(scope, 'parked-2');
    expect(state.parkedTrace).toBeUndefined();
    const parked = state.invocation;
    if (parked?.approvalId === undefined || parked.toolVersion === undefined) throw new Error('the call did not park');
    tracing.reset();
    const rejected = {
      type: 'ApprovalRejected',
      data: { approvalId: parked.approvalId, requestHash: parked.requestHash, decidedBy: 'user:bob@acme.example', reason: 'not today' },
      metadata: { toolCallId: parked.toolCallId, toolVersion: parked.toolVersion },
    } as unknown as ApprovalOutcomeEvent;
    const decision = await underSpan('approval consume', () => handleApprovalDecision(runtime, rejected, delivery()));
    const spans = tracing.spans();
    const wait = spans.find((span) => span.name === 'approval wait');
    expect(wait?.parentSpanContext?.spanId).toBe(decision.spanId);
    expect(wait?.links).toEqual([]);
    const stages = stageSpans(spans);
    expect(stages.map((span) => span.attributes['toolplane.stage'])).toEqual(['APPROVAL_DECISION', 'FINISH', 'PUBLISH_TERMINAL', 'REPLY']);
    expect(stages[0]?.attributes).toMatchObject({ 'toolplane.decision': 'deny', 'toolplane.error_code': 'APPROVAL_REJECTED' });
    for (const span of stages) expect(span.spanContext().traceId).toBe(decision.traceId);
  });

});
