// A call a killed handler left behind (its document as the adapter stored it, the processing lease lapsed) is taken
// over by another copy of the request: same key and arguments, its own reply inbox, as a runtime sends it when it
// retries. The copy that drives the call to its end gets the outcome on its own inbox (a raw runtime has no lookup
// to fall back on), and the stored request's inbox gets it too. One adapter process on a nats-server of its own.
import { describe, expect, it } from 'vitest';
import { invocationReplySubject, InvocationReply, type Scope, type ToolDescriptor } from '@toolplane/contracts';
import { testScope } from '@toolplane/testing';
import { receiptSigner } from '../src/mod.js';
import { newReplyInbox, receiptSigningKey, storeLeftByCrash, OUTCOMES_TO_START } from '../src/testing.js';
import { AdapterHarness, harnessAgent, startNatsServer, type AdapterProcess } from './adapter-harness.js';

const replyWithinMs = 20_000;

async function withAdapter(work: (harness: AdapterHarness) => Promise<void>): Promise<void> {
  const nats = await startNatsServer();
  const { mongoUrl, dbName } = testScope('takeover_replies');
  let harness: AdapterHarness | undefined;
  let adapter: AdapterProcess | undefined;
  try {
    harness = await AdapterHarness.start({ natsUrl: nats.url, mongoUrl, dbName });
    adapter = await harness.startAdapter();
    await work(harness);
    expect(await adapter.stop()).toBe(0);
  } finally {
    await harness?.close();
    await nats.stop();
  }
}

/** The first reply on `inbox` of `scope` (subscribed now). */
function firstReplyOn(harness: AdapterHarness, scope: Scope, inbox: string): Promise<InvocationReply> {
  const subscription = harness.messaging.connection.subscribe(invocationReplySubject(scope, inbox), { max: 1, timeout: replyWithinMs });
  return (async () => {
    for await (const message of subscription) return InvocationReply.parse(JSON.parse(message.string()));
    throw new Error(`no reply on the stored inbox ${inbox}`);
  })();
}

/** Leaves `key` as a killed handler would after `stopAfter` outcomes, its request naming `storedInbox`. */
async function leaveCall(harness: AdapterHarness, scope: Scope, descriptor: ToolDescriptor, key: string, storedInbox: string, stopAfter: number) {
  const signReceipt = receiptSigner({ keyId: 'takeover-test', privateKey: receiptSigningKey().privateKey });
  const caller = { principal: 'user:alice@acme.example', agentId: harnessAgent, agentRevision: '1', roles: [] };
  return storeLeftByCrash(harness.messaging, { scope, descriptor, caller, arguments: {}, idempotencyKey: key, replyInbox: storedInbox, signReceipt, stopAfter });
}

describe('a copy of a request that takes over a call a dead handler left', () => {
  it.each([
    { left: 'Received', effect: 'READ', stopAfter: 0, ends: 'Observed', decision: 'resume' },
    { left: 'Executing', effect: 'READ', stopAfter: OUTCOMES_TO_START, ends: 'Observed', decision: 'new_attempt' },
    { left: 'Executing', effect: 'WRITE', stopAfter: OUTCOMES_TO_START, ends: 'Uncertain', decision: 'uncertain' },
  ] as const)('left $left, a $effect ($decision): the copy gets the outcome on its own inbox, and so does the stored one', { timeout: 90_000 }, async ({ left, effect, stopAfter, ends }) => {
    await withAdapter(async (harness) => {
      const scope = await harness.freshScope();
      const classes: Partial<ToolDescriptor> = effect === 'READ' ? { sideEffectClass: 'READ', riskClass: 'LOW', idempotency: 'NATURAL' } : { sideEffectClass: 'WRITE', riskClass: 'MEDIUM', idempotency: 'NONE' };
      const descriptor = await harness.bindTool(scope, 'fixture.tool', 'count_calls', 'counting', classes);
      const storedInbox = newReplyInbox();
      const leftBehind = await leaveCall(harness, scope, descriptor, 'taken-over', storedInbox, stopAfter);
      expect(leftBehind.state).toBe(left);
      const onStoredInbox = firstReplyOn(harness, scope, storedInbox);
      await harness.messaging.connection.flush();

      const copy = await harness.send(scope, { toolId: 'fixture.tool', arguments: {}, idempotencyKey: 'taken-over' });
      expect(copy.request.replyInbox).not.toBe(storedInbox);
      const reply = await copy.reply(replyWithinMs);
      if (!reply.ok) throw new Error(`the copy was refused: ${reply.error.code} ${reply.error.message}`);
      expect(reply.data.receipt.state).toBe(ends);
      expect(await onStoredInbox).toEqual(reply);
      const document = await harness.stored(scope, 'taken-over');
      expect(reply.data.receipt).toEqual(document?.receipt);
    });
  });
});
