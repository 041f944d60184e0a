import { ToolplaneError, type ErrorCode } from '@toolplane/contracts';

// Pure: classifies what the SDK, fetch or our transports threw into the taxonomy. The SDK's own classes are
// recognised structurally (by their fields), which keeps this file free of SDK imports and unit-testable.

/** What the caller knew about one request when it failed. */
export interface FailureContext {
  /** The MCP method (`initialize`, `tools/call`, `tools/list`, `ping`…). */
  readonly method: string;
  /** A safe description of the target (no secrets), for messages. */
  readonly target: string;
  /** Whether the request was handed to the transport (so the server may have received it). */
  readonly dispatched: boolean;
  /** Set when our own deadline or the caller's signal ended the request. */
  readonly aborted?: 'deadline' | 'cancelled' | undefined;
  readonly timeoutMs?: number | undefined;
  /** Why the transport closed, when it knows (process exited, reply too large, protocol violation). */
  readonly transportFailure?: ToolplaneError | undefined;
  /** Whether the session's transport has closed. */
  readonly transportClosed?: boolean | undefined;
  /** For tools/call: the tool's name, for messages. */
  readonly toolName?: string | undefined;
}

/** Whether a method may have an effect on the server: only tools/call is governed as possibly effectful. */
export function isEffectfulMethod(method: string): boolean {
  return method === 'tools/call';
}

const MAX_PROVIDER_MESSAGE = 1024;

interface Classified {
  readonly code: ErrorCode;
  readonly message: string;
  readonly providerErrorType: string;
  /** True when the failure proves the request had no effect (refused, never delivered, rejected by the server). */
  readonly definitive: boolean;
  readonly details?: Record<string, unknown>;
}

/** Marks an error created by this package as proving the request was never delivered. */
export const NOT_DELIVERED = 'notDelivered';

/** Translates anything a request failed with into a ToolplaneError (never throws, never returns a non-taxonomy error). */
export function translateMcpError(error: unknown, context: FailureContext): ToolplaneError {
  const classified = classify(error, context);
  const where = context.toolName === undefined ? `MCP ${context.method} on ${context.target}` : `MCP tools/call ${JSON.stringify(context.toolName)} on ${context.target}`;
  const details: Record<string, unknown> = {
    providerErrorType: classified.providerErrorType,
    method: context.method,
    ...classified.details,
  };
  if (isEffectfulMethod(context.method) && context.dispatched && !classified.definitive) {
    return new ToolplaneError(
      'UNKNOWN_OUTCOME',
      `${where}: ${classified.message}; the request had been sent, so the tool may have run`,
      { cause: error, details: { ...details, underlyingCode: classified.code } },
    );
  }
  return new ToolplaneError(classified.code, `${where}: ${classified.message}`, { cause: error, details });
}

function classify(error: unknown, context: FailureContext): Classified {
  if (context.aborted === 'deadline') {
    return {
      code: 'TIMEOUT',
      message: context.dispatched
        ? `no answer within the deadline${context.timeoutMs === undefined ? '' : ` of ${context.timeoutMs} ms`}`
        : 'the deadline passed before the request was sent',
      providerErrorType: 'Deadline',
      definitive: !context.dispatched,
    };
  }
  if (context.aborted === 'cancelled') {
    return {
      code: 'CANCELLED',
      message: context.dispatched ? 'cancelled by the caller while waiting for the answer' : 'cancelled by the caller before the request was sent',
      providerErrorType: 'Cancelled',
      definitive: !context.dispatched,
    };
  }
  if (error instanceof ToolplaneError) {
    // Our own transports' failures; a closed transport with a known reason speaks for itself.
    const providerErrorType = typeof error.details?.['providerErrorType'] === 'string' ? error.details['providerErrorType'] : `Toolplane(${error.code})`;
    return { code: error.code, message: error.message, providerErrorType, definitive: error.details?.[NOT_DELIVERED] === true, details: withoutMarker(error.details) };
  }
  const rpc = jsonRpcError(error);
  if (rpc !== undefined) return classifyJsonRpc(rpc, context);
  const httpStatus = streamableHttpStatus(error);
  if (httpStatus !== undefined) return classifyHttpStatus(httpStatus, (error as Error).message);
  const network = networkErrorCode(error);
  if (network !== undefined) return classifyNetwork(network);
  if (isMalformedReply(error)) {
    return {
      code: 'TEMPORARY_UNAVAILABLE',
      message: `the server's reply is not valid MCP JSON-RPC (${boundedMessage(error)})`,
      providerErrorType: 'MalformedReply',
      definitive: false,
    };
  }
  if (error instanceof Error && error.message === 'Not connected') {
    return { code: 'TEMPORARY_UNAVAILABLE', message: 'the session is not connected', providerErrorType: 'NotConnected', definitive: true };
  }
  if (error instanceof Error && error.message.startsWith("Server's protocol version is not supported")) {
    return { code: 'INVALID_ARGUMENT', message: error.message, providerErrorType: 'UnsupportedProtocolVersion', definitive: true };
  }
  return {
    code: 'INTERNAL',
    message: `unexpected failure (${error instanceof Error ? error.name : typeof error}: ${boundedMessage(error)})`,
    providerErrorType: error instanceof Error ? error.name : 'Unknown',
    definitive: false,
  };
}

