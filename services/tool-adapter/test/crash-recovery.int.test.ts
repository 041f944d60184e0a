// The adapter PROCESS killed with SIGKILL at each step of the pipeline (failpoints, or a kill while the provider
// call runs), then started again: the request the first process had taken is redelivered once its ack wait ran
// out (a few seconds after its heartbeats stopped), and every accepted request ends in exactly one terminal state; a non-idempotent tool never runs twice, an
// interrupted write ends Uncertain with ToolEffectUncertain, an interrupted READ gets attempt 2 and ends Observed.
// Each scenario has a nats-server of its own (the adapter's stream and consumer names are fixed), so scenarios
// run side by side without taking each other's requests.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isTerminalInvocationState, streams, type InvocationReply, type LifecycleEvent, type Scope, type ToolDescriptor } from '@toolplane/contracts';
import { ensureConsumer, ensureStream } from '@toolplane/messaging';
import { testScope } from '@toolplane/testing';
import { adapterFailpoints } from '../src/app/invocation-handler.js';
import { toolAdapterConfig, toolAdapterConsumers } from '../src/service.js';
import { AdapterHarness, startNatsServer, waitFor } from './adapter-harness.js';

// The adapter's own ack wait and processing lease (a dead handler's call is taken over within seconds). Deadlines
// are long enough to leave a second attempt room after that.
const adapterEnv = { ADAPTER_CONCURRENCY: '4' };
const timeoutMs = 75_000;
const slowMs = 3_000;
const terminalTypes = new Set(['ToolCallCompleted', 'ToolCallFailed', 'ToolCallCancelled', 'ToolEffectUncertain', 'InvocationDenied']);

type Effect = 'READ' | 'WRITE';
type KillAt = { readonly failpoint: string } | { readonly duringExecution: true };

async function withHarness<T>(label: string, work: (harness: AdapterHarness) => Promise<T>): Promise<T> {
  const nats = await startNatsServer();
  const { mongoUrl, dbName } = testScope(label);
  let harness: AdapterHarness | undefined;
  try {
    harness = await AdapterHarness.start({ natsUrl: nats.url, mongoUrl, dbName, adapterEnv });
    return await work(harness);
  } finally {
    await harness?.close();
    await nats.stop();
  }
}

/** Binds the scenario's tool: count_calls (counting fixture) or slow (hostile fixture), as a READ or a non-idempotent WRITE. */
async function bindScenarioTool(harness: AdapterHarness, scope: Scope, effect: Effect, slow: boolean): Promise<ToolDescriptor> {
  const classes: Partial<ToolDescriptor> = effect === 'READ' ? { sideEffectClass: 'READ', riskClass: 'LOW', idempotency: 'NATURAL' } : { sideEffectClass: 'WRITE', riskClass: 'MEDIUM', idempotency: 'NONE' };
  return harness.bindTool(scope, 'fixture.tool', slow ? 'slow' : 'count_calls', slow ? 'hostile' : 'counting', { ...classes, timeoutMs });
}

/** Per invocation id, the terminal events the stream holds. */
function terminalEventsByInvocation(events: readonly LifecycleEvent[]): Map<string, string[]> {
  const byInvocation = new Map<string, string[]>();
  for (const event of events) {
    if (!terminalTypes.has(event.type) || !('invocationId' in event.metadata)) continue;
    const id = event.metadata.invocationId;
    byInvocation.set(id, [...(byInvocation.get(id) ?? []), event.type]);
  }
  return byInvocation;
}

interface CrashOutcome {
  readonly harness: AdapterHarness;
  readonly scope: Scope;
  /** The stored invocation right after the kill (none when the kill came before the call's first append). */
  readonly left: { readonly state: string; readonly invocationId: string } | undefined;
  /** Executions (count lines) right after the kill. */
  readonly executedBeforeRestart: number;
  readonly reply: InvocationReply;
  readonly executions: number;
  readonly events: LifecycleEvent[];
}

