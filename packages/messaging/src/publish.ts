import type { z } from 'zod';
import { ToolplaneError } from '@toolplane/contracts';
import { encode } from './codec.js';
import { msgIdHeader, toMsgHdrs } from './headers.js';
import type { Messaging } from './messaging.js';
import { toToolplaneError } from './nats-errors.js';

/** A message to publish to JetStream, with the contract it must satisfy. */
export interface PublishOptions<S extends z.ZodType> {
  readonly subject: string;
  readonly schema: S;
  readonly message: z.input<S>;
  /** Deduplication id (Nats-Msg-Id): derive it from the message's identity so a retried publish is dropped. */
  readonly msgId: string;
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
  /** Deadline for the stream's acknowledgement; default the connection's JetStream timeout. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** Where a published message was stored; `duplicate` when its msgId was already in the stream's window. */
export interface PublishAck {
  readonly stream: string;
  readonly seq: number;
  readonly duplicate: boolean;
}

/**
 * Validates a message against its contract and publishes it as JSON to JetStream with its Nats-Msg-Id.
 * An invalid message fails with INVALID_ARGUMENT and nothing is published; a subject no stream captures,
 * or JetStream being down, fails with TEMPORARY_UNAVAILABLE. Retrying with the same msgId is always safe.
 */
export async function publish<S extends z.ZodType>(m: Messaging, options: PublishOptions<S>): Promise<PublishAck> {
  const what = `publishing to ${options.subject}`;
  if (options.msgId.trim() === '') throw new ToolplaneError('INVALID_ARGUMENT', `${what}: msgId must not be empty`);
  const payload = encode(options.schema, options.message, `the message for ${options.subject}`);
  const headers = toMsgHdrs(options.headers);
  headers.set(msgIdHeader, options.msgId);
  try {
    return await m.publisher.publish({ subject: options.subject, payload, headers, timeoutMs: options.timeoutMs, signal: options.signal, what });
  } catch (error) {
    throw toToolplaneError(error, what);
  }
}
