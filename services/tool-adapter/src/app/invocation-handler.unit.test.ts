// The invocation handler against the in-memory event store: what it appends (and how often), what it publishes
// and replies, how two copies of one key meet, and what a redelivery republishes. No NATS, no MongoDB.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InvocationReply, LifecycleEvent, eventMsgId, invocationRequestSubject, type InvocationRequest, type InvocationStateEvent, type Scope, type ToolCallIndexed, type ToolDescriptor } from '@toolplane/contracts';
import type { TokenVerifier } from '@toolplane/auth';
import { inMemoryEventStore, type EventStore } from '@toolplane/event-store';
import type { DeliveryContext, DescriptorCache, Messaging } from '@toolplane/messaging';
import type { Logger } from '@toolplane/service-kit';
import { eventually } from '@toolplane/testing';
import { InvocationCalls } from '../adapters/invocation-store.js';
import type { McpExecutor } from '../adapters/mcp-executor.js';
import type { RateCounters } from '../adapters/rate-counters.js';
import { ArgumentValidators } from '../core/argument-validation.js';
import { defaultTenantPolicy } from '../core/policy-evaluator.js';
import type { ExecutionResult } from '../core/execution-outcome.js';
import type { PipelineEvent } from '../core/invocation-event-log.js';
import type { PipelineStep } from '../core/invocation-pipeline.js';
import { receiptSigner } from '../core/receipts.js';
import { agentProfileDocument, stdioServerDocument, testDescriptor } from '../testing.js';
import { handleInvocationRequest } from './invocation-handler.js';
import { unobservedInvocations, type InvocationObserver } from './invocation-observer.js';
import type { InvocationRuntime } from './invocation-runtime.js';

const scope: Scope = { tenant: 'acme', workspace: 'support' };
const agentId = 'agent-support';

interface World {
  readonly runtime: InvocationRuntime;
  readonly appends: () => number;
  readonly reads: () => number;
  readonly published: PipelineEvent[];
  readonly replies: { readonly inbox: string | undefined; readonly reply: InvocationReply }[];
  readonly executions: () => number;
}

/** A runtime of in-memory ports: the calls' store counts its appends and reads, the executor its calls. */
function world(
  options: {
    readonly descriptor?: Partial<ToolDescriptor>;
    readonly allowed?: readonly string[];
    readonly execute?: () => Promise<ExecutionResult>;
    readonly observer?: InvocationObserver;
    readonly elapsedMs?: () => number;
  } = {},
): World {
  const inner = inMemoryEventStore<InvocationStateEvent>();
  let appends = 0;
  let reads = 0;
  const counted: EventStore<InvocationStateEvent> = {
    readStream: (id, read) => {
      reads += 1;
      return inner.readStream(id, read);
    },
    appendToStream: (id, events, append) => {
      appends += 1;
      return inner.appendToStream(id, events, append);
    },
  };
  const serverId = randomUUID();
  const descriptor = testDescriptor({ scope, toolId: 'fixture.echo', providerToolName: 'echo', mcpServerId: serverId }, options.descriptor);
  const published: PipelineEvent[] = [];
  const replies: World['replies'] = [];
  let executions = 0;
  const profile = agentProfileDocument(scope, agentId, options.allowed ?? ['fixture.*']);
  const runtime: InvocationRuntime = {
    messaging: {} as Messaging,
    calls: new InvocationCalls(counted, inMemoryEventStore<ToolCallIndexed>(), 5_000),
    outlet: {
      publish: (events) => {
        published.push(...events);
        return Promise.resolve();
      },
      reply: (_scope, inbox, reply) => {
        if (inbox !== undefined) replies.push({ inbox, reply });
      },
    },
    descriptors: { resolve: (_scope: Scope, toolId: string) => (toolId === descriptor.toolId ? descriptor : undefined), list: () => [descriptor] } as unknown as DescriptorCache,
    servers: () => Promise.resolve(stdioServerDocument({ serverId, scope, name: 'echo' }, { args: ['echo.mjs'] })),
    executor: {
      execute: async () => {
        executions += 1;
        return options.execute === undefined ? { result: 'returned', output: { content: [{ type: 'text', text: 'echoed' }] } } : options.execute();
      },
    } as unknown as McpExecutor,
    flows: {
      execute: async () => {
        executions += 1;
        return options.execute === undefined ? { result: 'failed', failure: { code: 'INTERNAL', message: 'no flow in this world', retryable: false }, effect: 'none' } : options.execute();
      },
    },
    approvals: () => Promise.resolve(),
    validators: new ArgumentValidators(),
    policies: {
      agentProfile: () => Promise.resolve(profile),
      tenantPolicy: (tenant: string) => Promise.resolve(defaultTenantPolicy(tenant, new Date().toISOString())),
      policyBundle: () => Promise.resolve({ kind: 'none' }),
    },
    rateCounters: { load: () => Promise.resolve(new Map()), claim: () => Promise.resolve(true) } as unknown as RateCounters,
    verifier: { verify: () => Promise.resolve({ principal: 'user:alice@acme.example', agentId, agentRevision: '7', roles: [] }) } as unknown as TokenVerifier,
    signReceipt: receiptSigner({ keyId: 'handler-test', privateKey: generateKeyPairSync('ed25519').privateKey }),
    clock: () => new Date(),
    elapsedMs: options.elapsedMs ?? (() => performance.now()),
    observer: options.observer ?? unobservedInvocations,
    newId: randomUUID,
    logger: { warn: () => undefined, info: () => undefined } as unknown as Logger,
    defaultTimeoutMs: 30_000,
  };
  return { runtime, appends: () => appends, reads: () => reads, published, replies, executions: () => executions };
}

