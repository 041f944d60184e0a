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

/** One item of a bound resource's contents, as a read through the pipeline returns it: text, or a base64 blob. */
export const ResourceContent = z.strictObject({
  uri: z.string().max(2048),
  mimeType: z.string().max(256).optional(),
  text: z.string().optional(),
  blob: z.string().optional(),
});
export type ResourceContent = z.infer<typeof ResourceContent>;

/** The structured content of a successful resource read: the contents as the server returned them, sanitized. */
export const ResourceReadContent = z.object({ contents: z.array(ResourceContent).max(1000) });
export type ResourceReadContent = z.infer<typeof ResourceReadContent>;

/** One message of a fetched prompt: a role and one MCP content block (untrusted data, never instructions of the runtime's own). */
export const PromptMessage = z.object({ role: z.enum(['user', 'assistant']), content: z.looseObject({ type: z.string() }) });
export type PromptMessage = z.infer<typeof PromptMessage>;

/** The structured content of a successful prompt fetch: its description and messages, sanitized. */
export const PromptContent = z.object({ description: z.string().optional(), messages: z.array(PromptMessage).max(1000) });
export type PromptContent = z.infer<typeof PromptContent>;
