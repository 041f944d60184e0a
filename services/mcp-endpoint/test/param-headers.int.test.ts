// SEP-2243 `Mcp-Param-*` headers through the endpoint, against a real nats-server: the adapter's effective-tools
// answer is given by this file (one tool whose `region` parameter is marked `x-mcp-header: Region`), nothing runs a
// call. A 2026-07-28 tools/call whose header is missing, disagrees or is badly encoded is refused 400 / -32020 before
// anything is published; a matching one (plain or base64) is published to the pipeline; a 2025-era call is not checked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPair, issueToken, type SigningKeyPair } from '@toolplane/auth';
import { EffectiveToolSet, EffectiveToolSetRequest, MCP_TIMEOUT_HEADER, adapterOperations, commandSubject, invocationRequestSubject, type EffectiveTool } from '@toolplane/contracts';
import { connectMessaging, serve, type Messaging, type ServeHandle } from '@toolplane/messaging';
import { testScope, uniqueName } from '@toolplane/testing';
import { startMcpEndpoint, type RunningEndpoint } from '../src/mod.js';

const infra = testScope('mcp_param_headers');
const tenant = uniqueName('t_mcp');
const scope = { tenant, workspace: 'main' };
let key: SigningKeyPair;
let endpoint: RunningEndpoint;
let observer: Messaging;
let adapter: ServeHandle;
/** Every message published under this file's tenant while the tests ran. */
const seen: string[] = [];
let listsAsked = 0;

const lookup: EffectiveTool = {
  toolId: 'geo.lookup',
  toolVersion: '1.0.0',
  name: 'geo__lookup',
  description: 'Looks a place up in one region.',
  inputSchema: {
    type: 'object',
    properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, query: { type: 'string' } },
    required: ['region', 'query'],
  },
  sideEffectClass: 'READ',
  riskClass: 'LOW',
  requiresApproval: false,
};

const token = (agentId = 'agent-1') => issueToken({ kind: 'agent', principal: 'user:alice@example.com', agentId, agentRevision: '1', tenant, workspace: 'main' }, key.privateKey, { kid: key.kid, expiresIn: '5m' });
const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1' } };
let nextId = 1;

