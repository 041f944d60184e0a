import { ToolplaneError, type InvocationResult } from '@toolplane/contracts';

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
