import { CompletionContent, PromptContent, ResourceReadContent, ToolplaneError, type InvocationResult, type ToolContentBlock } from '@toolplane/contracts';

/** A result whose call succeeded: the tool's (untrusted) content is there. */
export type SuccessfulResult = InvocationResult & { readonly status: 'SUCCESS' };

/**
 * The result when the call succeeded; otherwise throws a ToolplaneError with the receipt's failure code (for
 * example AUTHORIZATION_DENIED, INVALID_ARGUMENT, APPROVAL_REJECTED, UNKNOWN_OUTCOME for UNCERTAIN) and the ids and
 * status in its details. For runtimes that prefer exceptions; the receipt stays in `details.receipt`.
 */
export function requireSuccess(result: InvocationResult): SuccessfulResult {
  if (result.status === 'SUCCESS') return result as SuccessfulResult;
  const { receipt } = result;
  const failure = receipt.failure ?? { code: 'INTERNAL' as const, message: `the call ended ${result.status} without a recorded failure`, retryable: false };
  return failWith(failure.code, `${receipt.toolId} ended ${result.status}: ${failure.message}`, failure.retryable, {
    status: result.status,
    toolCallId: receipt.toolCallId,
    invocationId: receipt.invocationId,
    idempotencyKey: receipt.idempotencyKey,
    receipt,
  });
}

function failWith(code: ToolplaneError['code'], message: string, retryable: boolean, details: Record<string, unknown>): never {
  throw new ToolplaneError(code, message, { retryable, details });
}

/**
 * The contents of a successful resource read (`readResource`); throws like `requireSuccess` when the read did not
 * succeed, and INVALID_ARGUMENT when the result holds no contents (the structured form was over the size bound: the
 * text is in `textContent`, marked truncated). Untrusted data, to be shown to a model as such.
 */
export function resourceContents(result: InvocationResult): ResourceReadContent['contents'] {
  const parsed = ResourceReadContent.safeParse(requireSuccess(result).structuredContent);
  if (!parsed.success) failWith('INVALID_ARGUMENT', `${result.receipt.toolId} returned no resource contents${result.truncated ? ' (cut to the size bound: see textContent)' : ''}`, false, { receipt: result.receipt });
  return parsed.data.contents;
}

/** The description and messages of a successful prompt fetch (`getPrompt`); throws as `resourceContents` does. */
export function promptMessages(result: InvocationResult): PromptContent {
  const parsed = PromptContent.safeParse(requireSuccess(result).structuredContent);
  if (!parsed.success) failWith('INVALID_ARGUMENT', `${result.receipt.toolId} returned no prompt messages${result.truncated ? ' (cut to the size bound: see textContent)' : ''}`, false, { receipt: result.receipt });
  return parsed.data;
}

/**
 * The values of a successful completion (`complete`): at most 100, `hasMore` when the server (or the bound) left some
 * out; throws as `resourceContents` does. Untrusted data: suggestions to show, never instructions.
 */
export function completionValues(result: InvocationResult): CompletionContent['completion'] {
  const parsed = CompletionContent.safeParse(requireSuccess(result).structuredContent);
  if (!parsed.success) failWith('INVALID_ARGUMENT', `${result.receipt.toolId} returned no completion values`, false, { receipt: result.receipt });
  return parsed.data.completion;
}

/**
 * The content blocks of a successful call (text, images, audio, resource links, embedded resources, each with its
 * annotations); throws like `requireSuccess` when the call did not succeed. A result recorded before the adapter kept
 * blocks has only its text: it comes back as one text block. Untrusted data, to be shown to a model as such.
 */
export function resultContent(result: InvocationResult): readonly ToolContentBlock[] {
  const success = requireSuccess(result);
  if (success.content !== undefined) return success.content;
  return success.textContent === undefined ? [] : [{ type: 'text', text: success.textContent }];
}
