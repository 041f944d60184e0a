// The downstream MCP call's CLIENT span and its W3C trace context in `params._meta`, against a real fixture server
// (stdio and Streamable HTTP) that hands back the `_meta` it received: the server sees the span's own context, so a
// server speaking OpenTelemetry continues the adapter's trace. With tracing off nothing is sent.
import { SpanKind, context, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { createMcpPool, type McpPool, type McpTarget } from '@toolplane/mcp';
import { fixtureStdioTarget, startHttpFixture, type HttpServerProcess } from '@toolplane/mcp/testing';
import { recordSpansInMemory, type InMemoryTracing, type ReadableSpan } from '@toolplane/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpExecutor } from '../src/adapters/mcp-executor.js';
import type { ExecutionResult } from '../src/core/execution-outcome.js';
import { descriptor } from './core-fixtures.js';

const argumentValue = 'argument-value-never-in-a-span';
const tool = descriptor({ providerToolName: 'echo_meta', sideEffectClass: 'READ' });

function execute(executor: McpExecutor, target: McpTarget): Promise<ExecutionResult> {
  return executor.execute({
    target,
    serverKey: 'meta-echo',
    descriptor: tool,
    effectiveClass: 'READ',
    args: { text: argumentValue },
    deadline: new Date(Date.now() + 20_000),
    signal: AbortSignal.timeout(20_000),
    now: () => new Date(),
  });
}

/** The `_meta` the fixture received, from its structured answer. */
function receivedMeta(result: ExecutionResult): Record<string, unknown> | null {
  if (result.result !== 'returned') throw new Error(`the call did not return: ${JSON.stringify(result)}`);
  return (result.output.structuredContent as { meta: Record<string, unknown> | null }).meta;
}

function attributeText(spans: readonly ReadableSpan[]): string {
  return JSON.stringify(spans.map((span) => ({ name: span.name, attributes: span.attributes, events: span.events })));
}

describe('MCP tools/call trace context', () => {
  let pool: McpPool;
  let executor: McpExecutor;
  let http: HttpServerProcess;
  let tracing: InMemoryTracing | undefined;

  beforeAll(async () => {
    pool = createMcpPool();
    executor = new McpExecutor(pool);
    http = await startHttpFixture('meta-echo');
  });

  afterAll(async () => {
    await tracing?.stop();
    await pool.close();
    await http.stop();
  });

  it('sends no _meta with tracing off', async () => {
    expect(receivedMeta(await execute(executor, fixtureStdioTarget('meta-echo')))).toBeNull();
  });

  it('sends the CLIENT span’s traceparent and the parent’s tracestate in _meta, over stdio and HTTP', async () => {
    tracing = recordSpansInMemory('tool-adapter-test');
    // A parent as a remote caller would hand it over, with vendor state that must travel on.
    const parent = propagation.extract(ROOT_CONTEXT, { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'vendor=opaque' });
    for (const target of [fixtureStdioTarget('meta-echo'), { transport: 'http', url: http.url } satisfies McpTarget]) {
      tracing.reset();
      const result = await context.with(parent, () => execute(executor, target));
      const spans = tracing.spans();
      const client = spans.find((span) => span.name === 'tools/call echo_meta');
      expect(client, spans.map((span) => span.name).join(', ')).toBeDefined();
      if (client === undefined) return;
      expect(client.kind).toBe(SpanKind.CLIENT);
      expect(client.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
      expect(client.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
      expect(receivedMeta(result)).toEqual({ traceparent: `00-0af7651916cd43dd8448eb211c80319c-${client.spanContext().spanId}-01`, tracestate: 'vendor=opaque' });
      expect(client.attributes).toMatchObject({
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'echo_meta',
        'gen_ai.operation.name': 'execute_tool',
        'network.transport': target.transport === 'stdio' ? 'pipe' : 'tcp',
      });
      expect(typeof client.attributes['mcp.protocol.version']).toBe('string');
      if (target.transport === 'http') expect(typeof client.attributes['mcp.session.id']).toBe('string');
      expect(client.attributes['error.type']).toBeUndefined();
      expect(attributeText(spans)).not.toContain(argumentValue);
    }
  });

  it('marks a failed call with the taxonomy code', async () => {
    if (tracing === undefined) throw new Error('tracing is not recording');
    tracing.reset();
    const missing = { ...tool, providerToolName: 'no_such_tool' };
    await trace.getTracer('test').startActiveSpan('caller', async (span) => {
      await executor.execute({
        target: fixtureStdioTarget('meta-echo'),
        serverKey: 'meta-echo',
        descriptor: missing,
        effectiveClass: 'READ',
        args: { text: argumentValue },
        deadline: new Date(Date.now() + 20_000),
        signal: AbortSignal.timeout(20_000),
        now: () => new Date(),
      });
      span.end();
    });
    const client = tracing.spans().find((span) => span.name === 'tools/call no_such_tool');
    expect(client?.attributes['error.type']).toBe('INVALID_ARGUMENT');
    expect(attributeText(tracing.spans())).not.toContain(argumentValue);
  });
});
