import { z } from 'zod';
import { InvocationReceipt } from './invocation-receipt.js';
import { MAX_RESULT_BYTES } from './limits.js';
import { JsonObject } from './primitives.js';
import type { TerminalInvocationState } from './states.js';
import { replyEnvelope } from './reply.js';

/** How an invocation ended, in the words a runtime shows to a model. */
export const InvocationStatus = z.enum(['SUCCESS', 'FAILED', 'DENIED', 'UNCERTAIN', 'CANCELLED']);
export type InvocationStatus = z.infer<typeof InvocationStatus>;

/** The status a result reports for each terminal state. */
export const invocationStatusByState = {
  Observed: 'SUCCESS',
  Failed: 'FAILED',
  Denied: 'DENIED',
  Uncertain: 'UNCERTAIN',
  Cancelled: 'CANCELLED',
} as const satisfies Record<TerminalInvocationState, InvocationStatus>;

/**
 * The normalized answer to an invocation: the sanitized content (only on SUCCESS) and the signed receipt. The
 * content is tool output, i.e. untrusted data: `provenance` says so, and a runtime must present it to a model
 * as data, never as instructions.
 */
export const InvocationResult = z
  .strictObject({
    status: InvocationStatus,
    structuredContent: JsonObject.optional(),
    textContent: z.string().max(MAX_RESULT_BYTES).optional(),
    /** True when the adapter cut the content to its size bound. */
    truncated: z.boolean(),
    provenance: z.literal('untrusted-tool-data'),
    receipt: InvocationReceipt,
  })
  .superRefine((result, ctx) => {
    if (result.status !== invocationStatusByState[result.receipt.state]) {
      ctx.addIssue({ code: 'custom', path: ['status'], message: `status ${result.status} does not match receipt state ${result.receipt.state}` });
    }
    if (result.status !== 'SUCCESS' && (result.structuredContent !== undefined || result.textContent !== undefined)) {
      ctx.addIssue({ code: 'custom', path: ['status'], message: 'only a successful invocation has content' });
    }
  });
export type InvocationResult = z.infer<typeof InvocationResult>;

/**
 * The reply to an invocation request, sent to `tp.v1.rpl.{tenant}.{workspace}.{replyInbox}`: a result with its
 * receipt (also when the call failed or was denied), or an error when no invocation could be recorded at all
 * (undecodable body, unverifiable token).
 */
export const InvocationReply = replyEnvelope(InvocationResult).meta({
  description: 'The reply to an invocation request: { ok: true, data: InvocationResult } or { ok: false, error: WireError }.',
});
export type InvocationReply = z.infer<typeof InvocationReply>;
