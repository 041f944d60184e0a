// The processing lease of an executing call is renewed while its provider call runs. On FerretDB 1.x an update is
// a read, a filter applied in Go and a write of the whole document by `_id`: a renewal that read the document
// before the terminal write and wrote after it would put the call back to Executing. Here the renewal is held
// between its read and its write by a gate in the collection, the terminal write is issued, then the gate opens:
// the call must stay ended. No timing: the test waits for the renewal to reach the gate.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStore, type Filter, type Store, type StoreCollection } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { InvocationStore } from '../src/adapters/invocation-store.js';
import { advancePipeline, receiptSigner, toolInvocations, type StoredInvocation } from '../src/mod.js';
import { crashedCallState, receiptSigningKey, storedInvocation, testDescriptor } from '../src/testing.js';

const infra = testScope('adapter_lease');
let store: Store;

beforeAll(async () => {
  store = await connectStore({ url: infra.mongoUrl, dbName: infra.dbName, appName: 'adapter-lease-test' });
});

afterAll(async () => {
  await store.db.dropDatabase();
  await store.close();
});

/** A gate a write waits at: `reached` resolves when one arrives, the write goes on after `open()`. */
function gate() {
  let arrive: () => void = () => undefined;
  let open: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => (arrive = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { reached, opened, arrive: () => arrive(), open: () => open() };
}

/** An update document as the driver is given it. */
type Update = Readonly<Record<string, unknown>>;

function setOf(update: Update): Update {
  return (update['$set'] ?? {}) as Update;
}

/** Whether an update only renews the processing lease (sets `leaseUntil` and nothing of the call). */
function renewsLeaseOnly(update: Update): boolean {
  const set = setOf(update);
  return Object.keys(set).length === 1 && 'leaseUntil' in set && update['$unset'] === undefined;
}

/**
 * The invocations collection with the first lease renewal held at `held` between its read and its write, the two
 * steps FerretDB 1.x performs for every update: `updateOne` is carried out as exactly those steps against the real
 * server (find by the filter, then write the whole document by `_id`), a compare-and-set's write waits before it goes.
 */
function withHeldRenewal(collection: StoreCollection<StoredInvocation>, held: ReturnType<typeof gate>): StoreCollection<StoredInvocation> {
  let armed = true;
  const raw = new Proxy(collection.raw, {
    get(target, property, receiver) {
      if (property === 'updateOne') {
        return async (filter: Filter<StoredInvocation>, update: Update) => {
          if (!armed || !renewsLeaseOnly(update)) throw new Error('unexpected updateOne');
          armed = false;
          const read = await target.findOne(filter);
          held.arrive();
          await held.opened;
          if (read === null) return { matchedCount: 0, modifiedCount: 0 };
          const { _id, ...fields } = read;
          await target.replaceOne({ _id }, { ...fields, ...setOf(update) });
          return { matchedCount: 1, modifiedCount: 1 };
        };
      }
      if (property === 'findOneAndUpdate') {
        return async (filter: Filter<StoredInvocation>, update: Update, options: object) => {
          if (armed && renewsLeaseOnly(update)) {
            armed = false;
            held.arrive();
            await held.opened;
          }
          return target.findOneAndUpdate(filter, update, options as never);
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { ...collection, raw };
}

describe('renewing the processing lease of an executing call', () => {
  it('never undoes the terminal write that came while a renewal was in flight', { timeout: 30_000 }, async () => {
    const scope = { tenant: 'acme', workspace: 'w_lease' };
    const agentId = 'agent-support';
    const descriptor = testDescriptor({ scope, toolId: 'fixture.count', providerToolName: 'count_calls', mcpServerId: randomUUID() });
    const signReceipt = receiptSigner({ keyId: 'lease-test', privateKey: receiptSigningKey().privateKey });
    const caller = { principal: 'user:alice@acme.example', agentId, agentRevision: '7', roles: [] };
    const { state } = crashedCallState({ scope, descriptor, caller, arguments: { n: 1 }, idempotencyKey: 'lease-1', replyInbox: 'inbox_lease', signReceipt });
    expect(state.invocation.state).toBe('Executing');

    const held = gate();
    // A short lease: its renewal (every third of it) comes soon; the test waits for it at the gate, not for a time.
    const invocations = new InvocationStore(withHeldRenewal(store.collection(toolInvocations), held), 300);
    const inserted = await invocations.insert(state.invocation, new Date());
    expect(inserted.created).toBe(true);

    let ending = state;
    for (const outcome of [
      { step: 'EXECUTE', execution: { result: 'returned', output: { content: [{ type: 'text', text: '1' }] } } },
      { step: 'SANITIZE', secrets: [] },
      { step: 'FINISH' },
    ] as const) {
      const transition = advancePipeline(ending, outcome, { now: new Date().toISOString(), signReceipt });
      if (!transition.accepted) throw new Error(transition.problem);
      ending = transition.state;
    }
    expect(ending.invocation.state).toBe('Observed');

    const hold = invocations.holdWhileExecuting(state.invocation, () => new Date());
    await held.reached;
    // What the handler does when the provider call returned: stop renewing, then write the terminal fact, guarded
    // by the version the last renewal produced. Only then does the held renewal go on.
    const terminal = hold.release().then((latest) => invocations.advance(latest, ending.invocation, new Date(), { release: true }));
    held.open();
    const ended = await terminal;

    const stored = await storedInvocation(store, scope, 'lease-1');
    expect(stored?.state).toBe('Observed');
    expect(stored?.receipt).toEqual(ending.invocation.receipt);
    expect(stored?.leaseUntil).toBeUndefined();
    // The renewal did happen (one version), then the terminal write (the next one).
    expect(stored?.version).toBe(state.invocation.version + 2);
    expect(ended.version).toBe(stored?.version);
  });
});
