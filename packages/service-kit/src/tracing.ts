import { randomUUID } from 'node:crypto';
import { context, diag, DiagLogLevel, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_INSTANCE_ID, ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { z } from 'zod';
import { loadConfig } from './config.js';
import type { Logger } from './logger.js';

// Traces are off unless an OTLP endpoint is configured. Off means nothing is registered with the OpenTelemetry API:
// its global tracer, context manager and propagator stay the no-ops, so the spans the kits start cost a no-op call
// and no header is added to any message. On, one provider per process exports over OTLP/HTTP (JSON) in batches.

function endpointSetting(example: string) {
  return z
    .string()
    .trim()
    .refine((value) => {
      try {
        return ['http:', 'https:'].includes(new URL(value).protocol);
      } catch {
        return false;
      }
    }, `must be an http:// or https:// URL (e.g. ${example})`)
    .optional();
}

// `key=value` pairs, comma-separated, values URL-encoded (the OTLP exporter specification's format).
const headersSetting = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const headers: Record<string, string> = {};
    for (const pair of (value ?? '').split(',')) {
      if (pair.trim() === '') continue;
      const at = pair.indexOf('=');
      const name = at < 0 ? '' : pair.slice(0, at).trim();
      let decoded: string | undefined;
      try {
        decoded = at < 0 ? undefined : decodeURIComponent(pair.slice(at + 1).trim());
      } catch {
        decoded = undefined;
      }
      // The value is likely a credential: the message names the pair's position, never its content.
      if (name === '' || decoded === undefined) {
        ctx.addIssue({ code: 'custom', message: 'must be comma-separated name=value pairs with URL-encoded values' });
        return z.NEVER;
      }
      headers[name] = decoded;
    }
    return headers;
  });

function countSetting() {
  return z.coerce.number({ error: 'must be a whole number' }).int('must be a whole number').positive('must be positive').optional();
}

