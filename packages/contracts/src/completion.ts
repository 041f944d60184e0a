import { z } from 'zod';
import { MAX_COMPLETION_VALUE_CHARS, MAX_COMPLETION_VALUES } from './limits.js';

// MCP's `completion/complete` as a governed call: what an invocation asks (one argument's partial value) and what a
// successful one answers (the values, bounded). The request travels in an InvocationRequest and is kept on the
// ToolInvocation; the answer is the call's structured content.

/**
 * What an MCP `completion/complete` asks of a bound prompt (or resource template): values for one argument, given the
 * partial value typed so far. The other arguments already chosen (MCP's `context.arguments`) are the request's
 * `arguments`, so they are hashed, stored and governed like any call's.
 */
export const InvocationCompletion = z.strictObject({
  argument: z.strictObject({
    /** The argument to complete: one the prompt (or template) declares. */
    name: z.string().min(1).max(256),
    /** What has been typed so far (may be empty). */
    value: z.string().max(MAX_COMPLETION_VALUE_CHARS),
  }),
});
export type InvocationCompletion = z.infer<typeof InvocationCompletion>;

/**
 * What a call did when it was not its descriptor's own operation (tools/call, resources/read, prompts/get):
 * `completion` asked for argument values (`completion/complete`). Named in its InvocationReceived event and its receipt,
 * so a record of a completion is never read as the prompt fetched or the resource read.
 */
export const InvocationOperation = z.enum(['completion']);
export type InvocationOperation = z.infer<typeof InvocationOperation>;

/**
 * The structured content of a successful completion: the values the server offered (sanitized, at most
 * MAX_COMPLETION_VALUES of at most MAX_COMPLETION_VALUE_CHARS each), how many there are in all if it said, and
 * whether there are more than these.
 */
export const CompletionContent = z.object({
  completion: z.object({
    values: z.array(z.string().max(MAX_COMPLETION_VALUE_CHARS)).max(MAX_COMPLETION_VALUES),
    total: z.number().int().nonnegative().optional(),
    hasMore: z.boolean().optional(),
  }),
});
export type CompletionContent = z.infer<typeof CompletionContent>;
