import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { ToolplaneError, type ErrorCode } from '@toolplane/contracts';

// Pure: classifies what the SDK, fetch or our transports threw into the taxonomy. The SDK's classes are recognised
// by their brand (`isInstance`), which holds across separately bundled copies of the SDK (client and server).

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
  // Servers on the 1.x SDK put "MCP error <code>: " before their message (again on every relay); it says nothing.
  if (ProtocolError.isInstance(error)) {
    return classifyJsonRpc({ code: error.code, message: error.message.replace(LEGACY_MESSAGE_PREFIX, '') });
  }
  if (SdkError.isInstance(error)) return classifySdkError(error, context);
  const network = networkErrorCode(error);
  if (network !== undefined) return classifyNetwork(network);
  if (isMalformedReply(error)) return malformedReply(error);
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

const LEGACY_MESSAGE_PREFIX = /^(MCP error -?\d+: )+/;

interface JsonRpcFailure {
  readonly code: number;
  readonly message: string;
}

const JSON_RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  missingRequiredClientCapability: -32021,
  urlElicitationRequired: -32042,
} as const;

function classifyJsonRpc(rpc: JsonRpcFailure): Classified {
  const providerErrorType = `JsonRpcError(${rpc.code})`;
  const details = { jsonRpcCode: rpc.code, providerMessage: bounded(rpc.message) };
  const said = `the server answered ${rpc.code}: ${bounded(rpc.message, 300)}`;
  switch (rpc.code) {
    case JSON_RPC.invalidParams:
    case JSON_RPC.invalidRequest:
    case JSON_RPC.parseError:
      return { code: 'INVALID_ARGUMENT', message: said, providerErrorType, definitive: true, details };
    case JSON_RPC.methodNotFound:
      return { code: 'NOT_FOUND', message: said, providerErrorType, definitive: true, details };
    case JSON_RPC.urlElicitationRequired:
      return { code: 'AUTHORIZATION_DENIED', message: said, providerErrorType, definitive: true, details };
    case JSON_RPC.missingRequiredClientCapability:
      // The server refused the request for what this client did not declare (it declares no capabilities).
      return { code: 'INVALID_ARGUMENT', message: said, providerErrorType, definitive: true, details };
    case JSON_RPC.internalError:
      // The server failed while handling the request: for a tool call, possibly halfway through its effect.
      return { code: 'TEMPORARY_UNAVAILABLE', message: said, providerErrorType, definitive: false, details };
    default:
      return { code: 'INTERNAL', message: said, providerErrorType, definitive: false, details };
  }
}

/**
 * What the SDK's own (local, never on the wire) errors mean. A negotiation or send failure that wraps the real
 * cause (a refused connection, a garbled reply) is classified by that cause.
 */
function classifySdkError(error: SdkError, context: FailureContext): Classified {
  const status = streamableHttpStatus(error);
  if (status !== undefined) return classifyHttpStatus(status, error.message);
  const wrapped = error.code === SdkErrorCode.EraNegotiationFailed || error.code === SdkErrorCode.SendFailed ? error.cause : undefined;
  if (wrapped !== undefined) {
    const cause = classify(wrapped, context);
    if (cause.code !== 'INTERNAL') return cause;
  }
  const said = boundedMessage(error);
  const as = (code: ErrorCode, message: string, definitive: boolean, providerErrorType = `SdkError(${error.code})`): Classified => ({
    code,
    message,
    providerErrorType,
    definitive,
  });
  switch (error.code) {
    case SdkErrorCode.RequestTimeout:
      return as('TIMEOUT', 'no answer within the deadline', false);
    case SdkErrorCode.ConnectionClosed: {
      const failure = context.transportFailure;
      if (failure === undefined) return as('TEMPORARY_UNAVAILABLE', 'the connection closed before the answer came', false, 'ConnectionClosed');
      // Why the transport closed (the process exited, a reply was too large) says more than "connection closed".
      const failureType = failure.details?.['providerErrorType'];
      const type = typeof failureType === 'string' ? failureType : 'ConnectionClosed';
      return { ...as(failure.code, failure.message, false, type), details: withoutMarker(failure.details) };
    }
    case SdkErrorCode.NotConnected:
      return as('TEMPORARY_UNAVAILABLE', 'the session is not connected', true, 'NotConnected');
    case SdkErrorCode.SendFailed:
      return as('TEMPORARY_UNAVAILABLE', `sending the request failed (${said})`, false);
    case SdkErrorCode.InvalidResult:
      return malformedReply(error);
    case SdkErrorCode.ClientHttpUnexpectedContent:
      return classifyHttpStatus(-1, error.message);
    case SdkErrorCode.MethodNotSupportedByProtocolVersion:
    case SdkErrorCode.CapabilityNotSupported:
      // Refused locally, before anything was sent: the server's protocol revision or capabilities lack the method.
      return as('NOT_FOUND', said, true);
    case SdkErrorCode.UnsupportedResultType:
      // A 2026-07-28 server asked for interactive input (elicitation, sampling) this client does not offer. The
      // request is incomplete until a retry carries the answers, and none will come: nothing more happens.
      if (isInputRequired(error.data)) {
        return as('INVALID_ARGUMENT', 'the server asked for interactive input, which this client does not provide', true, 'InputRequired');
      }
      return as('TEMPORARY_UNAVAILABLE', `the server's reply is not a result this client understands (${said})`, false);
    case SdkErrorCode.EraNegotiationFailed:
      // Without a cause: no protocol revision both sides speak (a cause, such as a dropped connection, is above).
      if (wrapped === undefined) return as('INVALID_ARGUMENT', said, true, 'UnsupportedProtocolVersion');
      return as('TEMPORARY_UNAVAILABLE', said, false);
    default:
      return as('INTERNAL', `unexpected SDK failure (${said})`, false);
  }
}

function isInputRequired(data: unknown): boolean {
  return typeof data === 'object' && data !== null && (data as { resultType?: unknown }).resultType === 'input_required';
}

/** The HTTP status the endpoint answered, when the SDK's Streamable HTTP transport failed on one; undefined otherwise. */
export function streamableHttpStatus(error: unknown): number | undefined {
  return SdkHttpError.isInstance(error) ? error.status : undefined;
}

function classifyHttpStatus(status: number, rawMessage: string): Classified {
  const providerErrorType = status === -1 ? 'UnexpectedContentType' : `HttpStatus(${status})`;
  const details = { httpStatus: status, providerMessage: bounded(rawMessage) };
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

function malformedReply(error: unknown): Classified {
  const message = `the server's reply is not valid MCP JSON-RPC (${boundedMessage(error)})`;
  return { code: 'TEMPORARY_UNAVAILABLE', message, providerErrorType: 'MalformedReply', definitive: false };
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