interface JsonRpcFailure {
  readonly code: number;
  readonly message: string;
}

// The SDK's McpError: an Error named McpError with a numeric JSON-RPC code; its message is "MCP error <code>: <text>".
function jsonRpcError(error: unknown): JsonRpcFailure | undefined {
  if (!(error instanceof Error) || error.name !== 'McpError') return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'number') return undefined;
  return { code, message: error.message.replace(/^(MCP error -?\d+: )+/, '') };
}

const JSON_RPC = {
  connectionClosed: -32000,
  requestTimeout: -32001,
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  urlElicitationRequired: -32042,
} as const;

function classifyJsonRpc(rpc: JsonRpcFailure, context: FailureContext): Classified {
  const providerErrorType = `JsonRpcError(${rpc.code})`;
  const details = { jsonRpcCode: rpc.code, providerMessage: bounded(rpc.message) };
  const said = `the server answered ${rpc.code}: ${bounded(rpc.message, 300)}`;
  // The SDK reports a closed connection with -32000, which servers may also use for their own errors; a closed
  // transport disambiguates.
  if (rpc.code === JSON_RPC.connectionClosed && (context.transportClosed === true || context.transportFailure !== undefined)) {
    if (context.transportFailure !== undefined) {
      const failure = context.transportFailure;
      const failureType = failure.details?.['providerErrorType'];
      return { code: failure.code, message: failure.message, providerErrorType: typeof failureType === 'string' ? failureType : 'ConnectionClosed', definitive: false, details: withoutMarker(failure.details) };
    }
    return { code: 'TEMPORARY_UNAVAILABLE', message: 'the connection closed before the answer came', providerErrorType: 'ConnectionClosed', definitive: false };
  }
  switch (rpc.code) {
    case JSON_RPC.requestTimeout:
      return { code: 'TIMEOUT', message: 'no answer within the deadline', providerErrorType, definitive: false, details };
    case JSON_RPC.invalidParams:
    case JSON_RPC.invalidRequest:
    case JSON_RPC.parseError:
      return { code: 'INVALID_ARGUMENT', message: said, providerErrorType, definitive: true, details };
    case JSON_RPC.methodNotFound:
      return { code: 'NOT_FOUND', message: said, providerErrorType, definitive: true, details };
    case JSON_RPC.urlElicitationRequired:
      return { code: 'AUTHORIZATION_DENIED', message: said, providerErrorType, definitive: true, details };
    case JSON_RPC.internalError:
      // The server failed while handling the request: for a tool call, possibly halfway through its effect.
      return { code: 'TEMPORARY_UNAVAILABLE', message: said, providerErrorType, definitive: false, details };
    default:
      return { code: 'INTERNAL', message: said, providerErrorType, definitive: false, details };
  }
}

/**
 * The HTTP status of the SDK's StreamableHTTPError (an Error whose message starts "Streamable HTTP error:" and
 * whose code is the status, or -1 for an unexpected content type); undefined for any other error.
 */