function post(body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(`${endpoint.url}/mcp/${tenant}/main`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

/** A 2026-07-28 tools/call of `name` with `args`, its standard headers and the given extra ones. */
async function modernCall(auth: string, name: string, args: Record<string, unknown>, headers: Record<string, string> = {}) {
  const id = nextId++;
  const res = await post(
    { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: envelope } },
    { authorization: `Bearer ${auth}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name, [MCP_TIMEOUT_HEADER]: '500', ...headers },
  );
  return { id, status: res.status, body: (await res.json()) as { id: number; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } } };
}

/** Whether the endpoint published anything under this file's tenant since `before` (flushed first, so nothing is in flight). */
async function publishedSince(before: number): Promise<string[]> {
  await observer.connection.flush();
  return seen.slice(before);
}

beforeAll(async () => {
  key = await generateSigningKeyPair('mcp-param-headers-1');
  observer = await connectMessaging({ url: infra.natsUrl, name: 'mcp-param-headers-observer' });
  const subscription = observer.connection.subscribe('>');
  void (async () => {
    for await (const message of subscription) if (message.subject.includes(tenant)) seen.push(message.subject);
  })();
  // The adapter's answer to `effectiveTools`, as it would compute it: this agent may see the one tool.
  adapter = await serve(observer, {
    subject: commandSubject(scope, 'adapter', adapterOperations.effectiveTools),
    queue: 'adapter',
    requestSchema: EffectiveToolSetRequest,
    replySchema: EffectiveToolSet,
    handler: () => {
      listsAsked += 1;
      return Promise.resolve({ tools: [lookup] });
    },
  });
  await observer.connection.flush();
  endpoint = await startMcpEndpoint({
    NATS_URL: infra.natsUrl,
    HTTP_PORT: '0',
    LOG_LEVEL: 'silent',
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [tenant]: [key.publicJwk] }),
    MCP_ENDPOINT_TOKEN_RATE_LIMIT: '0',
  });
});

afterAll(async () => {
  await endpoint?.stop();
  await adapter?.stop();
  await observer?.drain();
});

describe('Mcp-Param-* headers at 2026-07-28 (SEP-2243)', () => {
  it('lists the tool with its x-mcp-header annotation as the descriptor has it', async () => {
    const res = await post({ jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: { _meta: envelope } }, { authorization: `Bearer ${await token()}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
    expect(res.status).toBe(200);
    const { result } = (await res.json()) as { result: { tools: { name: string; inputSchema: unknown }[] } };
    expect(result.tools).toEqual([expect.objectContaining({ name: 'geo__lookup', inputSchema: lookup.inputSchema })]);
  });

  it('refuses a missing, disagreeing or badly encoded header with 400 and -32020, publishing nothing', async () => {
    const auth = await token();
    // The token's list is remembered: the check needs nothing from NATS.
    await post({ jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: { _meta: envelope } }, { authorization: `Bearer ${auth}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
    const before = (await publishedSince(0)).length;
    const args = { region: 'eu-west-1', query: 'Paris' };
    const cases: { headers: Record<string, string>; why: RegExp }[] = [
      { headers: {}, why: /the arguments carry region="eu-west-1" but the Mcp-Param-Region header is absent/ },
      { headers: { 'Mcp-Param-Region': 'us-east-1' }, why: /the Mcp-Param-Region header says "us-east-1" but the arguments carry region="eu-west-1"/ },
      { headers: { 'mcp-param-region': 'EU-WEST-1' }, why: /says "EU-WEST-1"/ },
      { headers: { 'Mcp-Param-Region': '=?base64?ZXUtd2VzdC0x=?=' }, why: /not canonical base64/ },
      { headers: { 'Mcp-Param-Region': '=?base64?ZXUt!!d2VzdC0x?=' }, why: /not canonical base64/ },
    ];
    for (const { headers, why } of cases) {
      const { id, status, body } = await modernCall(auth, 'geo__lookup', args, headers);
      expect({ headers, status }).toEqual({ headers, status: 400 });
      expect(body).toEqual({
        jsonrpc: '2.0',
        id,
        error: { code: -32020, message: expect.stringMatching(why) as unknown, data: { mismatch: { header: 'Mcp-Param-Region', body: expect.stringMatching(why) as unknown } } },
      });
    }
    // By the governed id too.
    expect((await modernCall(auth, 'geo.lookup', args, { 'Mcp-Param-Region': 'us-east-1' })).status).toBe(400);
    expect(await publishedSince(before)).toEqual([]);
  });

  it('asks the caller’s set when it has no current list, and refuses before the call is published', async () => {
    const fresh = await token('agent-2');
    const asked = listsAsked;
    const before = (await publishedSince(0)).length;
    const { status } = await modernCall(fresh, 'geo__lookup', { region: 'eu-west-1', query: 'Paris' }, { 'Mcp-Param-Region': 'us-east-1' });
    expect(status).toBe(400);
    expect(listsAsked).toBe(asked + 1);
    const published = await publishedSince(before);
    expect(published).toEqual([commandSubject(scope, 'adapter', adapterOperations.effectiveTools)]);
  });

  it('publishes a call whose header matches, plain or base64, and one whose argument is absent without the header', async () => {
    const auth = await token();
    const calls: { args: Record<string, unknown>; headers: Record<string, string> }[] = [
      { args: { region: 'eu-west-1', query: 'Paris' }, headers: { 'Mcp-Param-Region': 'eu-west-1' } },
      { args: { region: 'eu-west-1', query: 'Paris' }, headers: { 'Mcp-Param-Region': `=?base64?${Buffer.from('eu-west-1').toString('base64')}?=` } },
      { args: { region: 'Zürich ', query: 'Paris' }, headers: { 'Mcp-Param-Region': `=?base64?${Buffer.from('Zürich ').toString('base64')}?=` } },
      // The adapter refuses this one against the schema (region is required); no header was expected for it.
      { args: { query: 'Paris' }, headers: {} },
    ];
    for (const { args, headers } of calls) {
      const before = (await publishedSince(0)).length;
      const { status, body } = await modernCall(auth, 'geo__lookup', args, headers);
      // No adapter runs calls here: the call was published, and ends as a tool error at its deadline.
      expect({ args, status, error: body.error }).toEqual({ args, status: 200, error: undefined });
      expect(await publishedSince(before)).toContain(invocationRequestSubject(scope));
    }
  });

  it('does not check a 2025-era call (the headers are 2026-07-28’s)', async () => {
    const before = (await publishedSince(0)).length;
    const res = await post(
      { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'geo__lookup', arguments: { region: 'eu-west-1', query: 'Paris' } } },
      { authorization: `Bearer ${await token()}`, 'mcp-protocol-version': '2025-11-25', 'Mcp-Param-Region': 'us-east-1', [MCP_TIMEOUT_HEADER]: '500' },
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as { error?: unknown }).error).toBeUndefined();
    expect(await publishedSince(before)).toContain(invocationRequestSubject(scope));
  });

  it('counts each refusal as a tools/call answered INVALID_ARGUMENT', async () => {
    const text = await (await fetch(`${endpoint.url}/metrics`)).text();
    expect(text).toMatch(/^toolplane_mcp_requests_total\{[^}]*method="tools\/call",outcome="INVALID_ARGUMENT"[^}]*\} 7$/m);
  });
});