/** Kills an adapter at `killAt` while it handles one request, starts another one, and collects how the call ended. */
async function crashAndRecover(harness: AdapterHarness, effect: Effect, killAt: KillAt): Promise<CrashOutcome> {
  const slow = 'duringExecution' in killAt;
  const label = slow ? 'slow-started' : 'count_calls';
  const scope = await harness.freshScope();
  await bindScenarioTool(harness, scope, effect, slow);
  const first = await harness.startAdapter('failpoint' in killAt ? { TOOLPLANE_FAILPOINTS: `${killAt.failpoint}=kill` } : {});
  const call = await harness.send(scope, { toolId: 'fixture.tool', arguments: slow ? { ms: slowMs } : {}, idempotencyKey: 'crash-me' });
  if (slow) {
    await waitFor('the provider call to start', async () => (await harness.executions(scope, label)) === 1);
    first.child.kill('SIGKILL');
  }
  expect(await first.exited).toBe('SIGKILL');
  const left = await harness.stored(scope, 'crash-me');
  const executedBeforeRestart = await harness.executions(scope, label);

  const second = await harness.startAdapter();
  const reply = await call.reply(120_000);
  const done = await waitFor('the terminal fact', async () => {
    const document = await harness.stored(scope, 'crash-me');
    return document !== undefined && isTerminalInvocationState(document.state) && document.receipt !== undefined ? document : undefined;
  });
  // The terminal event is published after the terminal fact: wait for it before reading the stream.
  const events = await waitFor('the terminal event', async () => {
    const all = await harness.storedEvents(scope);
    return (terminalEventsByInvocation(all).get(done.invocationId)?.length ?? 0) > 0 ? all : undefined;
  });
  expect(reply.ok).toBe(true);
  if (reply.ok) expect(reply.data.receipt).toEqual(done.receipt);
  // Exactly one terminal state: one ending per physical attempt, the last attempt's is the call's.
  for (const [, types] of terminalEventsByInvocation(events)) expect(types).toHaveLength(1);
  const executions = await harness.executions(scope, label);
  // A later repeat of the request (another message id) replays the receipt and runs nothing.
  const again = await (await harness.send(scope, { toolId: 'fixture.tool', arguments: slow ? { ms: slowMs } : {}, idempotencyKey: 'crash-me' }, randomUUID())).reply(30_000);
  expect(again).toEqual(reply);
  expect(await harness.executions(scope, label)).toBe(executions);
  expect(await second.stop()).toBe(0);
  return { harness, scope, left: left === undefined ? undefined : { state: left.state, invocationId: left.invocationId }, executedBeforeRestart, reply, executions, events };
}

/** What the kill left stored (it must have left something). */
function leftOf(outcome: CrashOutcome): { readonly state: string; readonly invocationId: string } {
  if (outcome.left === undefined) throw new Error('nothing was stored before the kill');
  return outcome.left;
}

function receiptOf(outcome: CrashOutcome) {
  if (!outcome.reply.ok) throw new Error(`the call failed: ${outcome.reply.error.code}`);
  return outcome.reply.data.receipt;
}

function typesOf(outcome: CrashOutcome, invocationId: string): string[] {
  return outcome.events.filter((event) => 'invocationId' in event.metadata && event.metadata.invocationId === invocationId).map((event) => event.type);
}

