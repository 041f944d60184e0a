import { ToolplaneError, hasErrorCode, isRetryable, type ErrorCode, type ToolFailure } from '@toolplane/contracts';
import type { McpToolResult } from './model.js';

/** Options of toolResultError. */
export interface ToolResultErrorOptions {
  /** The code the failure gets; INTERNAL by default (the tool said it failed, nothing says why). */
  readonly code?: ErrorCode | undefined;
}

/**
 * Maps a result the tool marked `isError: true` to a failure; undefined for a successful result. The tool ran
 * and reported the failure itself, so the outcome is known (not UNKNOWN_OUTCOME) and nothing is retried by
 * default. The tool's own text stays out of the message (it is untrusted output and may echo arguments); it is
 * kept, bounded, in `details.providerMessage` for local diagnostics.
 */
export function toolResultError(result: McpToolResult, options: ToolResultErrorOptions = {}): ToolplaneError | undefined {
  if (!result.isError) return undefined;
  const text = result.content.find((block) => block.type === 'text')?.text;
  return new ToolplaneError(options.code ?? 'INTERNAL', 'the tool reported an error (isError)', {
    retryable: false,
    details: { providerErrorType: 'ToolResultIsError', ...(text === undefined ? {} : { providerMessage: text.slice(0, 1024) }) },
  });
}

/**
 * The contract's ToolFailure (as receipts and lifecycle events record it) for an error this package threw:
 * code, message, retryability and the provider's error type, without free-form details.
 */
export function toToolFailure(error: unknown): ToolFailure {
  if (!hasErrorCode(error)) return { code: 'INTERNAL', message: 'internal error', retryable: false };
  const details = error instanceof ToolplaneError ? error.details : undefined;
  const providerErrorType = details?.['providerErrorType'];
  return {
    code: error.code,
    message: error.message.slice(0, 4096),
    retryable: typeof error.retryable === 'boolean' ? error.retryable : isRetryable(error.code),
    ...(typeof providerErrorType === 'string' && providerErrorType !== '' ? { providerErrorType: providerErrorType.slice(0, 256) } : {}),
  };
}
