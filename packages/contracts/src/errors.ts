import { z } from 'zod';

/**
 * The one error taxonomy of Toolplane. Every failure that crosses a service boundary carries one of these
 * codes; callers decide by code (and by `retryable`), never by class or message text.
 */
export const errorCatalog = {
  AUTHENTICATION_FAILED: { retryable: false, summary: 'the caller could not be authenticated' },
  AUTHORIZATION_DENIED: { retryable: false, summary: 'the caller may not do this' },
  NOT_FOUND: { retryable: false, summary: 'the named thing does not exist in this scope' },
  CONFLICT: { retryable: false, summary: 'the request conflicts with the current state' },
  RATE_LIMITED: { retryable: true, summary: 'a rate limit was reached; retry later' },
  TIMEOUT: { retryable: true, summary: 'the deadline passed before an answer came' },
  TEMPORARY_UNAVAILABLE: { retryable: true, summary: 'a dependency is unavailable for now' },
  INVALID_ARGUMENT: { retryable: false, summary: 'the request is malformed or violates a schema' },
  UNKNOWN_OUTCOME: { retryable: false, summary: 'the effect may or may not have happened; reconcile before retrying' },
  APPROVAL_REJECTED: { retryable: false, summary: 'a human rejected the approval this call needed' },
  APPROVAL_EXPIRED: { retryable: false, summary: 'the approval this call needed expired undecided' },
  APPROVAL_PENDING: { retryable: true, summary: 'the call waits for a human approval; re-attach with its idempotency key' },
  CANCELLED: { retryable: false, summary: 'the caller cancelled the operation' },
  INTERNAL: { retryable: false, summary: 'an unexpected failure inside Toolplane' },
} as const satisfies Record<string, { retryable: boolean; summary: string }>;

/** A stable SCREAMING_SNAKE error code. */
export const ErrorCode = z.enum(Object.keys(errorCatalog) as [keyof typeof errorCatalog, ...(keyof typeof errorCatalog)[]]);
export type ErrorCode = z.infer<typeof ErrorCode>;

/** An error as it travels on the wire (in replies, events and dead letters). */
export const WireError = z
  .object({
    code: ErrorCode,
    message: z.string().max(4096),
    retryable: z.boolean(),
    details: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type WireError = z.infer<typeof WireError>;

/**
 * A failure as recorded in receipts and lifecycle events: a WireError without free-form `details` (which could
 * carry arguments or results, and whose keys could not be stored), plus the provider's own error type, so
 * diagnostics keep what the provider said.
 */
export const ToolFailure = z
  .object({
    code: ErrorCode,
    message: z.string().max(4096),
    retryable: z.boolean(),
    /** The provider's error kind, for example `JsonRpcError(-32603)`, `HttpStatus(503)`, `ToolResultIsError`. */
    providerErrorType: z.string().min(1).max(256).optional(),
  })
  .strict();
export type ToolFailure = z.infer<typeof ToolFailure>;

/** Whether an error with this code may be retried as it is. */
export function isRetryable(code: ErrorCode): boolean {
  return errorCatalog[code].retryable;
}

/** A local error carrying a taxonomy code; crosses boundaries as a WireError. */
export class ToolplaneError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: { details?: Record<string, unknown>; cause?: unknown; retryable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ToolplaneError';
    this.code = code;
    this.retryable = options.retryable ?? isRetryable(code);
    this.details = options.details;
  }

  toWire(): WireError {
    return { code: this.code, message: this.message, retryable: this.retryable, ...(this.details ? { details: this.details } : {}) };
  }
}

/** Recognises a taxonomy error by its code, whatever realm or package created it. */
export function hasErrorCode(error: unknown): error is { code: ErrorCode; message: string; retryable: boolean } {
  return (
    typeof error === 'object' &&
    error !== null &&
    ErrorCode.safeParse((error as { code?: unknown }).code).success &&
    typeof (error as { message?: unknown }).message === 'string'
  );
}

/** Turns anything thrown into a WireError; unknown failures become INTERNAL without leaking their text. */
export function toWireError(error: unknown): WireError {
  if (error instanceof ToolplaneError) return error.toWire();
  if (hasErrorCode(error)) {
    return { code: error.code, message: error.message, retryable: typeof error.retryable === 'boolean' ? error.retryable : isRetryable(error.code) };
  }
  return { code: 'INTERNAL', message: 'internal error', retryable: false };
}

/** Rebuilds a local error from a WireError received from another service. */
export function fromWireError(wire: WireError): ToolplaneError {
  return new ToolplaneError(wire.code, wire.message, { retryable: wire.retryable, ...(wire.details ? { details: wire.details } : {}) });
}
