import { SpanKind, SpanStatusCode, context, isSpanContextValid, propagation, trace, type Span } from '@opentelemetry/api';
import { hasErrorCode, mcpMetaKeys, type Scope } from '@toolplane/contracts';
import { McpProtocolError } from '../app/governed-tools.js';
import type { McpCallToolResult } from '../core/call-result.js';
import { traceCarrierOf } from '../core/trace-meta.js';

// The SERVER span of a tools/call the endpoint answers, per the OpenTelemetry MCP semantic conventions: named
// `tools/call <tool>`, a child of the trace context the client put in `params._meta` (a new trace without one). The
// governed call runs with it active, so the client's request over NATS (and the adapter's stages after it) continue
// that trace. Through the API only: with no provider registered the span is a no-op and the call runs as it is. The
// span names the tool, session and request, never the arguments or the result.

const tracer = trace.getTracer('@toolplane/mcp-endpoint');
const serverSpan = { kind: SpanKind.SERVER } as const;
// A tool name is the client's text: bounded before it names a span.
const maxToolNameLength = 128;

/** The tools/call a span is about. */
export interface TracedToolCall {
  readonly name: string;
  /** The request's `_meta`, as the client sent it. */
  readonly meta: unknown;
  readonly requestId: string | number;
  readonly session: string | undefined;
  readonly scope: Scope;
}

/** Runs the governed call in its SERVER span; an answer that is a tool error, or a failure, sets `error.type` to its code. */
export async function inToolCallSpan(call: TracedToolCall, work: () => Promise<McpCallToolResult>): Promise<McpCallToolResult> {
  const carrier = traceCarrierOf(call.meta);
  const parent = carrier === undefined ? context.active() : propagation.extract(context.active(), carrier);
  const name = call.name.slice(0, maxToolNameLength);
  const span = tracer.startSpan(`tools/call ${name}`, serverSpan, parent);
  if (span.isRecording()) {
    span.setAttributes({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': name,
      'gen_ai.operation.name': 'execute_tool',
      'jsonrpc.request.id': String(call.requestId),
      'toolplane.tenant': call.scope.tenant,
      'toolplane.workspace': call.scope.workspace,
      ...(call.session === undefined ? {} : { 'mcp.session.id': call.session }),
    });
  }
  try {
    const result = isSpanContextValid(span.spanContext()) ? await context.with(trace.setSpan(parent, span), work) : await work();
    if (result.isError === true) failed(span, result._meta[mcpMetaKeys.error]?.code ?? 'tool_error');
    return result;
  } catch (error) {
    failed(span, error instanceof McpProtocolError ? 'INVALID_ARGUMENT' : hasErrorCode(error) ? error.code : 'INTERNAL');
    throw error;
  } finally {
    span.end();
  }
}

function failed(span: Span, type: string): void {
  if (!span.isRecording()) return;
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}
