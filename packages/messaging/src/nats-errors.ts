import { errors as natsErrors, RequestError, TimeoutError } from '@nats-io/nats-core';
import { JetStreamApiError, JetStreamError } from '@nats-io/jetstream';
import { hasErrorCode, ToolplaneError, type ErrorCode } from '@toolplane/contracts';

/**
 * Translates a failure of the NATS client into the taxonomy, so nothing above this package ever has to
 * recognise a NATS error class. `what` names the operation (and its subject or stream) for the message.
 */
export function toToolplaneError(error: unknown, what: string): ToolplaneError {
  if (error instanceof ToolplaneError) return error;
  if (hasErrorCode(error)) return new ToolplaneError(error.code, error.message, { cause: error });
  const code = natsErrorCode(error);
  const detail = error instanceof Error ? error.message : String(error);
  return new ToolplaneError(code, `${what} failed: ${detail}`, { cause: error });
}

function natsErrorCode(error: unknown): ErrorCode {
  if (error instanceof TimeoutError) return 'TIMEOUT';
  if (error instanceof RequestError) return error.isNoResponders() ? 'TEMPORARY_UNAVAILABLE' : requestErrorCode(error);
  if (error instanceof JetStreamApiError) return apiErrorCode(error.status);
  // Raised when no stream answers a JetStream publish or API request: misrouted, or JetStream is down.
  if (error instanceof JetStreamError || (error instanceof Error && error.name === 'JetStreamNotEnabled')) return 'TEMPORARY_UNAVAILABLE';
  if (
    error instanceof natsErrors.ClosedConnectionError ||
    error instanceof natsErrors.DrainingConnectionError ||
    error instanceof natsErrors.ConnectionError ||
    error instanceof natsErrors.NoRespondersError
  ) {
    return 'TEMPORARY_UNAVAILABLE';
  }
  if (error instanceof natsErrors.AuthorizationError || error instanceof natsErrors.UserAuthenticationExpiredError) return 'AUTHENTICATION_FAILED';
  if (error instanceof natsErrors.PermissionViolationError) return 'AUTHORIZATION_DENIED';
  if (error instanceof natsErrors.InvalidArgumentError || error instanceof natsErrors.InvalidSubjectError) return 'INVALID_ARGUMENT';
  const sys = (error as { code?: unknown } | null)?.code;
  // Name resolution and socket failures while connecting.
  if (typeof sys === 'string' && ['ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'].includes(sys)) {
    return 'TEMPORARY_UNAVAILABLE';
  }
  return 'INTERNAL';
}

function requestErrorCode(error: RequestError): ErrorCode {
  // The server refused the subject: asking again will not help (a JetStream publish is a request, too).
  if (error.cause instanceof natsErrors.PermissionViolationError) return 'AUTHORIZATION_DENIED';
  // A request that failed because the connection went away may succeed on the next attempt.
  return error.cause instanceof TimeoutError ? 'TIMEOUT' : 'TEMPORARY_UNAVAILABLE';
}

function apiErrorCode(status: number): ErrorCode {
  if (status === 400) return 'INVALID_ARGUMENT';
  if (status === 404) return 'NOT_FOUND';
  if (status === 408) return 'TIMEOUT';
  if (status === 409) return 'CONFLICT';
  if (status === 503) return 'TEMPORARY_UNAVAILABLE';
  return 'INTERNAL';
}

/** Whether a JetStream API call failed with this JetStream error code (see apiErrorCodes). */
export function isApiError(error: unknown, code: number): boolean {
  return error instanceof JetStreamApiError && error.code === code;
}