describe.concurrent('the adapter process killed at a pipeline step and started again', { timeout: 240_000 }, () => {
  it.each(['READ', 'WRITE'] as const)('after Received: nothing was stored, and the redelivered %s call runs once as attempt 1', async (effect) => {
    await withHarness(`crash_received_${effect}`, async (harness) => {
      const outcome = await crashAndRecover(harness, effect, { failpoint: adapterFailpoints.afterReceived });
      // The stages before the started fact do no external effect: the first append carries Received…Started.
      expect(outcome.left).toBeUndefined();
      expect(outcome.executedBeforeRestart).toBe(0);
      expect(receiptOf(outcome)).toMatchObject({ state: 'Observed', attempt: 1 });
      expect(outcome.executions).toBe(1);
    });
  });

  it('after Started: a READ call gets attempt 2 and ends Observed, run once', async () => {
    await withHarness('crash_started_read', async (harness) => {
      const outcome = await crashAndRecover(harness, 'READ', { failpoint: adapterFailpoints.afterStarted });
      expect(leftOf(outcome).state).toBe('Executing');
      expect(outcome.executedBeforeRestart).toBe(0);
      const receipt = receiptOf(outcome);
      expect(receipt).toMatchObject({ state: 'Observed', attempt: 2 });
      expect(receipt.invocationId).not.toBe(leftOf(outcome).invocationId);
      expect(typesOf(outcome, leftOf(outcome).invocationId)).toEqual(['InvocationReceived', 'SandboxLeased', 'ToolCallStarted', 'ToolCallFailed']);
      expect(outcome.executions).toBe(1);
    });
  });

  it('after Started: a non-idempotent WRITE ends Uncertain with ToolEffectUncertain and never runs', async () => {
    await withHarness('crash_started_write', async (harness) => {
      const outcome = await crashAndRecover(harness, 'WRITE', { failpoint: adapterFailpoints.afterStarted });
      expect(leftOf(outcome).state).toBe('Executing');
      expect(receiptOf(outcome)).toMatchObject({ state: 'Uncertain', attempt: 1, invocationId: leftOf(outcome).invocationId, failure: { code: 'UNKNOWN_OUTCOME' } });
      expect(typesOf(outcome, leftOf(outcome).invocationId)).toContain('ToolEffectUncertain');
      expect(outcome.executions).toBe(0);
    });
  });

  it('during execution: a READ call gets attempt 2 and ends Observed', async () => {
    await withHarness('crash_during_read', async (harness) => {
      const outcome = await crashAndRecover(harness, 'READ', { duringExecution: true });
      expect(leftOf(outcome).state).toBe('Executing');
      expect(outcome.executedBeforeRestart).toBe(1);
      expect(receiptOf(outcome)).toMatchObject({ state: 'Observed', attempt: 2 });
      // A READ may run again: that is what attempt 2 is.
      expect(outcome.executions).toBe(2);
    });
  });

  it('during execution: a non-idempotent WRITE ends Uncertain and is never run again', async () => {
    await withHarness('crash_during_write', async (harness) => {
      const outcome = await crashAndRecover(harness, 'WRITE', { duringExecution: true });
      expect(leftOf(outcome).state).toBe('Executing');
      expect(outcome.executedBeforeRestart).toBe(1);
      expect(receiptOf(outcome)).toMatchObject({ state: 'Uncertain', attempt: 1, failure: { code: 'UNKNOWN_OUTCOME' } });
      expect(typesOf(outcome, leftOf(outcome).invocationId)).toContain('ToolEffectUncertain');
      expect(outcome.executions).toBe(1);
    });
  });

  it('after the provider returned, before the terminal fact: a READ gets attempt 2 and ends Observed', async () => {
    await withHarness('crash_returned_read', async (harness) => {
      const outcome = await crashAndRecover(harness, 'READ', { failpoint: adapterFailpoints.afterProviderReturned });
      expect(leftOf(outcome).state).toBe('Executing');
      expect(outcome.executedBeforeRestart).toBe(1);
      expect(receiptOf(outcome)).toMatchObject({ state: 'Observed', attempt: 2 });
      expect(outcome.executions).toBe(2);
    });
  });

  it('after the provider returned, before the terminal fact: a non-idempotent WRITE ends Uncertain, run once', async () => {
    await withHarness('crash_returned_write', async (harness) => {
      const outcome = await crashAndRecover(harness, 'WRITE', { failpoint: adapterFailpoints.afterProviderReturned });
      expect(leftOf(outcome).state).toBe('Executing');
      expect(outcome.executedBeforeRestart).toBe(1);
      expect(receiptOf(outcome)).toMatchObject({ state: 'Uncertain', attempt: 1, invocationId: leftOf(outcome).invocationId, failure: { code: 'UNKNOWN_OUTCOME' } });
      expect(typesOf(outcome, leftOf(outcome).invocationId)).toContain('ToolEffectUncertain');
      expect(outcome.executions).toBe(1);
    });
  });

  it('after the terminal fact, before its events: a WRITE is replayed (events published once), never run again', async () => {
    await withHarness('crash_terminal_write', async (harness) => {
      const outcome = await crashAndRecover(harness, 'WRITE', { failpoint: adapterFailpoints.afterTerminal });
      expect(leftOf(outcome).state).toBe('Observed');
      expect(outcome.executedBeforeRestart).toBe(1);
      expect(receiptOf(outcome)).toMatchObject({ state: 'Observed', attempt: 1, invocationId: leftOf(outcome).invocationId });
      expect(typesOf(outcome, leftOf(outcome).invocationId)).toEqual(['InvocationReceived', 'SandboxLeased', 'ToolCallStarted', 'SandboxReleased', 'ToolCallCompleted']);
      expect(outcome.executions).toBe(1);
    });
  });
});

