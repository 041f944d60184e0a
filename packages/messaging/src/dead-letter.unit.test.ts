import { describe, expect, it } from 'vitest';
import { DeadLetter } from '@toolplane/contracts';
import { buildDeadLetter, deadLetterMsgId, type DeadLetterSource } from './dead-letter.js';

const source: DeadLetterSource = {
  stream: 'INVOCATIONS',
  consumer: 'tool_adapter',
  subject: 'toolplane.v1.invocations.t1.w1',
  streamSequence: 42,
  deliveryCount: 3,
  data: new TextEncoder().encode('{"bad":'),
  headers: { 'Nats-Msg-Id': ['abc'] },
};
const now = new Date('2026-01-02T03:04:05.000Z');

describe('deadLetterMsgId', () => {
  it('is derived from stream, consumer and stream sequence only', () => {
    expect(deadLetterMsgId(source)).toBe('dead-letter.INVOCATIONS.tool_adapter.42');
    expect(deadLetterMsgId({ ...source, streamSequence: 43 })).not.toBe(deadLetterMsgId(source));
  });
});

describe('buildDeadLetter', () => {
  it('carries the message as received and the reason, and satisfies the contract', () => {
    const letter = buildDeadLetter(source, { code: 'INVALID_ARGUMENT', message: 'not JSON', retryable: false }, now, 1024 * 1024);
    expect(DeadLetter.parse(letter)).toEqual({
      stream: 'INVOCATIONS',
      consumer: 'tool_adapter',
      subject: 'toolplane.v1.invocations.t1.w1',
      streamSequence: 42,
      deliveryCount: 3,
      reason: { code: 'INVALID_ARGUMENT', message: 'not JSON', retryable: false },
      payloadBase64: Buffer.from('{"bad":').toString('base64'),
      headers: { 'Nats-Msg-Id': ['abc'] },
      deadLetteredAt: '2026-01-02T03:04:05.000Z',
    });
  });

  it('cuts a payload that would not fit and says how long it was', () => {
    const big = { ...source, data: new Uint8Array(10_000).fill(65) };
    const letter = buildDeadLetter(big, { code: 'TIMEOUT', message: 'slow', retryable: true }, now, 4_096);
    expect(Buffer.byteLength(JSON.stringify(letter))).toBeLessThanOrEqual(4_096);
    expect(letter.reason.details).toEqual({ payloadTruncatedFromBytes: 10_000 });
    expect(Buffer.from(letter.payloadBase64, 'base64').every((byte) => byte === 65)).toBe(true);
  });

  it('bounds an over-long reason so the dead letter still satisfies the contract', () => {
    const letter = buildDeadLetter(source, { code: 'INTERNAL', message: 'x'.repeat(10_000), retryable: false }, now, 1024 * 1024);
    expect(DeadLetter.safeParse(letter).success).toBe(true);
  });
});
