import type { z } from 'zod';
import { RequestError, TimeoutError } from '@nats-io/nats-core';
import { fromWireError, raceAbort, replyEnvelope, ToolplaneError, type ReplyEnvelope } from '@toolplane/contracts';
import { decode, encode } from './codec.js';
import { timeoutHeader, toMsgHdrs } from './headers.js';
import type { Messaging } from './messaging.js';
import { toToolplaneError } from './nats-errors.js';
import { injectTraceContext } from './trace-context.js';

/** A request to a serve() responder, with the contracts of both directions. */
export interface RequestOptions<Req extends z.ZodType, Res extends z.ZodType> {
  readonly subject: string;
  readonly requestSchema: Req;
  readonly replySchema: Res;
  readonly body: z.input<Req>;
  /** How long to wait for the reply; the responder is told, so it can give up too. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
}

/**
 * Sends a request over core NATS and returns the reply's data, or throws the responder's error rebuilt
 * with fromWireError (so its code survives the trip). An invalid body fails with INVALID_ARGUMENT before
 * anything is sent; no responder → TEMPORARY_UNAVAILABLE; no reply in time → TIMEOUT; a reply that breaks
 * the envelope or reply contract → INTERNAL.
 */
export async function request<Req extends z.ZodType, Res extends z.ZodType>(m: Messaging, options: RequestOptions<Req, Res>): Promise<z.output<Res>> {
  const what = `request on ${options.subject}`;
  const payload = encode(options.requestSchema, options.body, `the ${what}`);
  const headers = toMsgHdrs({ ...options.headers, [timeoutHeader]: String(options.timeoutMs) });
  injectTraceContext(headers);
  let reply;
  try {
    reply = await raceAbort(
      m.connection.request(options.subject, payload, { timeout: options.timeoutMs, headers }),
      options.signal,
      what,
    );
  } catch (error) {
    if (error instanceof TimeoutError) throw new ToolplaneError('TIMEOUT', `no reply to the ${what} within ${options.timeoutMs} ms`, { cause: error });
    if (error instanceof RequestError && error.isNoResponders()) {
      throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `no responder is serving ${options.subject}`, { cause: error });
    }
    throw toToolplaneError(error, what);
  }
  const decoded = decode(replyEnvelope(options.replySchema), reply.data, `the reply to the ${what}`);
  if (!decoded.ok) throw new ToolplaneError('INTERNAL', `malformed reply to the ${what}: ${decoded.reason.message}`, { details: decoded.reason.details ?? {} });
  // zod cannot narrow a discriminated union over a generic schema; the envelope was just validated.
  const envelope = decoded.value as ReplyEnvelope<z.output<Res>>;
  if (!envelope.ok) throw fromWireError(envelope.error);
  return envelope.data;
}
