import { abortError, hasErrorCode, ToolplaneError, type ErrorCode } from '@toolplane/contracts';

// Server error codes, as MongoDB documents them (FerretDB returns the same numbers, often without codeName).
const duplicateKeyCodes = new Set([11000, 11001, 12582]);
const indexConflictCodes = new Set([85, 86]); // IndexOptionsConflict, IndexKeySpecsConflict
const timeoutCodes = new Set([50]); // MaxTimeMSExpired
// The retryable-reads/-writes specification's "transient" codes: the node is stepping down, shutting down or unreachable.
const transientCodes = new Set([6, 7, 89, 91, 112, 134, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 64]);
// The request itself is malformed: a retry cannot help.
const invalidCodes = new Set([2, 9, 14, 40, 52, 56, 57, 66, 10334, 17419, 17280]);
const codeNames: Readonly<Record<number, string>> = {
  2: 'BadValue',
  9: 'FailedToParse',
  11000: 'DuplicateKey',
  13: 'Unauthorized',
  18: 'AuthenticationFailed',
  238: 'NotImplemented',
};

// Error labels the driver attaches to failures that another attempt may not meet.
const transientLabels = ['RetryableWriteError', 'ResetPool', 'PoolRequestedRetry', 'InterruptInUseConnections', 'SystemOverloadedError', 'RetryableError', 'TransientTransactionError'];

// Driver errors (by their stable `name`) that mean the server cannot be reached or the client is going away.
const unavailableNames = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoServerSelectionError',
  'MongoTopologyClosedError',
  'MongoNotConnectedError',
  'MongoServerClosedError',
  'MongoClientClosedError',
  'MongoPoolClosedError',
  'MongoPoolClearedError',
  'MongoWaitQueueTimeoutError',
  'MongoStalePrimaryError',
]);
const invalidNames = new Set(['MongoParseError', 'MongoInvalidArgumentError', 'BSONError', 'BSONVersionError']);
const timeoutNames = new Set(['MongoOperationTimeoutError']);
const abortNames = new Set(['AbortError', 'TimeoutError']);
// Socket and name-resolution failures that can surface unwrapped (for example from an SRV lookup).
const systemUnavailableCodes = new Set(['ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

interface DriverErrorShape {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly codeName?: unknown;
  readonly message?: unknown;
  readonly errorLabels?: unknown;
  readonly writeErrors?: unknown;
  readonly errorResponse?: unknown;
}

/** The numeric server error code of a driver error, looking into the first write error of a bulk write. */
export function serverErrorCode(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, writeErrors } = error as DriverErrorShape;
  if (typeof code === 'number') return code;
  if (Array.isArray(writeErrors)) {
    const first: unknown = writeErrors[0];
    if (typeof first === 'object' && first !== null) {
      const nested = (first as { code?: unknown }).code;
      if (typeof nested === 'number') return nested;
    }
  }
  return undefined;
}

/** Whether a driver error is a unique-index violation (E11000 on MongoDB and on FerretDB alike). */
export function isDuplicateKeyError(error: unknown): boolean {
  const code = serverErrorCode(error);
  return code !== undefined && duplicateKeyCodes.has(code);
}

/** Whether a driver error says an index with that name or key already exists with other options. */
export function isIndexConflictError(error: unknown): boolean {
  const code = serverErrorCode(error);
  return code !== undefined && indexConflictCodes.has(code);
}

/** Whether the server said it does not implement a command or option (FerretDB: NotImplemented, code 238). */
export function isNotImplementedError(error: unknown): boolean {
  const code = serverErrorCode(error);
  return code === 238 || code === 115;
}

/** The taxonomy code for a failure of the MongoDB driver or server, decided by names, codes and labels only. */
export function storeErrorCode(error: unknown): ErrorCode {
  if (hasErrorCode(error)) return error.code;
  if (typeof error !== 'object' || error === null) return 'INTERNAL';
  const shape = error as DriverErrorShape;
  const name = typeof shape.name === 'string' ? shape.name : '';
  if (abortNames.has(name)) return name === 'TimeoutError' ? 'TIMEOUT' : 'CANCELLED';
  if (unavailableNames.has(name)) return 'TEMPORARY_UNAVAILABLE';
  if (timeoutNames.has(name)) return 'TIMEOUT';
  const code = serverErrorCode(error);
  if (code !== undefined) {
    if (duplicateKeyCodes.has(code) || indexConflictCodes.has(code)) return 'CONFLICT';
    if (timeoutCodes.has(code)) return 'TIMEOUT';
    if (transientCodes.has(code)) return 'TEMPORARY_UNAVAILABLE';
    if (invalidCodes.has(code)) return 'INVALID_ARGUMENT';
  }
  const labels = Array.isArray(shape.errorLabels) ? (shape.errorLabels as unknown[]) : [];
  if (labels.some((label) => typeof label === 'string' && transientLabels.includes(label))) return 'TEMPORARY_UNAVAILABLE';
  if (invalidNames.has(name)) return 'INVALID_ARGUMENT';
  if (typeof shape.code === 'string' && systemUnavailableCodes.has(shape.code)) return 'TEMPORARY_UNAVAILABLE';
  return 'INTERNAL';
}

/**
 * Translates anything a driver call threw into a ToolplaneError; `what` names the operation and collection.
 * Server messages are left out of the text (a duplicate-key message quotes the stored values) and kept as `cause`.
 * Pass the operation's `signal` so that its abort reason is recognised as CANCELLED or TIMEOUT.
 */
export function toStoreError(error: unknown, what: string, signal?: AbortSignal): ToolplaneError {
  if (error instanceof ToolplaneError) return error;
  // The driver rejects an aborted read with the signal's reason, whatever that is.
  if (signal?.aborted && error === signal.reason) return abortError(what, error);
  if (hasErrorCode(error)) return new ToolplaneError(error.code, error.message, { cause: error });
  const name = typeof error === 'object' && error !== null ? (error as DriverErrorShape).name : undefined;
  if (typeof name === 'string' && abortNames.has(name)) return abortError(what, error);
  const code = storeErrorCode(error);
  const serverCode = serverErrorCode(error);
  const details: Record<string, unknown> = {};
  if (typeof name === 'string') details['driverError'] = name;
  if (serverCode !== undefined) details['serverCode'] = serverCode;
  return new ToolplaneError(code, `${what} failed: ${describe(error, code, serverCode)}`, { cause: error, details });
}

function describe(error: unknown, code: ErrorCode, serverCode: number | undefined): string {
  if (serverCode !== undefined) {
    const codeName = (error as DriverErrorShape).codeName;
    const label = typeof codeName === 'string' && codeName !== '' ? codeName : (codeNames[serverCode] ?? 'server error');
    if (duplicateKeyCodes.has(serverCode)) return `duplicate key (${label} ${serverCode})`;
    return `${label} (code ${serverCode})`;
  }
  // Client-side failures (network, server selection, parsing) carry no stored data in their text.
  const message = error instanceof Error ? error.message : String(error);
  return code === 'INTERNAL' && !(error instanceof Error) ? 'unexpected failure' : message;
}
