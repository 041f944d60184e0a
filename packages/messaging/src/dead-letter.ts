import type { DeadLetter, WireError } from '@toolplane/contracts';
import { wireSafe } from './wire-error.js';

/** The delivered message a dead letter is made of. */
export interface DeadLetterSource {
  readonly stream: string;
  readonly consumer: string;
  readonly subject: string;
  readonly streamSequence: number;
  readonly deliveryCount: number;
  readonly data: Uint8Array;
  readonly headers: Readonly<Record<string, readonly string[]>>;
}

// Room left in a NATS message for the dead letter's own headers and framing.
const framingBytes = 1024;

/**
 * The Nats-Msg-Id of a message's dead letter: the same on every attempt, so a crash between publishing
 * the dead letter and terminating the message cannot produce a second one (within the DLQ stream's window).
 */
export function deadLetterMsgId(source: Pick<DeadLetterSource, 'stream' | 'consumer' | 'streamSequence'>): string {
  return `dead-letter.${source.stream}.${source.consumer}.${source.streamSequence}`;
}

/**
 * Builds the dead letter of a message. The payload travels base64-encoded; if the result would not fit in
 * `maxPayloadBytes`, the payload is cut and the reason says how long it was, so a big poison message can
 * still be dead-lettered.
 */
export function buildDeadLetter(source: DeadLetterSource, reason: WireError, now: Date, maxPayloadBytes: number): DeadLetter {
  const letter: DeadLetter = {
    stream: source.stream,
    consumer: source.consumer,
    subject: source.subject,
    streamSequence: source.streamSequence,
    deliveryCount: Math.max(1, source.deliveryCount),
    reason: wireSafe(reason),
    payloadBase64: '',
    ...(Object.keys(source.headers).length > 0 ? { headers: Object.fromEntries(Object.entries(source.headers).map(([k, v]) => [k, [...v]])) } : {}),
    deadLetteredAt: now.toISOString(),
  };
  const room = maxPayloadBytes - framingBytes - Buffer.byteLength(JSON.stringify(letter));
  const fits = Math.floor(Math.max(0, room) / 4) * 3;
  if (source.data.byteLength <= fits) return { ...letter, payloadBase64: Buffer.from(source.data).toString('base64') };
  return {
    ...letter,
    reason: { ...letter.reason, details: { ...letter.reason.details, payloadTruncatedFromBytes: source.data.byteLength } },
    payloadBase64: Buffer.from(source.data.subarray(0, fits)).toString('base64'),
  };
}