export function streamableHttpStatus(error: unknown): number | undefined {
  if (!(error instanceof Error) || !error.message.startsWith('Streamable HTTP error:')) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

function classifyHttpStatus(status: number, rawMessage: string): Classified {
  const providerErrorType = status === -1 ? 'UnexpectedContentType' : `HttpStatus(${status})`;
  const details = { httpStatus: status, providerMessage: bounded(rawMessage.replace(/^Streamable HTTP error: /, '')) };
  const answered = `the endpoint answered HTTP ${status}`;
  if (status === -1) {
    return { code: 'TEMPORARY_UNAVAILABLE', message: `the endpoint answered with a content type that is not MCP (${bounded(rawMessage, 200)})`, providerErrorType, definitive: false, details };
  }
  if (status === 401) return { code: 'AUTHENTICATION_FAILED', message: `${answered} (unauthenticated)`, providerErrorType, definitive: true, details };
  if (status === 403) return { code: 'AUTHORIZATION_DENIED', message: `${answered} (forbidden)`, providerErrorType, definitive: true, details };
  if (status === 404) return { code: 'NOT_FOUND', message: `${answered} (no MCP endpoint or session here)`, providerErrorType, definitive: true, details };
  if (status === 408) return { code: 'TIMEOUT', message: answered, providerErrorType, definitive: true, details };
  if (status === 429) return { code: 'RATE_LIMITED', message: `${answered} (too many requests)`, providerErrorType, definitive: true, details };
  if (status === 503) return { code: 'TEMPORARY_UNAVAILABLE', message: `${answered} (unavailable)`, providerErrorType, definitive: true, details };
  if (status >= 500) return { code: 'TEMPORARY_UNAVAILABLE', message: answered, providerErrorType, definitive: false, details };
  if (status >= 300 && status < 400) return { code: 'INVALID_ARGUMENT', message: `${answered} (a redirect that was not followed)`, providerErrorType, definitive: true, details };
  return { code: 'INVALID_ARGUMENT', message: answered, providerErrorType, definitive: true, details };
}

// Network failures that prove nothing reached the server.
const UNREACHED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

function networkErrorCode(error: unknown): string | undefined {
  // fetch fails with TypeError("fetch failed") whose cause (sometimes nested) carries the system error code.
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code)) return code;
    current = current.cause;
  }
  if (error instanceof TypeError && error.message === 'fetch failed') {
    // fetch refuses ports the Fetch standard blocks (1, 22, 25…) before connecting.
    return error.cause instanceof Error && error.cause.message === 'bad port' ? 'BAD_PORT' : 'FETCH_FAILED';
  }
  return undefined;
}

function classifyNetwork(code: string): Classified {
  const providerErrorType = `Network(${code})`;
  if (code === 'BAD_PORT') return { code: 'INVALID_ARGUMENT', message: 'fetch refuses to connect to this port (a port the Fetch standard blocks)', providerErrorType, definitive: true };
  if (UNREACHED.has(code)) {
    const message = code === 'ECONNREFUSED' ? 'the connection was refused' : code === 'ENOTFOUND' || code === 'EAI_AGAIN' ? 'the host name did not resolve' : `the server could not be reached (${code})`;
    return { code: 'TEMPORARY_UNAVAILABLE', message, providerErrorType, definitive: true };
  }
  if (code.startsWith('CERT_') || code.includes('CERT') || code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL')) {
    return { code: 'TEMPORARY_UNAVAILABLE', message: `the TLS handshake failed (${code})`, providerErrorType, definitive: true };
  }
  return { code: 'TEMPORARY_UNAVAILABLE', message: `the connection failed (${code})`, providerErrorType, definitive: false };
}

function isMalformedReply(error: unknown): boolean {
  if (error instanceof SyntaxError) return true;
  if (typeof error !== 'object' || error === null) return false;
  return (error as { name?: unknown }).name === 'ZodError' || Array.isArray((error as { issues?: unknown }).issues);
}

function withoutMarker(details: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (details === undefined) return undefined;
  const { [NOT_DELIVERED]: _marker, ...rest } = details;
  return rest;
}

function boundedMessage(error: unknown): string {
  const message = typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : undefined;
  return bounded(typeof message === 'string' ? message : String(error), 300);
}

function bounded(text: string, max: number = MAX_PROVIDER_MESSAGE): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
