// Every kind of MCP result through the governed endpoint, at both protocol revisions it serves at one URL: a 1.x SDK
// client at 2025-11-25 and the SDK v2 client negotiating 2026-07-28 call tools of server-everything (an image,
// resource links, structured content with an output schema), read through a bound resource template of it, and call a
// fixture whose result is over Toolplane's bound.
// The pipeline services and the endpoint run as processes over a private NATS and FerretDB. (A leased credential
// inside an embedded text resource is stripped, through the endpoint at both revisions: mcp-endpoint-secrets.e2e.)
/* eslint-disable no-restricted-imports -- clients of the endpoint as any client is: the SDK v2's own Client at 2026-07-28 and the 1.x SDK's at 2025-11-25 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport, UriTemplate as ModernUriTemplate } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UriTemplate as LegacyUriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
/* eslint-enable no-restricted-imports */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RESULT_BYTES, verifyReceipt, type InvocationReceipt, type TenantPolicyInput } from '@toolplane/contracts';
import { FixtureServer, fixtureServerPath, realServerPath } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { agent, e2eTenantPolicy, registerServer, startPlatform, waitForTools, type Platform } from './platform-harness.js';
import { startHttpProcess, type HttpProcess } from './http-process.js';

const infra = testScope('mcp_content');
let platform: Platform;
let endpoint: HttpProcess;

const read = ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural'];
const toolIds = [
  'everything.get-tiny-image',
  'everything.get-resource-links',
  'everything.get-structured-content',
  'hostile.big_result',
] as const;
/** server-everything's text template, bound as a resource template under this id. */
const dynamicText = { resourceId: 'everything.dynamic_text', uriTemplate: 'demo://resource/dynamic/text/{resourceId}' } as const;

interface CallResult {
  readonly content: readonly Record<string, unknown>[];
  readonly structuredContent?: Record<string, unknown> | undefined;
  readonly isError?: boolean | undefined;
  readonly _meta?: Record<string, unknown> | undefined;
}

/** One client of the endpoint, whichever SDK and revision it speaks. */
interface EndpointClient {
  readonly protocolVersion: string | undefined;
  listTools(): Promise<{ name: string; outputSchema?: unknown; _meta?: Record<string, unknown> | undefined }[]>;
  callTool(name: string, args: Record<string, unknown>): Promise<CallResult>;
  listResourceTemplates(): Promise<{ uriTemplate: string; name: string; _meta?: Record<string, unknown> | undefined }[]>;
  readResource(uri: string): Promise<{ contents: { uri: string; text?: string; blob?: string }[]; _meta?: Record<string, unknown> | undefined }>;
  /** A URI template expanded as this SDK's clients expand one. */
  expand(uriTemplate: string, variables: Record<string, string>): string;
  close(): Promise<void>;
}

const endpointUrl = () => new URL(`${endpoint.url}/mcp/${platform.scope.tenant}/${platform.scope.workspace}`);

async function legacyClient(): Promise<EndpointClient> {
  const client = new LegacyClient({ name: 'sdk-1.x', version: '1.0.0' });
  const transport = new LegacyTransport(endpointUrl(), { requestInit: { headers: { Authorization: `Bearer ${await platform.agentToken()}` } } });
  await client.connect(transport);
  return {
    protocolVersion: transport.protocolVersion,
    listTools: async () => (await client.listTools()).tools,
    callTool: async (name, args) => (await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 })) as CallResult,
    listResourceTemplates: async () => (await client.listResourceTemplates()).resourceTemplates,
    readResource: (uri) => client.readResource({ uri }, { timeout: 60_000 }),
    expand: (uriTemplate, variables) => new LegacyUriTemplate(uriTemplate).expand(variables),
    close: () => client.close(),
  };
}

