// The endpoint's HTTP face against a real nats-server, with no platform behind it: authentication and its challenge,
// the protected-resource metadata, DNS-rebinding checks, bounded bodies, the MCP handshake in stateless mode, and
// that a refused request publishes nothing. (Lists and calls through the pipeline: test/src/mcp-endpoint.e2e.test.ts.)
// eslint-disable-next-line no-restricted-imports -- a 2026-07-28 client of the endpoint, as any client is: the SDK v2's own Client
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPair, issueToken, type SigningKeyPair } from '@toolplane/auth';
import { connectMessaging, type Messaging } from '@toolplane/messaging';
import { eventually, testScope, uniqueName } from '@toolplane/testing';
import { startMcpEndpoint, type RunningEndpoint } from '../src/mod.js';

const infra = testScope('mcp_http');
const tenant = uniqueName('t_mcp');
const agent = { kind: 'agent', principal: 'user:alice@example.com', agentId: 'agent-1', agentRevision: '1' } as const;
let key: SigningKeyPair;
let endpoint: RunningEndpoint;
let observer: Messaging;
/** Every message published under this file's tenant while the tests ran. */
const seen: string[] = [];

const token = (workspace = 'main', signer: SigningKeyPair = key, kid = key.kid) => issueToken({ ...agent, tenant, workspace }, signer.privateKey, { kid, expiresIn: '5m' });
const url = (workspace = 'main') => `${endpoint.url}/mcp/${tenant}/${workspace}`;

const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'test', version: '1' } } };

/** The samples of a metric in Prometheus text, keyed by their labels (all but `service`) as `name=value,…`. */
async function samplesOf(base: string, metric: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const samples: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const match = new RegExp(`^${metric}(?:\\{([^}]*)\\})? (\\S+)$`).exec(line);
    if (match === null) continue;
    const labels = [...(match[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)]
      .filter(([, name]) => name !== 'service')
      .map(([, name, value]) => `${name}=${value}`)
      .sort();
    samples[labels.join(',')] = Number(match[2]);
  }
  return samples;
}

function post(body: unknown, headers: Record<string, string> = {}, target = url()): Promise<Response> {
  return fetch(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

beforeAll(async () => {
  key = await generateSigningKeyPair('mcp-http-agents-1');
  observer = await connectMessaging({ url: infra.natsUrl, name: 'mcp-http-observer' });
  const subscription = observer.connection.subscribe('>');
  void (async () => {
    for await (const message of subscription) if (message.subject.includes(tenant)) seen.push(message.subject);
  })();
  await observer.connection.flush();
  endpoint = await startMcpEndpoint({
    NATS_URL: infra.natsUrl,
    HTTP_PORT: '0',
    LOG_LEVEL: 'silent',
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [tenant]: [key.publicJwk] }),
    MCP_ENDPOINT_ALLOWED_ORIGINS: 'http://localhost:6274',
    MCP_ENDPOINT_MAX_BODY_BYTES: '4096',
    MCP_ENDPOINT_CALL_TIMEOUT_MS: '2000',
    MCP_ENDPOINT_MAX_STREAMS: '1',
  });
});

afterAll(async () => {
  await endpoint?.stop();
  await observer?.drain();
});

