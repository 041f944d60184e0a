import { hasErrorCode, type ErrorCode } from '@toolplane/contracts';

/** An error as a page shows it: the taxonomy code and the message, exactly as the service that raised it said. */
export interface TypedError {
  readonly code: ErrorCode;
  readonly message: string;
}

/** The typed error of a failure; anything outside the taxonomy is INTERNAL without its message (it may hold anything). */
export function typedErrorOf(error: unknown): TypedError {
  if (hasErrorCode(error)) return { code: error.code, message: error.message };
  return { code: 'INTERNAL', message: 'an unexpected failure in the console' };
}