async function modernClient(): Promise<EndpointClient> {
  const client = new ModernClient({ name: 'sdk-2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new ModernTransport(endpointUrl(), { requestInit: { headers: { Authorization: `Bearer ${await platform.agentToken()}` } } }));
  return {
    protocolVersion: client.getNegotiatedProtocolVersion(),
    listTools: async () => (await client.listTools()).tools,
    callTool: async (name, args) => (await client.callTool({ name, arguments: args }, { timeout: 60_000 })) as CallResult,
    listResourceTemplates: async () => (await client.listResourceTemplates()).resourceTemplates,
    readResource: (uri) => client.readResource({ uri }, { timeout: 60_000 }),
    expand: (uriTemplate, variables) => new ModernUriTemplate(uriTemplate).expand(variables),
    close: () => client.close(),
  };
}

beforeAll(async () => {
  platform = await startPlatform(infra, 'mcpcontent');
  const node = process.execPath;
  const everythingId = await registerServer(platform, 'everything', [node, realServerPath('everything'), 'stdio'], {}, [
    { tool: 'get-tiny-image', flags: read },
    { tool: 'get-resource-links', flags: read },
    { tool: 'get-structured-content', flags: read },
  ]);
  await platform.toolplaneJson('resources', 'bind', everythingId, '--template', dynamicText.uriTemplate, '--resource-id', dynamicText.resourceId, '--knowledge-source', 'demo', '--classification', 'internal');
  await registerServer(platform, 'hostile', [node, fixtureServerPath(FixtureServer.hostile)], {}, [{ tool: 'big_result', flags: read }]);
  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: [...toolIds, dynamicText.resourceId], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
  const policy: TenantPolicyInput = e2eTenantPolicy({ gateWrites: false });
  await platform.putTenantPolicy(policy);
  await waitForTools(platform, [...toolIds, dynamicText.resourceId]);
  endpoint = await startHttpProcess('mcp-endpoint', platform, () => ({ MCP_ENDPOINT_CALL_TIMEOUT_MS: '60000' }));
}, 300_000);

afterAll(async () => {
  if (endpoint !== undefined && endpoint.service.child.exitCode === null) endpoint.service.child.kill('SIGTERM');
  await platform?.stop();
});

const revisions = [
  { revision: '2025-11-25', connect: legacyClient },
  { revision: '2026-07-28', connect: modernClient },
] as const;

describe.each(revisions)('results through the endpoint at $revision', ({ revision, connect }) => {
  it('negotiates the revision and lists names every model API accepts, the governed id in _meta, and the output schema', { timeout: 60_000 }, async () => {
    const client = await connect();
    try {
      expect(client.protocolVersion).toBe(revision);
      const tools = await client.listTools();
      for (const tool of tools) expect(tool.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      expect(tools.map((tool) => (tool._meta?.['dev.toolplane/tool'] as { toolId: string }).toolId).sort()).toEqual([...toolIds].sort());
      const structured = tools.find((tool) => tool.name === 'everything__get-structured-content');
      expect(structured?.outputSchema).toMatchObject({ type: 'object' });
    } finally {
      await client.close();
    }
  });

  it('returns get-tiny-image’s image, get-resource-links’ links and checked structured content, by listed name or governed id', { timeout: 90_000 }, async () => {
    const client = await connect();
    try {
      const image = await client.callTool('everything__get-tiny-image', {});
      expect(image.isError ?? false).toBe(false);
      const picture = image.content.find((block) => block.type === 'image');
      expect(picture).toMatchObject({ type: 'image', mimeType: 'image/png' });
      expect(Buffer.from(String(picture?.['data']), 'base64').subarray(1, 4).toString('latin1')).toBe('PNG');
      const receipt = image._meta?.['dev.toolplane/receipt'] as InvocationReceipt;
      expect(verifyReceipt(receipt, platform.receiptKeys)).toMatchObject({ valid: true });

      const links = await client.callTool('everything.get-resource-links', { count: 3 });
      const linked = links.content.filter((block) => block.type === 'resource_link');
      expect(linked).toHaveLength(3);
      for (const link of linked) expect(link).toMatchObject({ type: 'resource_link', uri: expect.stringMatching(/^demo:\/\//) as unknown, name: expect.any(String) as unknown });

      const structured = await client.callTool('everything__get-structured-content', { location: 'New York' });
      expect(structured.isError ?? false).toBe(false);
      expect(structured.structuredContent).toMatchObject({ temperature: expect.any(Number) as unknown, conditions: expect.any(String) as unknown, humidity: expect.any(Number) as unknown });
    } finally {
      await client.close();
    }
  });

  it('bounds an oversize result with a typed, visible cut', { timeout: 90_000 }, async () => {
    const client = await connect();
    try {
      const big = await client.callTool('hostile__big_result', { bytes: 600_000 });
      expect(big.isError ?? false).toBe(false);
      expect(big._meta?.['dev.toolplane/truncated']).toBe(true);
      const text = big.content.map((block) => (block.type === 'text' ? String(block['text']) : '')).join('');
      expect(Buffer.byteLength(text, 'utf8')).toBeLessThanOrEqual(MAX_RESULT_BYTES);
      expect(text).toMatch(/\[truncated by Toolplane: \d+ of 600000 bytes shown\]$/);
    } finally {
      await client.close();
    }
  });

  it('lists a bound resource template under the endpoint’s template, and reads what the client expands from it or from the server’s own', { timeout: 90_000 }, async () => {
    const client = await connect();
    try {
      const templates = await client.listResourceTemplates();
      expect(templates).toEqual([
        expect.objectContaining({
          uriTemplate: 'toolplane://resources/everything.dynamic_text{?resourceId}',
          _meta: { 'dev.toolplane/resource': expect.objectContaining({ resourceId: dynamicText.resourceId, serverUriTemplate: dynamicText.uriTemplate }) as unknown },
        }),
      ]);
      const listed = client.expand(templates[0]!.uriTemplate, { resourceId: '7' });
      expect(listed).toBe('toolplane://resources/everything.dynamic_text?resourceId=7');
      const read = await client.readResource(listed);
      expect(read.contents).toHaveLength(1);
      expect(read.contents[0]).toMatchObject({ uri: listed, text: expect.stringContaining('Resource 7:') as unknown });
      const receipt = read._meta?.['dev.toolplane/receipt'] as InvocationReceipt;
      expect(receipt).toMatchObject({ toolId: dynamicText.resourceId, sideEffectClass: 'READ' });
      expect(verifyReceipt(receipt, platform.receiptKeys)).toMatchObject({ valid: true });

      const own = await client.readResource('demo://resource/dynamic/text/3');
      expect(own.contents[0]).toMatchObject({ uri: 'demo://resource/dynamic/text/3', text: expect.stringContaining('Resource 3:') as unknown });
      // A URI no bound template expands to is not found, naming the URI.
      await expect(client.readResource('demo://resource/dynamic/text/3/more')).rejects.toMatchObject({
        message: expect.stringContaining('no resource demo://resource/dynamic/text/3/more is offered to this agent') as unknown,
      });
    } finally {
      await client.close();
    }
  });
});
