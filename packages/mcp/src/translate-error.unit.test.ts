import { ToolplaneError } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { NOT_DELIVERED, translateMcpError, type FailureContext } from './translate-error.js';

// Stand-ins shaped like the SDK's error classes (recognised structurally, as in the real classes).
function mcpError(code: number, text: string): Error {
  const error = new Error(`MCP error ${code}: ${text}`) as Error & { code: number };
  error.name = 'McpError';
  error.code = code;
  return error;
}

function httpError(status: number, text = 'Error POSTing to endpoint: nope'): Error {
  const error = new Error(`Streamable HTTP error: ${text}`) as Error & { code: number };
  error.code = status;
  return error;
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
    const after = translateMcpError(mcpError(-32001, 'Request timed out'), { ...call, aborted: 'deadline', timeoutMs: 50 });
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
    const error = translateMcpError(mcpError(-32000, 'Connection closed'), { ...list, transportFailure: exited, transportClosed: true });
    expect(error.code).toBe('TEMPORARY_UNAVAILABLE');
    expect(error.message).toContain('exited (code 3)');
    expect(error.details).toMatchObject({ providerErrorType: 'ProcessExited', exitCode: 3 });
    expect(translateMcpError(mcpError(-32000, 'Connection closed'), { ...call, transportFailure: exited, transportClosed: true }).code).toBe('UNKNOWN_OUTCOME');
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

  it('turns anything unexpected into INTERNAL without throwing', () => {
    expect(translateMcpError('a string', list).code).toBe('INTERNAL');
    expect(translateMcpError(null, list).code).toBe('INTERNAL');
    expect(translateMcpError(new RangeError('weird'), list).details).toMatchObject({ providerErrorType: 'RangeError' });
  });
});
