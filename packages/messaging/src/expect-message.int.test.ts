import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolplaneError, type WireError } from '@toolplane/contracts';
import { testScope } from '@toolplane/testing';
import { connectMessaging } from './connect.js';
import { expectMessage } from './expect-message.js';
import type { Messaging } from './messaging.js';

const scope = testScope('messaging_expect_message');
const Answer = z.strictObject({ value: z.number() });
let m: Messaging;
let other: Messaging;
let n = 0;
const subject = () => `${scope.prefix}.answers.${++n}`;
const send = (to: string, body: unknown) => other.connection.publish(to, JSON.stringify(body));

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_expect` });
  other = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_sender` });
});
afterAll(async () => {
  await other.drain();
  await m.drain();
});

describe('expectMessage', () => {
  it('resolves with the first message that satisfies the contract, skipping (and reporting) others', async () => {
    const s = subject();
    const invalid: WireError[] = [];
    const expected = expectMessage(m, { subject: s, schema: Answer, onInvalid: (reason) => invalid.push(reason) });
    // The subscription is on the server once a round trip on the same connection returns.
    await m.connection.flush();
    send(s, { value: 'nope' });
    send(s, { value: 42 });
    send(s, { value: 43 });
    await expect(expected.received).resolves.toEqual({ value: 42 });
    expect(invalid).toHaveLength(1);
    expect(invalid[0]?.code).toBe('INVALID_ARGUMENT');
  });

  it('rejects with the abort reason (a ToolplaneError) or CANCELLED, and on close', async () => {
    const controller = new AbortController();
    const waiting = expectMessage(m, { subject: subject(), schema: Answer, signal: controller.signal });
    controller.abort(new ToolplaneError('TIMEOUT', 'deadline'));
    await expect(waiting.received).rejects.toMatchObject({ code: 'TIMEOUT' });
    const plain = new AbortController();
    const cancelled = expectMessage(m, { subject: subject(), schema: Answer, signal: plain.signal });
    plain.abort();
    await expect(cancelled.received).rejects.toMatchObject({ code: 'CANCELLED' });
    const closed = expectMessage(m, { subject: subject(), schema: Answer });
    closed.close();
    await expect(closed.received).rejects.toMatchObject({ code: 'CANCELLED' });
    await expect(expectMessage(m, { subject: subject(), schema: Answer, signal: AbortSignal.abort() }).received).rejects.toMatchObject({ code: 'CANCELLED' });
  });
});
