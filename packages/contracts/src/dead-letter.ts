import { z } from 'zod';
import { WireError } from './errors.js';

/** What a consumer publishes when it gives up on a message: the message as received and why. */
export const DeadLetter = z
  .object({
    stream: z.string(),
    consumer: z.string(),
    subject: z.string(),
    streamSequence: z.number().int().nonnegative(),
    deliveryCount: z.number().int().positive(),
    reason: WireError,
    /** The original payload, base64-encoded (it may not be valid UTF-8 or JSON). */
    payloadBase64: z.string(),
    headers: z.record(z.string(), z.array(z.string())).optional(),
    deadLetteredAt: z.iso.datetime(),
  })
  .strict()
  .meta({ description: 'A message a consumer gave up on, published to tp.v1.dlq.{stream}.{consumer}.' });
export type DeadLetter = z.infer<typeof DeadLetter>;
