// A tools/call carrying `_meta.traceparent` against the real endpoint and a real nats-server (no platform behind it):
// the endpoint's SERVER span continues the client's trace, and what the governed call sends over NATS carries that
// trace on, so the adapter's spans join it. A malformed traceparent is ignored and the call is answered as usual.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPair, issueToken, type SigningKeyPair } from '@toolplane/auth';
import { connectMessaging, type Messaging } from '@toolplane/messaging';
import { recordSpansInMemory, type InMemoryTracing } from '@toolplane/service-kit';
import { eventually, testScope, uniqueName } from '@toolplane/testing';
import { startMcpEndpoint, type RunningEndpoint } from '../src/mod.js';

const infra = testScope('mcp_trace');
const tenant = uniqueName('t_trace');
const agent = { kind: 'agent', principal: 'user:alice@example.com', agentId: 'agent-1', agentRevision: '1' } as const;
const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
const clientSpanId = '00f067aa0ba902b7';
let key: SigningKeyPair;
let endpoint: RunningEndpoint;
let observer: Messaging;
let tracing: InMemoryTracing;
/** The traceparent header of every message published under this file's tenant (undefined when it had none). */
const seen: (string | undefined)[] = [];

function callTool(id: number, meta: Record<string, unknown>, token: string): Promise<Response> {
  return fetch(`${endpoint.url}/mcp/${tenant}/main`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'crm_lookup', arguments: { customer: 'c-1' }, _meta: meta } }),
  });
}

beforeAll(async () => {
  tracing = recordSpansInMemory('mcp-endpoint-test');
  key = await generateSigningKeyPair('mcp-trace-agents-1');
  observer = await connectMessaging({ url: infra.natsUrl, name: 'mcp-trace-observer' });
  const subscription = observer.connection.subscribe('>');
  void (async () => {
    for await (const message of subscription) if (message.subject.includes(tenant)) seen.push(message.headers?.get('traceparent') || undefined);
  })();
  await observer.connection.flush();
  endpoint = await startMcpEndpoint({
    NATS_URL: infra.natsUrl,
    HTTP_PORT: '0',
    LOG_LEVEL: 'silent',
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [tenant]: [key.publicJwk] }),
    MCP_ENDPOINT_CALL_TIMEOUT_MS: '1000',
  });
});

afterAll(async () => {
  await endpoint?.stop();
  await observer?.drain();
  await tracing?.stop();
});

describe('tools/call tracing', () => {
  it('continues the client’s trace from _meta, and the call’s NATS messages carry it on', async () => {
    const token = await issueToken({ ...agent, tenant, workspace: 'main' }, key.privateKey, { kid: key.kid, expiresIn: '5m' });
    const res = await callTool(1, { traceparent: `00-${traceId}-${clientSpanId}-01` }, token);
    expect(res.status).toBe(200);
    const span = await eventually('the tools/call span', () => tracing.spans().find((s) => s.name === 'tools/call crm_lookup'), 10_000);
    expect(span.spanContext().traceId).toBe(traceId);
    expect(span.parentSpanContext?.spanId).toBe(clientSpanId);
    expect(span.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'jsonrpc.request.id': '1', 'toolplane.tenant': tenant, 'toolplane.workspace': 'main' });
    // No adapter answers here: the governed call's messages reached NATS, each naming the client's trace.
    await observer.connection.flush();
    expect(seen.length).toBeGreaterThan(0);
    for (const traceparent of seen) expect(traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(JSON.stringify(tracing.spans().map((s) => s.attributes))).not.toContain('c-1');
  });

  it('ignores a malformed traceparent: a new trace, and the call is answered as usual', async () => {
    tracing.reset();
    const token = await issueToken({ ...agent, tenant, workspace: 'main' }, key.privateKey, { kid: key.kid, expiresIn: '5m' });
    const res = await callTool(2, { traceparent: `00-${traceId}-not-a-span-id-01` }, token);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ jsonrpc: '2.0', id: 2 });
    const span = await eventually('the tools/call span', () => tracing.spans().find((s) => s.name === 'tools/call crm_lookup'), 10_000);
    expect(span.parentSpanContext).toBeUndefined();
    expect(span.spanContext().traceId).not.toBe(traceId);
  });
});
