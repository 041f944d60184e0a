import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { ToolplaneError } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { NOT_DELIVERED, translateMcpError, type FailureContext } from './translate-error.js';

// The SDK's own error classes, as its client and transports throw them.
function mcpError(code: number, text: string): Error {
  return new ProtocolError(code, text);
}

function httpError(status: number, text = 'Error POSTing to endpoint: nope'): Error {
  return new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, text, { status });
}

function fetchFailed(code: string): TypeError {
  const cause = new Error(`connect ${code}`) as Error & { code: string };
  cause.code = code;
  return new TypeError('fetch failed', { cause });
}

const list: FailureContext = { method: 'tools/list', target: 'stdio command "x"', dispatched: true };
const call: FailureContext = { method: 'tools/call', target: 'stdio command "x"', dispatched: true, toolName: 'do_it' };

describe('translateMcpError', () => {
  it('maps JSON-RPC errors by code and keeps what the provider said', () => {
    const invalid = translateMcpError(mcpError(-32602, 'MCP error -32602: bad args'), call);
    expect(invalid.code).toBe('INVALID_ARGUMENT');
    expect(invalid.details).toMatchObject({ providerErrorType: 'JsonRpcError(-32602)', providerMessage: 'bad args', jsonRpcCode: -32602 });
    expect(translateMcpError(mcpError(-32601, 'no such method'), list).code).toBe('NOT_FOUND');
    expect(translateMcpError(mcpError(-32600, 'invalid request'), list).code).toBe('INVALID_ARGUMENT');
    expect(translateMcpError(mcpError(-32603, 'boom'), list).code).toBe('TEMPORARY_UNAVAILABLE');
    expect(translateMcpError(mcpError(-31999, 'custom'), list).code).toBe('INTERNAL');
  });

  it('treats a server-side internal error during a sent tool call as an unknown outcome', () => {
    const error = translateMcpError(mcpError(-32603, 'crashed halfway'), call);
    expect(error.code).toBe('UNKNOWN_OUTCOME');
    expect(error.details).toMatchObject({ underlyingCode: 'TEMPORARY_UNAVAILABLE', providerErrorType: 'JsonRpcError(-32603)' });
    expect(error.message).toContain('"do_it"');
  });

  it('maps HTTP statuses', () => {
    const cases: [number, string][] = [
      [401, 'AUTHENTICATION_FAILED'],
      [403, 'AUTHORIZATION_DENIED'],
      [404, 'NOT_FOUND'],
      [429, 'RATE_LIMITED'],
      [400, 'INVALID_ARGUMENT'],
      [500, 'TEMPORARY_UNAVAILABLE'],
      [502, 'TEMPORARY_UNAVAILABLE'],
      [503, 'TEMPORARY_UNAVAILABLE'],
    ];
    for (const [status, code] of cases) {
      const error = translateMcpError(httpError(status), list);
      expect(error.code, `HTTP ${status}`).toBe(code);
      expect(error.details).toMatchObject({ httpStatus: status, providerErrorType: `HttpStatus(${status})` });
    }
  });

  it('keeps definitive HTTP refusals of a tool call definitive, and makes ambiguous 5xx unknown outcomes', () => {
    expect(translateMcpError(httpError(429), call).code).toBe('RATE_LIMITED');
    expect(translateMcpError(httpError(401), call).code).toBe('AUTHENTICATION_FAILED');
    expect(translateMcpError(httpError(503), call).code).toBe('TEMPORARY_UNAVAILABLE');
    expect(translateMcpError(httpError(502), call).code).toBe('UNKNOWN_OUTCOME');
  });

  it('maps network failures: refused is retryable and proves nothing was delivered', () => {
    const refused = translateMcpError(fetchFailed('ECONNREFUSED'), call);
    expect(refused.code).toBe('TEMPORARY_UNAVAILABLE');
    expect(refused.retryable).toBe(true);
    expect(refused.message).toContain('refused');
    expect(translateMcpError(fetchFailed('ECONNRESET'), call).code).toBe('UNKNOWN_OUTCOME');
    expect(translateMcpError(fetchFailed('ECONNRESET'), list).code).toBe('TEMPORARY_UNAVAILABLE');
  });

  it('maps a reply that is not JSON-RPC to TEMPORARY_UNAVAILABLE with a clear message', () => {
    const error = translateMcpError(new SyntaxError('Unexpected token < in JSON at position 0'), list);
    expect(error.code).toBe('TEMPORARY_UNAVAILABLE');
    expect(error.message).toContain('not valid MCP JSON-RPC');
    const zodLike = Object.assign(new Error('invalid'), { name: 'ZodError', issues: [] });
    expect(translateMcpError(zodLike, list).details).toMatchObject({ providerErrorType: 'MalformedReply' });
  });

  it('distinguishes a deadline before sending (TIMEOUT) from one after sending a tool call (UNKNOWN_OUTCOME)', () => {
    const before = translateMcpError(undefined, { ...call, dispatched: false, aborted: 'deadline', timeoutMs: 50 });
    expect(before.code).toBe('TIMEOUT');
    expect(before.message).toContain('before the request was sent');
    const after = translateMcpError(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'), { ...call, aborted: 'deadline', timeoutMs: 50 });
    expect(after.code).toBe('UNKNOWN_OUTCOME');
    expect(after.details).toMatchObject({ underlyingCode: 'TIMEOUT', providerErrorType: 'Deadline' });
    expect(translateMcpError(undefined, { ...list, aborted: 'deadline' }).code).toBe('TIMEOUT');
  });

  it('distinguishes a cancellation before sending from one after sending a tool call', () => {
    expect(translateMcpError(undefined, { ...call, dispatched: false, aborted: 'cancelled' }).code).toBe('CANCELLED');
    expect(translateMcpError(undefined, { ...call, aborted: 'cancelled' }).code).toBe('UNKNOWN_OUTCOME');
    expect(translateMcpError(undefined, { ...list, aborted: 'cancelled' }).code).toBe('CANCELLED');
  });

  it('reports why the transport closed instead of a bare "connection closed"', () => {
    const exited = new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the server process exited (code 3)', { details: { providerErrorType: 'ProcessExited', exitCode: 3 } });
    const closed = new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed');
    const error = translateMcpError(closed, { ...list, transportFailure: exited, transportClosed: true });
    expect(error.code).toBe('TEMPORARY_UNAVAILABLE');
    expect(error.message).toContain('exited (code 3)');
    expect(error.details).toMatchObject({ providerErrorType: 'ProcessExited', exitCode: 3 });
    expect(translateMcpError(closed, { ...call, transportFailure: exited, transportClosed: true }).code).toBe('UNKNOWN_OUTCOME');
  });

  it('keeps our own errors, and their "not delivered" mark makes a tool call failure definitive', () => {
    const notFound = new ToolplaneError('NOT_FOUND', 'command not found', { details: { providerErrorType: 'SpawnError(ENOENT)', [NOT_DELIVERED]: true } });
    const error = translateMcpError(notFound, { ...call, method: 'tools/call' });
    expect(error.code).toBe('NOT_FOUND');
    expect(error.details).not.toHaveProperty(NOT_DELIVERED);
    const tooLarge = new ToolplaneError('TEMPORARY_UNAVAILABLE', 'message too large', { details: { providerErrorType: 'MessageTooLarge' } });
    expect(translateMcpError(tooLarge, call).code).toBe('UNKNOWN_OUTCOME');
    expect(translateMcpError(tooLarge, list).code).toBe('TEMPORARY_UNAVAILABLE');
  });

  it('classifies a failed era negotiation by its cause, or as no common protocol revision', () => {
    const refused = new SdkError(SdkErrorCode.EraNegotiationFailed, 'Version negotiation probe failed: fetch failed', {}, { cause: fetchFailed('ECONNREFUSED') });
    expect(translateMcpError(refused, { ...list, method: 'initialize' })).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', retryable: true, details: { providerErrorType: 'Network(ECONNREFUSED)' } });
    const unavailable = new SdkHttpError(SdkErrorCode.EraNegotiationFailed, 'Version negotiation failed: the server answered the probe with HTTP 503', { status: 503 });
    expect(translateMcpError(unavailable, list)).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { httpStatus: 503, providerErrorType: 'HttpStatus(503)' } });
    const disjoint = new SdkError(SdkErrorCode.EraNegotiationFailed, 'no modern overlap');
    expect(translateMcpError(disjoint, list)).toMatchObject({ code: 'INVALID_ARGUMENT', details: { providerErrorType: 'UnsupportedProtocolVersion' } });
  });

  it("maps the SDK's local errors", () => {
    expect(translateMcpError(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'), list).code).toBe('TIMEOUT');
    expect(translateMcpError(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'), call).code).toBe('UNKNOWN_OUTCOME');
    expect(translateMcpError(new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'), list)).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'ConnectionClosed' } });
    expect(translateMcpError(new SdkError(SdkErrorCode.NotConnected, 'Not connected'), call)).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'NotConnected' } });
    expect(translateMcpError(new SdkError(SdkErrorCode.InvalidResult, 'bad result'), list)).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'MalformedReply' } });
    const html = translateMcpError(new SdkError(SdkErrorCode.ClientHttpUnexpectedContent, 'Unexpected content type: text/html'), list);
    expect(html).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'UnexpectedContentType' } });
    expect(html.message).toContain('not MCP');
    const noPing = new SdkError(SdkErrorCode.MethodNotSupportedByProtocolVersion, 'ping is not a 2026-07-28 method');
    expect(translateMcpError(noPing, call).code).toBe('NOT_FOUND');
    expect(translateMcpError(new SdkError(SdkErrorCode.AlreadyConnected, 'already'), list).code).toBe('INTERNAL');
  });

  it('refuses a request for interactive input definitively: nothing happens until a retry that never comes', () => {
    const inputRequired = new SdkError(SdkErrorCode.UnsupportedResultType, "Unsupported result type 'input_required' for tools/call", { resultType: 'input_required', method: 'tools/call' });
    expect(translateMcpError(inputRequired, call)).toMatchObject({ code: 'INVALID_ARGUMENT', details: { providerErrorType: 'InputRequired' } });
    expect(translateMcpError(mcpError(-32021, 'Missing required client capability'), call)).toMatchObject({ code: 'INVALID_ARGUMENT', details: { jsonRpcCode: -32021 } });
  });

  it('turns anything unexpected into INTERNAL without throwing', () => {
    expect(translateMcpError('a string', list).code).toBe('INTERNAL');
    expect(translateMcpError(null, list).code).toBe('INTERNAL');
    expect(translateMcpError(new RangeError('weird'), list).details).toMatchObject({ providerErrorType: 'RangeError' });
  });
});
