// The processing lease of an executing call is renewed while its provider call runs. A renewal is an append to the
// call's subject at the version its handler last wrote, so it can never land after the terminal write and undo it
// (issue 10's bug: a renewal read before the terminal write and written after it put the call back to Executing).
// Here the renewal is held at a gate in the event store on its way to JetStream, the terminal write is issued, then
// the gate opens: the call must stay ended. No timing: the test waits for the renewal to reach the gate.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvocationStateEvent, ToolCallIndexed, invocationStateStream, type Scope } from '@toolplane/contracts';
import { jetStreamEventStore, type EventStore } from '@toolplane/event-store';
import { connectMessaging, ensureStream, type Messaging } from '@toolplane/messaging';
import { testScope } from '@toolplane/testing';
import { InvocationCalls } from '../src/adapters/invocation-store.js';
import { advancePipeline, receiptSigner, type PipelineState } from '../src/mod.js';
import { crashedCallState, receiptSigningKey, storedInvocation, testDescriptor } from '../src/testing.js';

const infra = testScope('adapter_lease');
let messaging: Messaging;

beforeAll(async () => {
  messaging = await connectMessaging({ url: infra.natsUrl, name: 'adapter-lease-test' });
  await ensureStream(messaging, invocationStateStream);
});

afterAll(async () => {
  await messaging.drain();
});