function request(key: string, args: Record<string, unknown> = { text: 'hi' }, inbox = `inbox_${randomUUID().replaceAll('-', '')}`): InvocationRequest {
  return { toolId: 'fixture.echo', arguments: args, idempotencyKey: key, correlationId: 'run-1', contextToken: 'a.b.c', replyInbox: inbox };
}

function delivery(deliveryCount = 1): DeliveryContext {
  return { signal: new AbortController().signal, deliveryCount, subject: invocationRequestSubject(scope), streamSequence: 1, headers: {}, msgId: undefined };
}

describe('handleInvocationRequest (in-memory event store)', () => {
  it('governs a READ call with two appends (Received…Started, then the ending), replies, and publishes its events in order', async () => {
    const { runtime, appends, published, replies, executions } = world({ descriptor: { sandboxKind: 'None' } });
    const sent = request('read-1');
    await handleInvocationRequest(runtime, sent, delivery());
    expect(appends()).toBe(2);
    expect(executions()).toBe(1);
    expect(published.map((event) => event.type)).toEqual(['InvocationReceived', 'ToolCallStarted', 'ToolCallCompleted']);
    expect(published.map((event) => event.metadata.sequence)).toEqual([1, 2, 3]);
    expect(replies).toHaveLength(1);
    expect(replies[0]?.inbox).toBe(sent.replyInbox);
    expect(replies[0]?.reply).toMatchObject({ ok: true, data: { status: 'SUCCESS', receipt: { state: 'Observed', attempt: 1 } } });
    const { state } = await runtime.calls.read(scope, 'read-1');
    expect(state.invocation?.state).toBe('Observed');
    expect(state.leaseUntil).toBeUndefined();
    expect(state.published).toEqual(published);
  });

  it('runs a flow-backed tool through FlowRunner and signs the run into the receipt; an uncertain run ends the call Uncertain', async () => {
    const flowRun = { workItemId: 'wi-1', flowRunId: 'fr-1', flowId: 'onboard', flowVersion: 2, definitionName: 'crm.onboard', toolCallId: 'tc-1', correlationId: 'run-1' };
    const completed = world({ descriptor: { kind: 'Flow', sandboxKind: 'None', mcpServerId: undefined }, execute: () => Promise.resolve({ result: 'returned', output: { structuredContent: { ok: true } }, flowRun }) });
    await handleInvocationRequest(completed.runtime, request('flow-1'), delivery());
    expect(completed.executions()).toBe(1);
    expect(completed.replies[0]?.reply).toMatchObject({ ok: true, data: { status: 'SUCCESS', structuredContent: { ok: true }, receipt: { state: 'Observed', flowRun } } });
    const uncertain = world({
      descriptor: { kind: 'Flow', sandboxKind: 'None', mcpServerId: undefined, sideEffectClass: 'WRITE' },
      execute: () => Promise.resolve({ result: 'failed', failure: { code: 'UNKNOWN_OUTCOME', message: 'a step may have run', retryable: false }, effect: 'possible', flowRun }),
    });
    await handleInvocationRequest(uncertain.runtime, request('flow-2'), delivery());
    expect(uncertain.replies[0]?.reply).toMatchObject({ ok: true, data: { status: 'UNCERTAIN', receipt: { state: 'Uncertain', flowRun } } });
  });

  it('reports every stage it performs once, in order, timed by one clock read per stage, and each ending or parking once', async () => {
    const reports: string[] = [];
    const stages: { readonly step: PipelineStep; readonly seconds: number }[] = [];
    const observer: InvocationObserver = {
      stagePerformed: (step, seconds) => stages.push({ step, seconds }),
      parked: (invocation) => reports.push(`parked ${invocation.toolId} ${invocation.effectiveClass ?? '?'}`),
      ended: (invocation) => reports.push(`ended ${invocation.toolId} ${invocation.state} ${invocation.failure?.code ?? 'none'}`),
    };
    let reads = 0;
    // Each read of the stage clock is 2 ms after the last: every stage measures exactly 0.002 s.
    const elapsedMs = () => 2 * reads++;

    await handleInvocationRequest(world({ descriptor: { sandboxKind: 'None' }, observer, elapsedMs }).runtime, request('observed-1'), delivery());
    const performed = ['TOOL_RESOLUTION', 'SCHEMA_VALIDATION', 'AGENT_PERMISSION', 'TENANT_POLICY', 'SIDE_EFFECT_CLASSIFICATION', 'APPROVAL', 'CREDENTIAL_BROKER', 'SANDBOX', 'START', 'EXECUTE', 'SANITIZE', 'FINISH', 'PUBLISH_TERMINAL', 'REPLY'];
    expect(stages.map(({ step }) => step)).toEqual(performed);
    expect(stages.every(({ seconds }) => seconds === 0.002)).toBe(true);
    expect(reads).toBe(performed.length + 1);
    expect(reports).toEqual(['ended fixture.echo Observed none']);

    reports.length = 0;
    stages.length = 0;
    await handleInvocationRequest(world({ allowed: ['other.*'], observer, elapsedMs }).runtime, request('denied-2'), delivery());
    expect(stages.map(({ step }) => step)).toEqual(['TOOL_RESOLUTION', 'SCHEMA_VALIDATION', 'AGENT_PERMISSION', 'FINISH', 'PUBLISH_TERMINAL', 'REPLY']);
    expect(reports).toEqual(['ended fixture.echo Denied AUTHORIZATION_DENIED']);

    reports.length = 0;
    stages.length = 0;
    await handleInvocationRequest(world({ descriptor: { sideEffectClass: 'DESTRUCTIVE', riskClass: 'HIGH' }, observer, elapsedMs }).runtime, request('parked-1'), delivery());
    expect(stages.map(({ step }) => step).at(-1)).toBe('APPROVAL');
    expect(reports).toEqual(['parked fixture.echo DESTRUCTIVE']);
  });

  it('denies a call in one append and never executes it', async () => {
    const { runtime, appends, published, replies, executions } = world({ allowed: ['other.*'] });
    await handleInvocationRequest(runtime, request('denied-1'), delivery());
    expect(appends()).toBe(1);
    expect(executions()).toBe(0);
    expect(published.map((event) => event.type)).toEqual(['InvocationReceived', 'InvocationDenied']);
    expect(replies[0]?.reply).toMatchObject({ ok: true, data: { status: 'DENIED' } });
  });

  it('runs two copies of one key racing for its creation once: the loser decides again and answers with the same receipt', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { runtime, replies, executions, published, reads } = world({
      execute: async () => {
        await gate;
        return { result: 'returned', output: { content: [{ type: 'text', text: 'once' }] } };
      },
    });
    const first = handleInvocationRequest(runtime, request('race-1'), delivery());
    const second = handleInvocationRequest(runtime, request('race-1'), delivery());
    // A first delivery appends without reading, so the first read is the loser's, after its creation was refused
    // (the winner's Received…Started is stored and its provider call held at the gate): the loser finds the call in
    // flight. Released only then, however slow the machine: a loser that got to its append after the winner ended
    // would answer a replay instead, and this test would not be about the race.
    await eventually('the losing copy to read the call it lost', () => (reads() > 0 ? true : undefined), 20_000, 5);
    release();
    await Promise.all([first, second]);
    expect(executions()).toBe(1);
    expect(replies).toHaveLength(2);
    expect(replies[1]?.reply).toEqual(replies[0]?.reply);
    // One started fact is one message id. A copy that finds the call ended (a replay) sends its stored events again,
    // the same facts under the same Nats-Msg-Id, which JetStream's duplicate window drops: count ids, not sends.
    expect(new Set(published.filter((event) => event.type === 'ToolCallStarted').map(eventMsgId)).size).toBe(1);
  });

  it('answers a repeat of an ended call from its record, republishing its events on a redelivery, running nothing', async () => {
    const { runtime, appends, published, replies, executions } = world();
    await handleInvocationRequest(runtime, request('replay-1'), delivery());
    const before = published.length;
    await handleInvocationRequest(runtime, request('replay-1'), delivery(2));
    expect(executions()).toBe(1);
    expect(appends()).toBe(2);
    expect(published.slice(before)).toEqual(published.slice(0, before));
    expect(replies[1]?.reply).toEqual(replies[0]?.reply);
  });

  it('answers the same key with other arguments with CONFLICT and records nothing more', async () => {
    const { runtime, appends, replies } = world();
    await handleInvocationRequest(runtime, request('conflict-1', { text: 'a' }), delivery());
    await handleInvocationRequest(runtime, request('conflict-1', { text: 'b' }), delivery());
    expect(appends()).toBe(3); // two for the call, one refused creation of the second copy (it then read and decided)
    expect(replies[1]?.reply).toMatchObject({ ok: false, error: { code: 'CONFLICT' } });
  });

  it('sends events and replies that are already what their contracts would make of them, as JSON text too (they are sent without being validated again)', async () => {
    const oddFailure = { retryable: false, providerErrorType: 'JsonRpcError(-32603)', message: 'boom', code: 'TEMPORARY_UNAVAILABLE' } as const;
    const oddContent = { content: [{ type: 'text', text: 'echoed' }], structuredContent: { z: 1, a: { y: [1, 'two'], b: null }, __proto__x: true, '': 'empty' } };
    const scenarios = [
      world({ descriptor: { sandboxKind: 'None' } }),
      world({ descriptor: { sandboxKind: 'Process' } }),
      world({ allowed: ['other.*'] }),
      world({ execute: () => Promise.resolve({ result: 'failed', failure: oddFailure, effect: 'none' }) }),
      world({ descriptor: { sideEffectClass: 'WRITE' }, execute: () => Promise.resolve({ result: 'failed', failure: oddFailure, effect: 'possible' }) }),
      world({ execute: () => Promise.resolve({ result: 'returned', output: oddContent }) }),
      world({ descriptor: { sideEffectClass: 'WRITE', riskClass: 'HIGH' } }),
      world({ descriptor: { sideEffectClass: 'DESTRUCTIVE', riskClass: 'HIGH' } }),
    ];
    const types = new Set<string>();
    for (const [i, { runtime, published, replies }] of scenarios.entries()) {
      await handleInvocationRequest(runtime, request(`contract-${i}`), delivery());
      await handleInvocationRequest(runtime, request(`contract-${i}`), delivery(2)); // a repeat, republished
      await handleInvocationRequest(runtime, request(`contract-${i}`, { text: 'other' }), delivery()); // CONFLICT
      await handleInvocationRequest(runtime, { ...request(`unknown-${i}`), toolId: 'fixture.nope' }, delivery());
      for (const event of published) {
        types.add(event.type);
        expect(JSON.stringify(event)).toBe(JSON.stringify(LifecycleEvent.parse(event)));
      }
      for (const { reply } of replies) {
        types.add(reply.ok ? reply.data.status : reply.error.code);
        expect(JSON.stringify(reply)).toBe(JSON.stringify(InvocationReply.parse(reply)));
      }
    }
    expect([...types].sort()).toEqual(
      ['APPROVAL_PENDING', 'ApprovalRequested', 'CONFLICT', 'DENIED', 'FAILED', 'InvocationDenied', 'InvocationReceived', 'SUCCESS', 'SandboxLeased', 'SandboxReleased', 'ToolCallCompleted', 'ToolCallFailed', 'ToolCallStarted', 'ToolEffectUncertain', 'UNCERTAIN'].sort(),
    );
  });
});
