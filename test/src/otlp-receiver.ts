// An in-process OTLP/HTTP trace receiver for the e2e tests: POST /v1/traces with a JSON body (what the services'
// exporter sends), each span kept flattened with its service, and every body kept raw so a test can search all that
// was exported (for an argument value or a secret that must not be there).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One exported span, flattened. */
export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  /** Undefined for a root span. */
  readonly parentSpanId: string | undefined;
  readonly name: string;
  /** OTLP's SpanKind number: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly links: readonly { readonly traceId: string; readonly spanId: string }[];
}

/** OTLP's span kinds, by name. */
export const otlpSpanKind = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** A running receiver. */
export interface OtlpReceiver {
  /** Its base URL, for OTEL_EXPORTER_OTLP_ENDPOINT (the exporters append /v1/traces). */
  readonly endpoint: string;
  /** Every span received so far. */
  spans(): readonly ReceivedSpan[];
  /** Every request body received so far, as sent. */
  rawBodies(): readonly string[];
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpKeyValue {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpKeyValue[];
  status?: { code?: number };
  links?: { traceId: string; spanId: string }[];
}
interface OtlpBody {
  resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

function valueOf(value: OtlpValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  return JSON.stringify(value);
}

function attributesOf(list: readonly OtlpKeyValue[] | undefined): Record<string, string | number | boolean> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

/** Starts a receiver on 127.0.0.1 and a free port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      let parsed: OtlpBody;
      try {
        parsed = JSON.parse(body) as OtlpBody;
      } catch {
        res.writeHead(400).end();
        return;
      }
      bodies.push(body);
      for (const resourceSpans of parsed.resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
          for (const span of scopeSpans.spans ?? []) {
            spans.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId === undefined || span.parentSpanId === '' ? undefined : span.parentSpanId,
              name: span.name,
              kind: span.kind,
              attributes: attributesOf(span.attributes),
              statusCode: span.status?.code ?? 0,
              links: (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId })),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => spans,
    rawBodies: () => bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