/** A gate an append waits at: `reached` resolves when one arrives, the append goes on after `open()`. */
function gate() {
  let arrive: () => void = () => undefined;
  let open: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => (arrive = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { reached, opened, arrive: () => arrive(), open: () => open() };
}

/** The calls' JetStream store with every lease renewal held at `held` before it is sent. */
function withHeldRenewals(held: ReturnType<typeof gate>): InvocationCalls {
  const subjectOf = (id: string) => id;
  const inner = jetStreamEventStore(messaging, { stream: invocationStateStream.name, subjectOf, schema: InvocationStateEvent });
  const gated: EventStore<InvocationStateEvent> = {
    readStream: (id, options) => inner.readStream(id, options),
    appendToStream: async (id, events, options) => {
      if (events[0]?.type === 'InvocationLeaseRenewed') {
        held.arrive();
        await held.opened;
      }
      return inner.appendToStream(id, events, options);
    },
  };
  return new InvocationCalls(gated, jetStreamEventStore(messaging, { stream: invocationStateStream.name, subjectOf, schema: ToolCallIndexed }), 300);
}

function executingCall(scope: Scope, key: string) {
  const descriptor = testDescriptor({ scope, toolId: 'fixture.count', providerToolName: 'count_calls', mcpServerId: randomUUID() });
  const signReceipt = receiptSigner({ keyId: 'lease-test', privateKey: receiptSigningKey().privateKey });
  const caller = { principal: 'user:alice@acme.example', agentId: 'agent-support', agentRevision: '7', roles: [] };
  const { state, events } = crashedCallState({ scope, descriptor, caller, arguments: { n: 1 }, idempotencyKey: key, replyInbox: 'inbox_lease', signReceipt });
  let ending: PipelineState = state;
  for (const outcome of [
    { step: 'EXECUTE', execution: { result: 'returned', output: { content: [{ type: 'text', text: '1' }] } } },
    { step: 'SANITIZE', secrets: [] },
    { step: 'FINISH' },
  ] as const) {
    const transition = advancePipeline(ending, outcome, { now: new Date().toISOString(), signReceipt });
    if (!transition.accepted) throw new Error(transition.problem);
    ending = transition.state;
  }
  return { state, events, ending };
}

describe('renewing the processing lease of an executing call', () => {
  it('never undoes the terminal write that came while a renewal was in flight', { timeout: 30_000 }, async () => {
    const scope = { tenant: 'acme', workspace: `w_${randomUUID().slice(0, 8)}` };
    const { state, events, ending } = executingCall(scope, 'lease-1');
    expect(state.invocation.state).toBe('Executing');
    expect(ending.invocation.state).toBe('Observed');
    const held = gate();
    const calls = withHeldRenewals(held);
    const started = await calls.record(calls.unread(scope, 'lease-1'), { invocation: state.invocation, events, settled: false, now: new Date() });

    const hold = calls.holdWhileExecuting(started, () => new Date());
    await held.reached;
    // What the handler does when the provider call returned: stop renewing, then write the terminal fact at the
    // version the last renewal produced. Only then does the held renewal go on.
    const terminal = hold.release().then((latest) => calls.record(latest, { invocation: ending.invocation, events: [], settled: true, now: new Date() }));
    held.open();
    const ended = await terminal;

    const stored = await storedInvocation(messaging, scope, 'lease-1');
    expect(stored?.state).toBe('Observed');
    expect(stored?.receipt).toEqual(ending.invocation.receipt);
    expect(stored?.leaseUntil).toBeUndefined();
    // The renewal did happen (one append), then the terminal write (the next one).
    expect(ended.version).toBeGreaterThan(started.version);
    expect((await calls.read(scope, 'lease-1')).version).toBe(ended.version);
  });

  it('refuses a renewal decided before the terminal write that arrives after it (the version moved on)', { timeout: 30_000 }, async () => {
    const scope = { tenant: 'acme', workspace: `w_${randomUUID().slice(0, 8)}` };
    const { state, events, ending } = executingCall(scope, 'lease-2');
    const held = gate();
    const calls = withHeldRenewals(held);
    const started = await calls.record(calls.unread(scope, 'lease-2'), { invocation: state.invocation, events, settled: false, now: new Date() });
    const hold = calls.holdWhileExecuting(started, () => new Date());
    await held.reached;
    // A handler that did not wait for the renewal in flight (the bug): its terminal write goes first.
    await calls.record(started, { invocation: ending.invocation, events: [], settled: true, now: new Date() });
    held.open();
    await hold.release();
    const stored = await storedInvocation(messaging, scope, 'lease-2');
    expect(stored?.state).toBe('Observed');
    expect(stored?.leaseUntil).toBeUndefined();
  });

  it('appends the terminal write after a renewal of its own stored late (resent after a NATS reconnect), and refuses it after another handler’s record', { timeout: 30_000 }, async () => {
    const scope = { tenant: 'acme', workspace: `w_${randomUUID().slice(0, 8)}` };
    const { state, events, ending } = executingCall(scope, 'lease-3');
    const subjectOf = (id: string) => id;
    const store = jetStreamEventStore(messaging, { stream: invocationStateStream.name, subjectOf, schema: InvocationStateEvent });
    const calls = new InvocationCalls(store, jetStreamEventStore(messaging, { stream: invocationStateStream.name, subjectOf, schema: ToolCallIndexed }), 300);
    const started = await calls.record(calls.unread(scope, 'lease-3'), { invocation: state.invocation, events, settled: false, now: new Date() });
    // The handler's renewal, given up on while NATS was away, stored once the connection came back: the handler's
    // position is one version behind.
    const leaseUntil = new Date(Date.now() + 60_000).toISOString();
    await store.appendToStream(started.streamId, [{ type: 'InvocationLeaseRenewed', data: { invocationId: state.invocation.invocationId, leaseUntil } }], { expectedVersion: started.version });
    const ended = await calls.record(started, { invocation: ending.invocation, events: [], settled: true, now: new Date() });
    expect(ended.version).toBeGreaterThan(started.version + 1);
    const stored = await storedInvocation(messaging, scope, 'lease-3');
    expect(stored?.state).toBe('Observed');
    expect(stored?.leaseUntil).toBeUndefined();
    // A record decided on the executing call after another handler moved it on (here: ended it) is refused.
    await expect(calls.record(started, { invocation: ending.invocation, events: [], settled: true, now: new Date() })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await calls.read(scope, 'lease-3')).version).toBe(ended.version);
  });
});
