// The endpoint's tools/call SERVER span with an in-memory exporter: its parent is the `_meta.traceparent` the client
// sent (a malformed one is ignored: a new trace, and the call still runs), the call runs with it active, its
// attributes follow the MCP conventions, and a tool error or a failure names its code.
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ToolplaneError, mcpMetaKeys } from '@toolplane/contracts';
import { recordSpansInMemory, type InMemoryTracing } from '@toolplane/service-kit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { resultOfFailure, type McpCallToolResult } from '../core/call-result.js';
import { inToolCallSpan, type TracedToolCall } from './call-tracing.js';

const traceId = '0af7651916cd43dd8448eb211c80319c';
const clientSpanId = 'b7ad6b7169203331';
const ok: McpCallToolResult = { content: [{ type: 'text', text: 'done' }], _meta: { [mcpMetaKeys.call]: { idempotencyKey: 'k-1' } } };

function call(meta: unknown): TracedToolCall {
  return { name: 'crm_lookup', meta, requestId: 7, session: 'session-1', scope: { tenant: 'acme', workspace: 'support' } };
}

describe('inToolCallSpan', () => {
  let tracing: InMemoryTracing;
  beforeAll(() => {
    tracing = recordSpansInMemory('mcp-endpoint-test');
  });
  afterAll(async () => {
    await tracing.stop();
  });
  beforeEach(() => tracing.reset());

  it('continues the client’s trace from _meta and runs the call with the span active', async () => {
    let activeInWork: string | undefined;
    const result = await inToolCallSpan(call({ traceparent: `00-${traceId}-${clientSpanId}-01`, tracestate: 'vendor=opaque', [mcpMetaKeys.idempotencyKey]: 'k-1' }), () => {
      activeInWork = trace.getActiveSpan()?.spanContext().spanId;
      return Promise.resolve(ok);
    });
    expect(result).toBe(ok);
    const [span] = tracing.spans();
    expect(span?.name).toBe('tools/call crm_lookup');
    expect(span?.kind).toBe(SpanKind.SERVER);
    expect(span?.spanContext().traceId).toBe(traceId);
    expect(span?.parentSpanContext?.spanId).toBe(clientSpanId);
    expect(span?.spanContext().traceState?.get('vendor')).toBe('opaque');
    expect(activeInWork).toBe(span?.spanContext().spanId);
    expect(span?.attributes).toEqual({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'crm_lookup',
      'gen_ai.operation.name': 'execute_tool',
      'jsonrpc.request.id': '7',
      'mcp.session.id': 'session-1',
      'toolplane.tenant': 'acme',
      'toolplane.workspace': 'support',
    });
    expect(span?.status.code).not.toBe(SpanStatusCode.ERROR);
  });

  it('ignores a malformed traceparent: a new trace, and the call runs', async () => {
    for (const meta of [{ traceparent: 'garbage' }, { traceparent: 12 }, undefined]) {
      tracing.reset();
      await inToolCallSpan(call(meta), () => Promise.resolve(ok));
      const [span] = tracing.spans();
      expect(span?.name).toBe('tools/call crm_lookup');
      expect(span?.parentSpanContext).toBeUndefined();
    }
  });

  it('names the code of a tool error, and of a failure', async () => {
    await inToolCallSpan(call(undefined), () => Promise.resolve(resultOfFailure({ code: 'AUTHORIZATION_DENIED', message: 'no', retryable: false }, 'k-1')));
    await expect(inToolCallSpan(call(undefined), () => Promise.reject(new ToolplaneError('TIMEOUT', 'late')))).rejects.toThrow('late');
    const spans = tracing.spans();
    expect(spans.map((span) => span.attributes['error.type'])).toEqual(['AUTHORIZATION_DENIED', 'TIMEOUT']);
    expect(spans.every((span) => span.status.code === SpanStatusCode.ERROR)).toBe(true);
  });
});