/** The standard `OTEL_*` settings tracing honours. */
const tracingConfig = z.object({
  OTEL_EXPORTER_OTLP_ENDPOINT: endpointSetting('http://127.0.0.1:4318'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpointSetting('http://127.0.0.1:4318/v1/traces'),
  OTEL_EXPORTER_OTLP_HEADERS: headersSetting,
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: headersSetting,
  OTEL_BSP_SCHEDULE_DELAY: countSetting(),
  OTEL_BSP_EXPORT_TIMEOUT: countSetting(),
  OTEL_BSP_MAX_QUEUE_SIZE: countSetting(),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: countSetting(),
});

/** Where spans go and how they are batched, once tracing is on. */
export interface TracingSettings {
  /** The OTLP/HTTP traces URL (`…/v1/traces`). */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly scheduledDelayMillis?: number;
  readonly exportTimeoutMillis?: number;
  readonly maxQueueSize?: number;
  readonly maxExportBatchSize?: number;
}

/**
 * Reads the tracing settings from the environment: undefined when neither OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as
 * is) nor OTEL_EXPORTER_OTLP_ENDPOINT (`/v1/traces` appended) is set. Throws a ConfigError naming a malformed setting.
 */
export function tracingSettings(env: Record<string, string | undefined>): TracingSettings | undefined {
  const config = loadConfig(tracingConfig, env);
  const base = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`);
  if (url === undefined) return undefined;
  return {
    url,
    headers: { ...config.OTEL_EXPORTER_OTLP_HEADERS, ...config.OTEL_EXPORTER_OTLP_TRACES_HEADERS },
    ...(config.OTEL_BSP_SCHEDULE_DELAY === undefined ? {} : { scheduledDelayMillis: config.OTEL_BSP_SCHEDULE_DELAY }),
    ...(config.OTEL_BSP_EXPORT_TIMEOUT === undefined ? {} : { exportTimeoutMillis: config.OTEL_BSP_EXPORT_TIMEOUT }),
    ...(config.OTEL_BSP_MAX_QUEUE_SIZE === undefined ? {} : { maxQueueSize: config.OTEL_BSP_MAX_QUEUE_SIZE }),
    ...(config.OTEL_BSP_MAX_EXPORT_BATCH_SIZE === undefined ? {} : { maxExportBatchSize: config.OTEL_BSP_MAX_EXPORT_BATCH_SIZE }),
  };
}

/** What startTracing needs: who is exporting, and the environment to read the `OTEL_*` settings from. */
export interface TracingOptions {
  /** `service.name` of every span, e.g. `tool-adapter`. */
  readonly serviceName: string;
  /** `service.instance.id`; default a random id. */
  readonly instanceId?: string;
  readonly env: Record<string, string | undefined>;
  /** Export failures are logged here (at warn), never span contents. */
  readonly logger: Logger;
}

/** Tracing as started in a process. */
export interface Tracing {
  /** False when no endpoint is configured: nothing was registered. */
  readonly enabled: boolean;
  /** Exports what is buffered now. */
  flush(): Promise<void>;
  /** Exports what is buffered, shuts the exporter down and unregisters the provider; safe to call twice. */
  stop(): Promise<void>;
}

const off: Tracing = { enabled: false, flush: () => Promise.resolve(), stop: () => Promise.resolve() };

/**
 * Starts tracing when the environment names an OTLP endpoint (see tracingSettings): registers, globally, a tracer
 * provider (`service.name`, `service.instance.id`) exporting in batches over OTLP/HTTP, the AsyncLocalStorage context
 * manager and the W3C trace-context propagator. Without an endpoint it registers nothing. Throws a ConfigError for a
 * malformed setting, and an Error when this process registered a provider already.
 */
export function startTracing(options: TracingOptions): Tracing {
  const settings = tracingSettings(options.env);
  if (settings === undefined) return off;
  const log = options.logger.child({ component: 'tracing' });
  const exporter = new OTLPTraceExporter({ url: settings.url, headers: { ...settings.headers } });
  const processor = new BatchSpanProcessor({
    exporter,
    ...(settings.scheduledDelayMillis === undefined ? {} : { scheduledDelayMillis: settings.scheduledDelayMillis }),
    ...(settings.exportTimeoutMillis === undefined ? {} : { exportTimeoutMillis: settings.exportTimeoutMillis }),
    ...(settings.maxQueueSize === undefined ? {} : { maxQueueSize: settings.maxQueueSize }),
    ...(settings.maxExportBatchSize === undefined ? {} : { maxExportBatchSize: settings.maxExportBatchSize }),
  });
  // The SDK reports failed exports through the API's diagnostics channel; route its warnings to the service's log.
  diag.setLogger(
    {
      error: (message) => log.warn({ detail: message }, 'tracing: export problem'),
      warn: (message) => log.warn({ detail: message }, 'tracing: export problem'),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  const registered = register(options.serviceName, options.instanceId ?? randomUUID(), processor);
  log.info({ url: redactedTracesUrl(settings.url) }, 'tracing on: spans are exported over OTLP/HTTP');
  return {
    enabled: true,
    flush: () => registered.provider.forceFlush(),
    stop: async () => {
      await registered.stop();
      diag.disable();
    },
  };
}

/** What recordSpansInMemory hands a test: the spans ended so far, and how to stop recording. */
export interface InMemoryTracing {
  readonly exporter: InMemorySpanExporter;
  /** The spans ended so far, in the order they ended. */
  spans(): ReadableSpan[];
  /** Forgets the spans recorded so far. */
  reset(): void;
  /** Unregisters the provider, context manager and propagator. */
  stop(): Promise<void>;
}

/**
 * Tests only: registers, globally, a tracer provider that keeps every ended span in memory (exported as it ends), with
 * the same context manager and propagator as startTracing. Throws when a provider is registered already.
 */
export function recordSpansInMemory(serviceName = 'test'): InMemoryTracing {
  const exporter = new InMemorySpanExporter();
  const registered = register(serviceName, randomUUID(), new SimpleSpanProcessor({ exporter }));
  return {
    exporter,
    spans: () => exporter.getFinishedSpans(),
    reset: () => exporter.reset(),
    stop: () => registered.stop(),
  };
}

/** The spans' types for tests that read recorded spans. */
export type { ReadableSpan } from '@opentelemetry/sdk-trace';

function register(serviceName: string, instanceId: string, processor: SpanProcessor): { provider: TracerProvider; stop: () => Promise<void> } {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName, [ATTR_SERVICE_INSTANCE_ID]: instanceId }),
    spanProcessors: [processor],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  // The API refuses a second registration (and says so on its diagnostics channel) rather than replacing the first.
  if (!trace.setGlobalTracerProvider(provider)) {
    contextManager.disable();
    throw new Error('tracing: a tracer provider is registered in this process already');
  }
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  let stopped: Promise<void> | undefined;
  return {
    provider,
    stop: () =>
      (stopped ??= (async () => {
        try {
          await provider.shutdown();
        } finally {
          trace.disable();
          context.disable();
          propagation.disable();
        }
      })()),
  };
}

/** The traces URL without credentials or query, for the start-up log line. */
function redactedTracesUrl(url: string): string {
  const parsed = new URL(url);
  parsed.username = '';
  parsed.password = '';
  parsed.search = '';
  return parsed.toString();
}
