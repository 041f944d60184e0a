import { z } from 'zod';
import { WireError } from './errors.js';

/** The envelope of every request/reply answer: the typed result, or a WireError. */
export function replyEnvelope<T extends z.ZodType>(data: T) {
  return z.discriminatedUnion('ok', [z.object({ ok: z.literal(true), data }).strict(), z.object({ ok: z.literal(false), error: WireError }).strict()]);
}
/** A request/reply answer, success or failure. */
export type ReplyEnvelope<T> = { ok: true; data: T } | { ok: false; error: WireError };
