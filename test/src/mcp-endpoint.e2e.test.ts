// The governed MCP endpoint end to end: the five pipeline services and the endpoint as processes over a private NATS
// and FerretDB, MCP clients (the SDK's Client over Streamable HTTP, and plain JSON-RPC over fetch where a test needs
// the request id or `_meta` in its own hands) listing and calling @modelcontextprotocol/server-everything and a
// counting fixture bound behind Toolplane.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyReceipt, type InvocationReceipt, type TenantPolicyInput } from '@toolplane/contracts';
import { generateSigningKeyPair, issueToken } from '@toolplane/auth';
import { connectMcp, type McpSession } from '@toolplane/mcp';
import { FixtureServer, fixtureServerPath, realServerPath } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { agent, e2eTenantPolicy, operator, registerServer, startPlatform, waitFor, waitForTools, type Platform } from './platform-harness.js';
import { startHttpProcess } from './http-process.js';
import type { ServiceProcess } from './service-process.js';

const infra = testScope('mcp_endpoint');
let platform: Platform;
/** Two replicas of the endpoint: nothing is kept in either, so either answers any request. */
let endpoints: { readonly service: ServiceProcess; readonly base: string }[] = [];
let base: string;
let killableServerId: string;

// WRITE runs ungated here (the retry test counts its executions); DESTRUCTIVE waits for a human.
const policy: TenantPolicyInput = e2eTenantPolicy({ gateWrites: false });

const read = ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural'];

/** The agent's profile: everything bound but everything.get-sum. */
const profile = {
  agentId: agent.agentId,
  allowedTools: ['everything.echo', 'everything.trigger-long-running-operation', 'write.*', 'gated.*', 'killable.*'],
  deniedTools: [],
  maxRiskClass: 'HIGH',
  permissions: [],
} as const satisfies Parameters<Platform['putAgentProfile']>[0];

/** The endpoint's log lines (pino JSON) with this message. */
function logLines(service: ServiceProcess, msg: string): Record<string, unknown>[] {
  return service
    .stdout()
    .split('\n')
    .filter((line) => line.includes(msg))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line['msg'] === msg);
}

/** Starts the endpoint's composition root as a process, from source, the way the other services run in these tests. */
async function startEndpoint(): Promise<{ service: ServiceProcess; base: string }> {
  // The notification tests await the endpoint's debug line of each look at a stream's tool set.
  const { service, url } = await startHttpProcess('mcp-endpoint', platform, () => ({ MCP_ENDPOINT_CALL_TIMEOUT_MS: '30000', LOG_LEVEL: 'debug' }));
  return { service, base: url };
}

const endpointUrl = (workspace = platform.scope.workspace, at = base) => `${at}/mcp/${platform.scope.tenant}/${workspace}`;

/** An SDK client session to the endpoint with a bearer token. */
async function mcpClient(token?: string, url = endpointUrl()): Promise<McpSession> {
  return connectMcp({ transport: 'http', url, headers: { Authorization: `Bearer ${token ?? (await platform.agentToken())}` } }, { requestTimeoutMs: 60_000 });
}

interface RpcAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } } | undefined;
}

/** One JSON-RPC request over plain HTTP, with the ids and headers the test chooses (to the first replica unless told). */
async function rpc(message: Record<string, unknown>, headers: Record<string, string> = {}, at = base): Promise<RpcAnswer> {
  const res = await fetch(endpointUrl(platform.scope.workspace, at), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      authorization: `Bearer ${await platform.agentToken()}`,
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : (JSON.parse(text) as RpcAnswer['body']) };
}

