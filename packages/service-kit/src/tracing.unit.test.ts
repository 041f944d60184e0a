import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from './config.js';
import { createLogger } from './logger.js';
import { recordSpansInMemory, startTracing, tracingSettings, type Tracing } from './tracing.js';

const logger = createLogger({ service: 'tracing-test', level: 'silent' });
let running: { stop(): Promise<void> } | undefined;

afterEach(async () => {
  await running?.stop();
  running = undefined;
});

/** A span started now, inside a parent span, and what the propagator writes for it. */
function probe(): { recording: boolean; sameTrace: boolean; carrier: Record<string, string> } {
  const tracer = trace.getTracer('probe');
  const parent = tracer.startSpan('parent');
  const active = trace.setSpan(context.active(), parent);
  return context.with(active, () => {
    const child = tracer.startSpan('child');
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    const result = {
      recording: child.isRecording(),
      sameTrace: trace.getActiveSpan()?.spanContext().traceId === parent.spanContext().traceId && child.spanContext().traceId === parent.spanContext().traceId,
      carrier,
    };
    child.end();
    parent.end();
    return result;
  });
}

describe('tracingSettings', () => {
  it('is off without an OTLP endpoint', () => {
    expect(tracingSettings({ OTEL_BSP_SCHEDULE_DELAY: '100' })).toBeUndefined();
  });

  it('appends /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT and takes OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })?.url).toBe('http://collector:4318/v1/traces');
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/ingest' })?.url).toBe('https://traces.example/ingest');
  });

  it('reads the headers (the traces ones win) and the batch settings', () => {
    expect(
      tracingSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=acme, authorization=Bearer%20one',
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'authorization=Bearer%20two',
        OTEL_BSP_SCHEDULE_DELAY: '50',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10',
      }),
    ).toEqual({ url: 'http://collector:4318/v1/traces', headers: { 'x-tenant': 'acme', authorization: 'Bearer two' }, scheduledDelayMillis: 50, maxExportBatchSize: 10 });
  });

  it('refuses a malformed setting with one line that names it and never quotes a header value', () => {
    expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL (e.g. http://127.0.0.1:4318)'));
    expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_BSP_SCHEDULE_DELAY: 'soon' })).toThrow(/^OTEL_BSP_SCHEDULE_DELAY must be a whole number$/);
    let message = '';
    try {
      tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'authorization%s3cr3t-value' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/^OTEL_EXPORTER_OTLP_HEADERS must be comma-separated name=value pairs/);
    expect(message).not.toContain('s3cr3t');
  });
});

describe('startTracing', () => {
  it('registers nothing without an endpoint: spans do not record and no trace context is propagated', async () => {
    const tracing = startTracing({ serviceName: 'svc', env: {}, logger });
    expect(tracing.enabled).toBe(false);
    expect(probe()).toEqual({ recording: false, sameTrace: false, carrier: {} });
    // Nothing registered means a test may register a provider of its own afterwards.
    running = recordSpansInMemory();
    await tracing.stop();
    expect(probe().recording).toBe(true);
  });

  it('exports spans over OTLP/HTTP as JSON with the service name, the configured headers, and on flush', async () => {
    const received: { path: string; headers: IncomingMessage['headers']; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    let tracing: Tracing | undefined;
    try {
      tracing = startTracing({
        serviceName: 'tool-adapter',
        instanceId: 'adapter-1',
        // A long delay: only the flush can have exported the span.
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_HEADERS: 'x-probe=yes', OTEL_BSP_SCHEDULE_DELAY: '60000' },
        logger,
      });
      expect(tracing.enabled).toBe(true);
      const seen = probe();
      expect(seen.recording).toBe(true);
      expect(seen.sameTrace).toBe(true);
      expect(seen.carrier['traceparent']).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      await tracing.flush();
      expect(received).toHaveLength(1);
      const [request] = received;
      expect(request?.path).toBe('/v1/traces');
      expect(request?.headers['content-type']).toBe('application/json');
      expect(request?.headers['x-probe']).toBe('yes');
      const body = JSON.parse(request?.body ?? '{}') as {
        resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: { name: string }[] }[] }[];
      };
      const resource = Object.fromEntries(body.resourceSpans[0]?.resource.attributes.map((a) => [a.key, a.value.stringValue]) ?? []);
      expect(resource).toMatchObject({ 'service.name': 'tool-adapter', 'service.instance.id': 'adapter-1' });
      expect(body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((span) => span.name))).sort()).toEqual(['child', 'parent']);
    } finally {
      await tracing?.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    // Stopped: the globals are the no-ops again.
    expect(probe()).toEqual({ recording: false, sameTrace: false, carrier: {} });
    expect(context.with(trace.setSpan(ROOT_CONTEXT, trace.wrapSpanContext({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 })), () => trace.getActiveSpan())).toBeUndefined();
  });
});

describe('recordSpansInMemory', () => {
  it('keeps ended spans with their parent links until reset, and refuses a second registration', async () => {
    const recording = recordSpansInMemory('projector');
    running = recording;
    probe();
    const spans = recording.spans();
    expect(spans.map((s) => s.name)).toEqual(['child', 'parent']);
    const [child, parent] = spans;
    expect(child?.parentSpanContext?.spanId).toBe(parent?.spanContext().spanId);
    expect(child?.resource.attributes['service.name']).toBe('projector');
    expect(() => recordSpansInMemory()).toThrow(/registered in this process already/);
    recording.reset();
    expect(recording.spans()).toEqual([]);
    await recording.stop();
    running = undefined;
    expect(probe().recording).toBe(false);
  });
});