describe('two adapter replicas (processes) on one stream, one killed mid-flight', () => {
  it('never execute one key twice: every copy gets the one receipt of its key, the interrupted write ends Uncertain', { timeout: 240_000 }, async () => {
    await withHarness('replicas', async (harness) => {
      const keys = 6;
      const scopes: Scope[] = [];
      // One workspace per key: each has its own count file, so executions are counted per key.
      for (let index = 0; index < keys; index += 1) {
        const scope = await harness.freshScope();
        await bindScenarioTool(harness, scope, 'WRITE', true);
        scopes.push(scope);
      }
      // Replica A dies the first time one of its provider calls returns; B is healthy.
      const replicaA = await harness.startAdapter({ TOOLPLANE_FAILPOINTS: `${adapterFailpoints.afterProviderReturned}=kill`, ADAPTER_CONCURRENCY: '2', INSTANCE_ID: 'replica-a' });
      const replicaB = await harness.startAdapter({ ADAPTER_CONCURRENCY: '2', INSTANCE_ID: 'replica-b' });
      const sent = [];
      // Two copies of every key under distinct message ids: only the store keeps them apart.
      for (const scope of scopes) {
        for (const copy of [undefined, randomUUID()]) sent.push({ scope, call: await harness.send(scope, { toolId: 'fixture.tool', arguments: { ms: 300 }, idempotencyKey: 'one-key' }, copy) });
      }
      expect(await replicaA.exited).toBe('SIGKILL');
      // A comes back (without the failpoint): two replicas again while A's requests are redelivered.
      const replicaA2 = await harness.startAdapter({ ADAPTER_CONCURRENCY: '2', INSTANCE_ID: 'replica-a2' });
      const replies = await Promise.all(sent.map(async ({ scope, call }) => ({ scope, reply: await call.reply(150_000) })));

      const states: string[] = [];
      for (const scope of scopes) {
        const ofKey = replies.filter((entry) => entry.scope === scope).map((entry) => entry.reply);
        expect(ofKey).toHaveLength(2);
        expect(ofKey[1]).toEqual(ofKey[0]);
        const document = await harness.stored(scope, 'one-key');
        expect(document?.state !== undefined && isTerminalInvocationState(document.state)).toBe(true);
        if (ofKey[0]?.ok !== true || document === undefined) throw new Error(`key in ${scope.workspace} failed: ${JSON.stringify(ofKey[0])}`);
        expect(ofKey[0].data.receipt).toEqual(document.receipt);
        const executions = await harness.executions(scope, 'slow-started');
        expect(executions).toBeLessThanOrEqual(1);
        if (document.state === 'Observed') expect(executions).toBe(1);
        if (document.state === 'Uncertain') {
          const events = await waitFor('ToolEffectUncertain', async () => {
            const all = await harness.storedEvents(scope);
            return all.some((event) => event.type === 'ToolEffectUncertain') ? all : undefined;
          });
          for (const [, types] of terminalEventsByInvocation(events)) expect(types).toHaveLength(1);
        }
        states.push(document.state);
      }
      // The call A was in when it died had run: it cannot be repeated and ends Uncertain; the others completed.
      expect(states.filter((state) => state === 'Uncertain').length).toBeGreaterThanOrEqual(1);
      expect(states.every((state) => state === 'Observed' || state === 'Uncertain')).toBe(true);
      expect(await replicaB.stop()).toBe(0);
      expect(await replicaA2.stop()).toBe(0);
    });
  });
});

describe('a replica killed mid-call while another one runs', () => {
  it('has its call taken over and answered well within the SDK\'s default timeout', { timeout: 120_000 }, async () => {
    await withHarness('takeover_time', async (harness) => {
      // A consumer left by an older adapter with a long ack wait: the adapter's start brings it to its setting.
      await ensureStream(harness.messaging, streams.invocations);
      await ensureConsumer(harness.messaging, streams.invocations.name, { durableName: toolAdapterConsumers.requests, ackWaitMs: 30_000 });
      const scope = await harness.freshScope();
      await bindScenarioTool(harness, scope, 'WRITE', true);
      const doomed = await harness.startAdapter();
      const ackWaitMs = toolAdapterConfig.shape.ADAPTER_ACK_WAIT_MS.parse(undefined);
      const consumer = await harness.messaging.manager.consumers.info(streams.invocations.name, toolAdapterConsumers.requests);
      expect(consumer.config.ack_wait).toBe(ackWaitMs * 1_000_000);
      // A provider call far longer than a takeover: the reply can only come from the replica that takes over.
      const call = await harness.send(scope, { toolId: 'fixture.tool', arguments: { ms: 60_000 }, idempotencyKey: 'killed-mid-call' });
      await waitFor('the provider call to start', async () => (await harness.executions(scope, 'slow-started')) === 1);
      const survivor = await harness.startAdapter({ INSTANCE_ID: 'survivor' });
      const killedAt = Date.now();
      doomed.child.kill('SIGKILL');
      const reply = await call.reply(60_000);
      const takeoverMs = Date.now() - killedAt;
      console.log(`takeover: SIGKILL of the adapter mid-call → the caller's outcome in ${takeoverMs} ms (ack wait ${ackWaitMs} ms)`);
      if (!reply.ok) throw new Error(`the call failed: ${reply.error.code}`);
      expect(reply.data.receipt).toMatchObject({ state: 'Uncertain', failure: { code: 'UNKNOWN_OUTCOME' } });
      expect(await harness.executions(scope, 'slow-started')).toBe(1);
      expect(takeoverMs).toBeLessThan(15_000);
      expect(await survivor.stop()).toBe(0);
    });
  });
});