/** A tools/call over plain HTTP; the result object (throws on a JSON-RPC error). */
async function callTool(id: number | string, name: string, args: Record<string, unknown>, options: { meta?: Record<string, unknown>; session?: string; at?: string } = {}) {
  const answer = await rpc(
    { id, method: 'tools/call', params: { name, arguments: args, ...(options.meta === undefined ? {} : { _meta: options.meta }) } },
    options.session === undefined ? {} : { 'mcp-session-id': options.session },
    options.at,
  );
  if (answer.body?.result === undefined) throw new Error(`tools/call ${name} answered ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body.result as {
    content: { type: string; text: string }[];
    isError?: boolean;
    structuredContent?: Record<string, unknown>;
    _meta: Record<string, unknown> & { 'dev.toolplane/receipt'?: InvocationReceipt; 'dev.toolplane/call': { idempotencyKey: string } };
  };
}

beforeAll(async () => {
  platform = await startPlatform(infra, 'mcpendpoint');
  const node = process.execPath;
  const counting = (name: string, bindings: Parameters<typeof registerServer>[4]) =>
    registerServer(platform, name, [node, fixtureServerPath(FixtureServer.countingEcho)], { COUNT_FILE: platform.countFile(name) }, bindings);
  await registerServer(platform, 'everything', [node, realServerPath('everything'), 'stdio'], {}, [
    { tool: 'echo', flags: read },
    { tool: 'get-sum', flags: read },
    { tool: 'trigger-long-running-operation', flags: read },
  ]);
  await counting('write', [{ tool: 'count_calls', flags: ['--effect', 'write', '--risk', 'medium', '--idempotency', 'none'] }]);
  await counting('gated', [{ tool: 'count_calls', flags: ['--effect', 'destructive', '--risk', 'medium', '--idempotency', 'none'] }]);
  killableServerId = await counting('killable', [{ tool: 'count_calls', flags: read }]);
  // Everything but everything.get-sum: bound, but outside the agent's profile.
  await platform.putAgentProfile(profile);
  await platform.putTenantPolicy(policy);
  await waitForTools(platform, ['everything.echo', 'everything.get-sum', 'everything.trigger-long-running-operation', 'write.count_calls', 'gated.count_calls', 'killable.count_calls']);
  endpoints = await Promise.all([startEndpoint(), startEndpoint()]);
  base = endpoints[0]?.base ?? '';
}, 300_000);

afterAll(async () => {
  await Promise.all(
    endpoints.map(async ({ service }) => {
      if (service.child.exitCode === null) service.child.kill('SIGTERM');
      // SIGTERM drains and exits 0.
      expect(await service.exited).toBe(0);
    }),
  );
  await platform?.stop();
});

describe('an MCP client through the endpoint', () => {
  it('lists the agent’s effective tools under model-safe names, with schemas and hints; a bound tool outside its profile is not listed', { timeout: 60_000 }, async () => {
    const session = await mcpClient();
    try {
      expect(session.serverInfo.name).toBe('toolplane');
      // Toolplane's MCP client probes and speaks the current revision to a server that offers it.
      expect(session.protocolVersion).toBe('2026-07-28');
      const tools = await session.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['everything__echo', 'everything__trigger-long-running-operation', 'gated__count_calls', 'killable__count_calls', 'write__count_calls']);
      const echo = tools.find((tool) => tool.name === 'everything__echo');
      expect(echo?.inputSchema).toMatchObject({ type: 'object', properties: { message: { type: 'string' } } });
      expect(echo?.annotations).toMatchObject({ readOnlyHint: true });
      expect(tools.find((tool) => tool.name === 'gated__count_calls')?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
      expect(tools.find((tool) => tool.name === 'write__count_calls')?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    } finally {
      await session.close();
    }
  });

  it('calls server-everything’s echo through the pipeline, with the signed receipt and provenance in _meta', { timeout: 60_000 }, async () => {
    const session = await mcpClient();
    try {
      const result = await session.callTool('everything.echo', { message: 'hello through the endpoint' });
      expect(result.isError).toBe(false);
      expect(result.content).toEqual([{ type: 'text', text: 'Echo: hello through the endpoint' }]);
    } finally {
      await session.close();
    }
    const raw = await callTool(1, 'everything.echo', { message: 'with a receipt' });
    expect(raw.content).toEqual([{ type: 'text', text: 'Echo: with a receipt' }]);
    expect(raw._meta['dev.toolplane/provenance']).toBe('untrusted-tool-data');
    const receipt = raw._meta['dev.toolplane/receipt'];
    expect(receipt).toMatchObject({ state: 'Observed', toolId: 'everything.echo' });
    expect(verifyReceipt(receipt as InvocationReceipt, platform.receiptKeys)).toMatchObject({ valid: true });
  });

  it('answers schema-invalid arguments with an INVALID_ARGUMENT tool error', { timeout: 60_000 }, async () => {
    const session = await mcpClient();
    try {
      const result = await session.callTool('everything.echo', { message: 42 });
      expect(result.isError).toBe(true);
      expect(result.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^INVALID_ARGUMENT: /) as unknown });
    } finally {
      await session.close();
    }
  });

  it('refuses the unlisted tool (AUTHORIZATION_DENIED) and an unknown one, never running them', { timeout: 60_000 }, async () => {
    const denied = await callTool(2, 'everything.get-sum', { a: 1, b: 2 });
    expect(denied.isError).toBe(true);
    expect(denied.content[0]?.text).toMatch(/^AUTHORIZATION_DENIED: /);
    expect(denied._meta['dev.toolplane/receipt']).toMatchObject({ state: 'Denied' });
    const unknown = await callTool(3, 'nowhere.nothing', {});
    expect(unknown.isError).toBe(true);
    expect(unknown._meta['dev.toolplane/error']).toMatchObject({ code: expect.stringMatching(/^(NOT_FOUND|AUTHORIZATION_DENIED)$/) as unknown });
  });

  it('denies every call of a server whose kill switch is engaged', { timeout: 60_000 }, async () => {
    expect((await callTool(4, 'killable.count_calls', {})).isError).toBeUndefined();
    await platform.putTenantPolicy({
      ...policy,
      killSwitches: [{ target: 'SERVER', mcpServerId: killableServerId, reason: 'incident 7', engagedBy: operator.principal, engagedAt: new Date().toISOString() }],
    });
    try {
      const denied = await waitFor('the kill switch to reach the adapter', async () => {
        const result = await callTool(`kill-${Date.now()}`, 'killable.count_calls', {});
        return result.isError === true ? result : undefined;
      });
      expect(denied.content[0]?.text).toMatch(/^AUTHORIZATION_DENIED: .*incident 7/);
    } finally {
      await platform.putTenantPolicy(policy);
    }
  });
});

describe('authentication at the endpoint', () => {
  it('refuses a token for another workspace (403), and a forged one with 401 and the metadata URL', { timeout: 60_000 }, async () => {
    await expect(mcpClient(undefined, endpointUrl('other'))).rejects.toThrow();
    const other = await fetch(endpointUrl('other'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${await platform.agentToken()}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(other.status).toBe(403);

    const stranger = await generateSigningKeyPair('mcpendpoint-agents-1');
    const forged = await issueToken({ kind: 'agent', ...platform.scope, ...agent }, stranger.privateKey, { kid: stranger.kid, expiresIn: '5m' });
    const answer = await rpc({ id: 1, method: 'tools/list' }, { authorization: `Bearer ${forged}` });
    expect(answer.status).toBe(401);
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(answer.headers.get('www-authenticate') ?? '')?.[1];
    expect(metadataUrl).toBe(`${base}/.well-known/oauth-protected-resource/mcp/${platform.scope.tenant}/${platform.scope.workspace}`);
    expect(await (await fetch(metadataUrl ?? '')).json()).toMatchObject({ resource: endpointUrl() });
  });
});

describe('idempotency at the endpoint', () => {
  it('runs a WRITE once for an HTTP retry of the same request, sequential or concurrent; a new request runs it again', { timeout: 90_000 }, async () => {
    const session = 'retry-session-1';
    const first = await callTool(100, 'write.count_calls', {}, { session });
    const retry = await callTool(100, 'write.count_calls', {}, { session });
    expect(first.isError).toBeUndefined();
    expect(retry._meta['dev.toolplane/receipt']?.invocationId).toBe(first._meta['dev.toolplane/receipt']?.invocationId);
    expect(await platform.executions('write', 'count_calls')).toBe(1);

    const together = await Promise.all([callTool(101, 'write.count_calls', {}, { session }), callTool(101, 'write.count_calls', {}, { session })]);
    expect(together[0]._meta['dev.toolplane/receipt']?.invocationId).toBe(together[1]._meta['dev.toolplane/receipt']?.invocationId);
    expect(await platform.executions('write', 'count_calls')).toBe(2);

    // The same request id in another session is another call (JSON-RPC ids start over in every session).
    const elsewhere = await callTool(100, 'write.count_calls', {}, { session: 'retry-session-2' });
    expect(elsewhere._meta['dev.toolplane/receipt']?.invocationId).not.toBe(first._meta['dev.toolplane/receipt']?.invocationId);
    expect(await platform.executions('write', 'count_calls')).toBe(3);

    // The client's own key joins across request ids.
    const keyed = { 'dev.toolplane/idempotencyKey': 'client-key-1' };
    const a = await callTool(200, 'write.count_calls', {}, { session, meta: keyed });
    const b = await callTool(201, 'write.count_calls', {}, { session, meta: keyed });
    expect(a._meta['dev.toolplane/call']).toEqual({ idempotencyKey: 'client-key-1' });
    expect(b._meta['dev.toolplane/receipt']?.invocationId).toBe(a._meta['dev.toolplane/receipt']?.invocationId);
    expect(await platform.executions('write', 'count_calls')).toBe(4);
  });
});

describe('a gated call through the endpoint', () => {
  it('answers at once that it awaits approval, and completes once approved when the call is repeated', { timeout: 120_000 }, async () => {
    const meta = { 'dev.toolplane/idempotencyKey': 'gated-mcp-1' };
    const started = Date.now();
    const pending = await callTool(300, 'gated.count_calls', {}, { meta });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(pending.isError).toBe(true);
    expect(pending.content[0]?.text).toMatch(/^APPROVAL_PENDING: /);
    const approval = pending._meta['dev.toolplane/approval'] as { approvalId: string; decide: string };
    expect(approval.decide).toBe(`toolplane approvals approve ${approval.approvalId}`);
    expect(await platform.executions('gated', 'count_calls')).toBe(0);

    // Repeated before anyone decided: still pending, the same approval, nothing run.
    const again = await callTool(301, 'gated.count_calls', {}, { meta });
    expect(again._meta['dev.toolplane/approval']).toMatchObject({ approvalId: approval.approvalId });
    expect(await platform.executions('gated', 'count_calls')).toBe(0);

    expect(await platform.toolplane('approvals', 'approve', approval.approvalId, '--reason', 'fine')).toMatchObject({ code: 0, err: '' });
    const done = await waitFor('the approved call’s result on repeat', async () => {
      const result = await callTool(`repeat-${Date.now()}`, 'gated.count_calls', {}, { meta });
      return result.isError === true ? undefined : result;
    });
    expect(done._meta['dev.toolplane/receipt']).toMatchObject({ state: 'Observed', approvalId: approval.approvalId });
    expect(await platform.executions('gated', 'count_calls')).toBe(1);
  });
});

describe('two endpoint replicas behind one URL', () => {
  it('list the same tools, and a retry on the other replica joins the call the first one started', { timeout: 90_000 }, async () => {
    const [first, second] = endpoints.map((replica) => replica.base) as [string, string];
    const lists = await Promise.all([first, second].map(async (at) => (await rpc({ id: 1, method: 'tools/list' }, {}, at)).body?.result?.['tools'] as { name: string }[]));
    expect(lists[0]?.map((tool) => tool.name)).toEqual(lists[1]?.map((tool) => tool.name));
    expect(lists[0]?.length).toBeGreaterThan(0);

    const session = 'replicas-session-1';
    const before = await platform.executions('write', 'count_calls');
    const onFirst = await callTool(700, 'write.count_calls', {}, { session, at: first });
    const onSecond = await callTool(700, 'write.count_calls', {}, { session, at: second });
    expect(onSecond._meta['dev.toolplane/receipt']?.invocationId).toBe(onFirst._meta['dev.toolplane/receipt']?.invocationId);
    const together = await Promise.all([callTool(701, 'write.count_calls', {}, { session, at: first }), callTool(701, 'write.count_calls', {}, { session, at: second })]);
    expect(together[0]._meta['dev.toolplane/receipt']?.invocationId).toBe(together[1]._meta['dev.toolplane/receipt']?.invocationId);
    expect(await platform.executions('write', 'count_calls')).toBe(before + 2);
  });
});

describe('cancellation', () => {
  it('notifications/cancelled ends the wait at once; the call runs to its end in the pipeline and a retry gets its result', { timeout: 90_000 }, async () => {
    const session = 'cancel-session-1';
    const args = { duration: 4, steps: 1 };
    const started = Date.now();
    const call = rpc({ id: 800, method: 'tools/call', params: { name: 'everything.trigger-long-running-operation', arguments: args } }, { 'mcp-session-id': session });
    // Once the call is under way (its start recorded), the client cancels it in a request of its own.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const cancelled = await rpc({ method: 'notifications/cancelled', params: { requestId: 800, reason: 'the user pressed stop' } }, { 'mcp-session-id': session });
    expect(cancelled.status).toBe(202);
    const answer = await call;
    expect(Date.now() - started).toBeLessThan(3_500);
    expect(answer.body?.error?.message).toMatch(/^CANCELLED: /);

    const retried = await callTool(800, 'everything.trigger-long-running-operation', args, { session });
    expect(retried.content[0]?.text).toMatch(/^Long running operation completed/);
    expect(retried._meta['dev.toolplane/receipt']).toMatchObject({ state: 'Observed', attempt: 1 });
  });
});

describe('notifications/tools/list_changed', () => {
  it('reaches a connected client when its set changes (profile, kill switch), and not when another agent’s profile changes', { timeout: 120_000 }, async () => {
    const replica = endpoints[0]?.service;
    if (replica === undefined) throw new Error('no endpoint');
    const opened = logLines(replica, 'notification stream opened').length;
    const session = await mcpClient();
    let heard = 0;
    session.onListChanged((list) => {
      if (list === 'tools') heard += 1;
    });
    const names = async () => (await session.listTools()).map((tool) => tool.name).sort();
    try {
      // Toolplane's MCP client opens its listen stream (2026-07-28) as soon as it has a list-change listener.
      await waitFor('the client’s notification stream to open', () => logLines(replica, 'notification stream opened').length > opened);
      expect(await names()).toContain('killable__count_calls');

      // Another agent's profile: this agent's set is asked for again, found the same, and nothing is sent.
      const looked = logLines(replica, 'tool set looked at again').length;
      await platform.putAgentProfile({ ...profile, agentId: 'another-agent', allowedTools: ['everything.*'] });
      const look = await waitFor('the stream to look at its set again', () => logLines(replica, 'tool set looked at again')[looked]);
      expect(look).toMatchObject({ agentId: agent.agentId, changed: false });
      expect(heard).toBe(0);

      // This agent's profile loses a tool: notified, and tools/list shows the new set.
      await platform.putAgentProfile({ ...profile, allowedTools: profile.allowedTools.filter((pattern) => pattern !== 'killable.*') });
      await waitFor('list_changed after the profile change', () => heard === 1);
      expect(await names()).not.toContain('killable__count_calls');
      await platform.putAgentProfile(profile);
      await waitFor('list_changed after the profile came back', () => heard === 2);
      expect(await names()).toContain('killable__count_calls');

      // A server's kill switch hides its tools: notified again, and again when it is released.
      await platform.putTenantPolicy({
        ...policy,
        killSwitches: [{ target: 'SERVER', mcpServerId: killableServerId, reason: 'incident 8', engagedBy: operator.principal, engagedAt: new Date().toISOString() }],
      });
      await waitFor('list_changed after the kill switch', () => heard === 3);
      expect(await names()).not.toContain('killable__count_calls');
      await platform.putTenantPolicy(policy);
      await waitFor('list_changed after the kill switch was released', () => heard === 4);
      expect(await names()).toContain('killable__count_calls');
    } finally {
      await session.close();
      await platform.putAgentProfile(profile);
      await platform.putTenantPolicy(policy);
    }
    await waitFor('the stream to end with the session', () => logLines(replica, 'notification stream ended').length > 0);
  });
});
