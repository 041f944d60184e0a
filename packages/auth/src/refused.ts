import { ToolplaneError } from '@toolplane/contracts';

/** A token refusal: AUTHENTICATION_FAILED with a reason that never quotes the token. */
export function refused(reason: string, options: { readonly cause?: unknown; readonly retryable?: boolean } = {}): ToolplaneError {
  return new ToolplaneError('AUTHENTICATION_FAILED', `token refused: ${reason}`, {
    ...(options.cause === undefined ? {} : { cause: options.cause }),
    ...(options.retryable === undefined ? {} : { retryable: options.retryable }),
  });
}