describe('the endpoint over HTTP', () => {
  it('answers /healthz, /readyz and /metrics (the service kit’s, beside its own routes)', async () => {
    expect((await fetch(`${endpoint.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${endpoint.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', service: 'mcp-endpoint', checks: { nats: 'ok' } });
    const metrics = await fetch(`${endpoint.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('toolplane_process_cpu_seconds_total{service="mcp-endpoint"}');
  });

  it('asks for a token with 401 and the metadata URL, and serves the metadata there (RFC 9728)', async () => {
    const res = await post(initialize);
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    expect(metadataUrl).toBe(`${endpoint.url}/.well-known/oauth-protected-resource/mcp/${tenant}/main`);
    expect(challenge).not.toContain('error=');
    const metadata = await fetch(metadataUrl ?? '');
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toMatchObject({ resource: url(), bearer_methods_supported: ['header'] });
    expect(await (await fetch(`${endpoint.url}/.well-known/oauth-protected-resource`)).json()).toMatchObject({ resource: endpoint.url });
  });

  it('refuses a forged token with 401 invalid_token and the metadata URL', async () => {
    const stranger = await generateSigningKeyPair('stranger');
    const res = await post(initialize, { authorization: `Bearer ${await token('main', stranger, key.kid)}` });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp\/[^"]+", error="invalid_token"/);
  });

  it('refuses a genuine token of another workspace with 403, and nothing of a refused request reaches NATS', async () => {
    const before = seen.length;
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    const res = await post(list, { authorization: `Bearer ${await token('other')}` });
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expect((await post(list, { authorization: `Bearer ${await token('main', await generateSigningKeyPair('x'), key.kid)}` })).status).toBe(401);
    await observer.connection.flush();
    expect(seen.slice(before)).toEqual([]);
    // An accepted list does reach the adapter's subject (no adapter answers here, so it times out): the observation
    // above would have seen a refused one.
    const accepted = await post(list, { authorization: `Bearer ${await token()}` });
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toMatchObject({ id: 2, error: { code: -32603, message: expect.stringMatching(/^TIMEOUT: /) as unknown, data: { code: 'TIMEOUT' } } });
    await observer.connection.flush();
    expect(seen.slice(before).length).toBeGreaterThan(0);
  });

  it('initializes statelessly: the SDK’s protocol version, tools with list_changed, a session id that any request may carry', async () => {
    const auth = { authorization: `Bearer ${await token()}` };
    const res = await post(initialize, auth);
    expect(res.status).toBe(200);
    const session = res.headers.get('mcp-session-id');
    expect(session).toMatch(/^[0-9a-f-]{36}$/);
    expect(await res.json()).toMatchObject({ id: 1, result: { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'toolplane' } } });
    const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { ...auth, 'mcp-session-id': session ?? '', 'mcp-protocol-version': '2025-11-25' });
    expect(initialized.status).toBe(202);
    const ping = await post({ jsonrpc: '2.0', id: 3, method: 'ping' }, { ...auth, 'mcp-session-id': 'a-session-this-replica-never-saw', 'mcp-protocol-version': '2025-11-25' });
    expect(await ping.json()).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
  });

  it('speaks 2026-07-28 at the same URL: server/discover with no session, the SDK v2 client negotiating it, a listen stream bounded like GET', async () => {
    const auth = { authorization: `Bearer ${await token()}` };
    const discover = {
      jsonrpc: '2.0',
      id: 7,
      method: 'server/discover',
      params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1' } } },
    };
    const res = await post(discover, { ...auth, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' });
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    const answer = (await res.json()) as { id: number; result: { supportedVersions: string[]; capabilities: Record<string, unknown>; _meta: Record<string, unknown> } };
    expect(answer.id).toBe(7);
    expect(answer.result.supportedVersions).toContain('2026-07-28');
    expect(answer.result.capabilities).toMatchObject({ tools: { listChanged: true }, resources: { listChanged: true }, prompts: { listChanged: true } });
    expect(answer.result._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'toolplane' });

    const client = new Client({ name: 'v2-client', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(url()), { requestInit: { headers: auth } }));
    try {
      expect(client.getProtocolEra()).toBe('modern');
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      expect(client.getServerVersion()).toMatchObject({ name: 'toolplane' });
      // The replica's one stream (MCP_ENDPOINT_MAX_STREAMS=1): a listen takes it, so a GET stream is refused.
      const subscription = await client.listen({ toolsListChanged: true });
      expect(subscription.honoredFilter).toMatchObject({ toolsListChanged: true });
      await eventually('the listen stream counted', async () => ((await samplesOf(endpoint.url, 'toolplane_mcp_open_streams'))[''] === 1 ? true : undefined));
      const refused = await fetch(url(), { headers: { ...auth, accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25' } });
      expect(refused.status).toBe(503);
      await refused.body?.cancel();
    } finally {
      await client.close();
    }
    await eventually('the listen stream ended with the client', async () => ((await samplesOf(endpoint.url, 'toolplane_mcp_open_streams'))[''] === 0 ? true : undefined));
  });

  it('refuses foreign origins and host names (DNS rebinding), and allows the configured origin', async () => {
    const auth = { authorization: `Bearer ${await token()}` };
    expect((await post(initialize, { ...auth, origin: 'http://evil.example' })).status).toBe(403);
    expect((await post(initialize, { ...auth, origin: 'null' })).status).toBe(403);
    expect((await post(initialize, { ...auth, origin: 'http://localhost:6274' })).status).toBe(200);
    const rebound = url().replace('127.0.0.1', 'localhost.');
    expect((await post(initialize, auth, rebound).catch(() => undefined))?.status ?? 403).toBe(403);
    // CORS is off: no Access-Control header is ever sent.
    const res = await post(initialize, { ...auth, origin: 'http://localhost:6274' });
    expect([...res.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
  });

  it('serves the GET stream authenticated like POST, as server-sent events, and bounded per replica (503)', async () => {
    const auth = { authorization: `Bearer ${await token()}` };
    const sse = { accept: 'text/event-stream' };
    expect((await fetch(url(), { headers: sse })).status).toBe(401);
    expect((await fetch(url(), { headers: { ...sse, authorization: `Bearer ${await token('other')}` } })).status).toBe(403);
    expect((await fetch(url(), { headers: { ...sse, ...auth, origin: 'http://evil.example' } })).status).toBe(403);
    expect((await fetch(url(), { headers: { ...auth, accept: 'application/json' } })).status).toBe(406);
    const first = new AbortController();
    const open = await fetch(url(), { headers: { ...sse, ...auth, 'mcp-session-id': 'any-session' }, signal: first.signal });
    expect(open.status).toBe(200);
    expect(open.headers.get('content-type')).toBe('text/event-stream');
    // MCP_ENDPOINT_MAX_STREAMS is 1 here: a second stream is refused while the first is open, and allowed after.
    const second = await fetch(url(), { headers: { ...sse, ...auth } });
    expect(second.status).toBe(503);
    expect(second.headers.get('retry-after')).toBe('5');
    first.abort();
    const again = await eventually('the first stream’s place to be free', async () => {
      const controller = new AbortController();
      const res = await fetch(url(), { headers: { ...sse, ...auth }, signal: controller.signal });
      if (res.status !== 200) return undefined;
      return controller;
    });
    again.abort();
  });

  it('bounds request bodies (413), answers JSON-RPC parse errors, and answers DELETE 405', async () => {
    const auth = { authorization: `Bearer ${await token()}` };
    const big = { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'x.y', arguments: { blob: 'x'.repeat(8192) } } };
    const tooBig = await post(big, auth);
    expect(tooBig.status).toBe(413);
    expect(await tooBig.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    const garbage = await post('{"jsonrpc": ', auth);
    expect(garbage.status).toBe(400);
    expect(await garbage.json()).toMatchObject({ error: { code: -32700 } });
    expect((await fetch(url(), { method: 'DELETE', headers: auth })).status).toBe(405);
    expect((await fetch(`${endpoint.url}/mcp/${tenant}`, { method: 'POST', headers: auth })).status).toBe(404);
  });
});

describe('malformed and hostile MCP messages at either era', () => {
  const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  const modernHeaders = (method: string) => ({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': method });

  it('answers each with a JSON-RPC error and a 4xx, never a 5xx, and publishes nothing for any of them', async () => {
    const auth = { authorization: `Bearer ${await token()}` };
    await observer.connection.flush();
    const before = seen.length;
    const cases: { body: unknown; headers?: Record<string, string>; code: number }[] = [
      // Not a JSON-RPC message at all.
      { body: 42, code: -32600 },
      { body: [], code: -32600 },
      // A 2026-07-28 request whose envelope lacks its capabilities, or whose headers disagree with its body.
      { body: { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }, headers: modernHeaders('server/discover'), code: -32602 },
      { body: { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: envelope } }, headers: modernHeaders('server/discover'), code: -32020 },
      // A revision nobody speaks.
      { body: { jsonrpc: '2.0', id: 3, method: 'server/discover', params: { _meta: { ...envelope, 'io.modelcontextprotocol/protocolVersion': '1999-01-01' } } }, headers: { 'mcp-protocol-version': '1999-01-01', 'mcp-method': 'server/discover' }, code: -32022 },
      // A method this endpoint does not serve, at 2026-07-28 (404) and in a 2025-era request.
      { body: { jsonrpc: '2.0', id: 4, method: 'sampling/createMessage', params: { _meta: envelope } }, headers: modernHeaders('sampling/createMessage'), code: -32601 },
    ];
    for (const { body, headers, code } of cases) {
      const res = await post(body, { ...auth, ...headers });
      const text = await res.text();
      expect({ body, status: res.status < 500 && res.status >= 400 }).toEqual({ body, status: true });
      expect({ body, code: (JSON.parse(text) as { error?: { code?: number } }).error?.code }).toEqual({ body, code });
    }
    await observer.connection.flush();
    expect(seen.slice(before)).toEqual([]);
  });
});

describe('the per-token rate limit', () => {
  it('answers 429 with Retry-After past the limit, publishing nothing, and admits the token again later', { timeout: 30_000 }, async () => {
    const limited = await startMcpEndpoint({
      NATS_URL: infra.natsUrl,
      HTTP_PORT: '0',
      LOG_LEVEL: 'silent',
      TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [tenant]: [key.publicJwk] }),
      MCP_ENDPOINT_TOKEN_RATE_LIMIT: '2',
      MCP_ENDPOINT_TOKEN_RATE_WINDOW_MS: '1000',
    });
    try {
      const target = `${limited.url}/mcp/${tenant}/main`;
      const auth = { authorization: `Bearer ${await token()}`, 'mcp-protocol-version': '2025-11-25' };
      const list = { jsonrpc: '2.0', id: 5, method: 'tools/list', params: {} };
      const ping = { jsonrpc: '2.0', id: 6, method: 'ping' };
      expect((await post(ping, auth, target)).status).toBe(200);
      expect((await post(ping, auth, target)).status).toBe(200);
      // Over the limit: nothing of the refused request reaches NATS (a tools/list would publish to the adapter).
      const before = seen.length;
      const refused = await post(list, auth, target);
      expect(refused.status).toBe(429);
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(2);
      expect(await refused.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000, message: expect.stringMatching(/^Too many requests/) as unknown } });
      await observer.connection.flush();
      expect(seen.slice(before)).toEqual([]);
      // Unauthenticated requests are refused 401 before any counting; another token has its own count.
      expect((await post(ping, {}, target)).status).toBe(401);
      const another = await issueToken({ ...agent, agentId: 'agent-2', tenant, workspace: 'main' }, key.privateKey, { kid: key.kid, expiresIn: '5m' });
      expect((await post(ping, { ...auth, authorization: `Bearer ${another}` }, target)).status).toBe(200);
      // A method the endpoint does not serve (the SDK answers it) and a notification, with a third token.
      const third = await issueToken({ ...agent, agentId: 'agent-3', tenant, workspace: 'main' }, key.privateKey, { kid: key.kid, expiresIn: '5m' });
      const unknown = await post({ jsonrpc: '2.0', id: 7, method: 'logging/setLevel', params: { level: 'info' } }, { ...auth, authorization: `Bearer ${third}` }, target);
      expect(await unknown.json()).toMatchObject({ id: 7, error: { code: -32601 } });
      expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { ...auth, authorization: `Bearer ${third}` }, target)).status).toBe(202);

      // Exactly what was asked, by method and outcome; the HTTP refusals, and the method the endpoint does not serve, under `other`.
      expect(await samplesOf(limited.url, 'toolplane_mcp_rate_limited_total')).toEqual({ '': 1 });
      expect(await samplesOf(limited.url, 'toolplane_mcp_requests_total')).toEqual({
        'method=ping,outcome=ok': 3,
        'method=other,outcome=RATE_LIMITED': 1,
        'method=other,outcome=AUTHENTICATION_FAILED': 1,
        'method=other,outcome=INVALID_ARGUMENT': 1,
        'method=notifications/initialized,outcome=ok': 1,
      });
      expect(await samplesOf(limited.url, 'toolplane_mcp_open_streams')).toEqual({ '': 0 });
      // Once the window has moved on, the token is admitted again.
      await eventually('the token to be admitted again', async () => ((await post(ping, auth, target)).status === 200 ? true : undefined), 5_000, 100);
    } finally {
      await limited.stop();
    }
  });
});
