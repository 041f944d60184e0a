import { SpanKind, SpanStatusCode, context, isSpanContextValid, propagation, trace, type Span } from '@opentelemetry/api';
import { hasErrorCode } from '@toolplane/contracts';
import type { McpToolResult } from './model.js';

// The CLIENT span of a `tools/call` to a consumed MCP server, per the OpenTelemetry MCP semantic conventions: named
// `tools/call <tool>`, its context sent in the request's `params._meta` (`traceparent`, `tracestate`) so a server that
// speaks OpenTelemetry continues the trace. Through the API only: with no provider registered the span is a no-op and
// no `_meta` is sent. The span names the tool and the session, never the arguments or the result.

const tracer = trace.getTracer('@toolplane/mcp');
const clientSpan = { kind: SpanKind.CLIENT } as const;

/** What the span says about the session a call goes through. */
export interface ToolCallSession {
  readonly transport: 'stdio' | 'http';
  /** The Mcp-Session-Id of a Streamable HTTP session, when the server handed one out. */
  readonly sessionId: string | undefined;
  readonly protocolVersion: string;
}

/**
 * Runs one `tools/call` inside its CLIENT span: `send` gets the trace context to put in `params._meta` (undefined when
 * there is none to propagate). An `isError` result and a thrown failure set `error.type` (the result's `tool_error`,
 * or the failure's taxonomy code).
 */
export async function tracedToolCall(name: string, session: ToolCallSession, send: (meta: Record<string, string> | undefined) => Promise<McpToolResult>): Promise<McpToolResult> {
  const span = tracer.startSpan(`tools/call ${name}`, clientSpan);
  if (span.isRecording()) {
    span.setAttributes({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': name,
      'gen_ai.operation.name': 'execute_tool',
      'network.transport': session.transport === 'stdio' ? 'pipe' : 'tcp',
      ...(session.protocolVersion === '' ? {} : { 'mcp.protocol.version': session.protocolVersion }),
      ...(session.sessionId === undefined ? {} : { 'mcp.session.id': session.sessionId }),
    });
  }
  try {
    const result = await send(metaOf(span));
    if (result.isError === true) failed(span, 'tool_error');
    return result;
  } catch (error) {
    failed(span, hasErrorCode(error) ? error.code : 'INTERNAL');
    throw error;
  } finally {
    span.end();
  }
}

/** The span's context as `_meta` entries; undefined when it has no valid context (tracing off). */
function metaOf(span: Span): Record<string, string> | undefined {
  if (!isSpanContextValid(span.spanContext())) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  return Object.keys(carrier).length === 0 ? undefined : carrier;
}

function failed(span: Span, type: string): void {
  if (!span.isRecording()) return;
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}
