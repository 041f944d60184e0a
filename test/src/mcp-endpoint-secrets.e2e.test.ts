// A leased credential does not come back through the governed MCP endpoint, at either protocol revision it serves: a
// 1.x SDK client at 2025-11-25 and the SDK v2 client negotiating 2026-07-28 call the secret-echo fixture's
// reveal_env_resource, which puts the value of its ECHO_TOKEN (leased from a secret-broker connection) verbatim and
// base64-encoded inside an embedded text resource. The pipeline services and the endpoint run as processes over a
// private NATS and FerretDB; the connection is created with the CLI, as an operator does, and the adapter leases it.
//
// What is stood in, and why: the registry cannot yet discover a server whose settings come from a connection (it holds
// no lease to start it with). So the server is registered with the CLI (`--env-connection ECHO_TOKEN=echo-token`), and
// then the registry process is stopped and its getServer answered with that very document made Active, while the
// tool's descriptor is written into the registry's KV read model as discovery and `tools bind` would have written it.
// The registry must be stopped, not shadowed: both would answer getServer, and the first answer wins.
/* eslint-disable no-restricted-imports -- clients of the endpoint as any client is: the SDK v2's own Client at 2026-07-28 and the 1.x SDK's at 2025-11-25 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
/* eslint-enable no-restricted-imports */
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpServer, ToolDescriptor } from '@toolplane/contracts';
import { FixtureServer, fixtureServerPath, sandboxScratchDir } from '@toolplane/mcp/testing';
import { openKv, type ServeHandle } from '@toolplane/messaging';
import { testScope } from '@toolplane/testing';
import { descriptorBucket } from '@toolplane/tool-adapter';
import { putDescriptor, serveStandInRegistry, testDescriptor } from '@toolplane/tool-adapter/testing';
import { agent, e2eTenantPolicy, startPlatform, waitForTools, type Platform } from './platform-harness.js';
import { startHttpProcess, type HttpProcess } from './http-process.js';

const infra = testScope('mcp_secrets');
let platform: Platform;
let endpoint: HttpProcess;
let registry: ServeHandle | undefined;
let secretDir: string | undefined;

const toolId = 'vault.reveal_env_resource';
const listedName = 'vault__reveal_env_resource';
/** A bearer token with characters that base64 and URL encoding change, so each encoded form is distinct. */
const secret = `tp-canary/${randomBytes(12).toString('hex')}+k=v&x`;
/** Every form of the secret that must not leave the platform. */
const forms = [secret, Buffer.from(secret).toString('base64'), Buffer.from(secret).toString('base64url'), encodeURIComponent(secret)];

interface CallResult {
  readonly content: readonly Record<string, unknown>[];
  readonly isError?: boolean | undefined;
  readonly _meta?: Record<string, unknown> | undefined;
}

/** One client of the endpoint, whichever SDK and revision it speaks. */
interface EndpointClient {
  readonly protocolVersion: string | undefined;
  callTool(name: string, args: Record<string, unknown>): Promise<CallResult>;
  close(): Promise<void>;
}

const endpointUrl = () => new URL(`${endpoint.url}/mcp/${platform.scope.tenant}/${platform.scope.workspace}`);

async function legacyClient(): Promise<EndpointClient> {
  const client = new LegacyClient({ name: 'sdk-1.x', version: '1.0.0' });
  const transport = new LegacyTransport(endpointUrl(), { requestInit: { headers: { Authorization: `Bearer ${await platform.agentToken()}` } } });
  await client.connect(transport);
  return {
    protocolVersion: transport.protocolVersion,
    callTool: async (name, args) => (await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 })) as CallResult,
    close: () => client.close(),
  };
}

async function modernClient(): Promise<EndpointClient> {
  const client = new ModernClient({ name: 'sdk-2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new ModernTransport(endpointUrl(), { requestInit: { headers: { Authorization: `Bearer ${await platform.agentToken()}` } } }));
  return {
    protocolVersion: client.getNegotiatedProtocolVersion(),
    callTool: (name, args) => client.callTool({ name, arguments: args }, { timeout: 60_000 }),
    close: () => client.close(),
  };
}

beforeAll(async () => {
  platform = await startPlatform(infra, 'mcpsecrets');
  const countFile = platform.countFile('vault');
  const registered = await platform.toolplaneJson<{ server: unknown }>(
    'servers',
    'register',
    '--name',
    'vault',
    '--stdio',
    `"${process.execPath}" "${fixtureServerPath(FixtureServer.secretEcho)}"`,
    '--env',
    `COUNT_FILE=${countFile}`,
    '--env-connection',
    'ECHO_TOKEN=echo-token',
    '--sandbox-writable',
    path.dirname(countFile),
  );
  const server = McpServer.parse(registered.server);
  expect(server.command?.env).toContainEqual({ name: 'ECHO_TOKEN', connectionRef: 'echo-token' });

  // Stand-ins for what discovery and `tools bind` would do (see the top of the file).
  await platform.kill('registry');
  registry = await serveStandInRegistry(platform.messaging, {
    queue: `test-registry-${infra.prefix}`,
    serverFor: (serverId) => {
      if (serverId !== server.serverId) throw new Error(`unknown server ${serverId}`);
      return { ...server, state: 'Active' };
    },
  });
  const inputSchema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
  await putDescriptor(
    await openKv(platform.messaging, descriptorBucket, ToolDescriptor),
    testDescriptor({ scope: platform.scope, toolId, providerToolName: 'reveal_env_resource', mcpServerId: server.serverId, inputSchema }, { secretDependencies: ['echo-token'] }),
  );

  // The connection as an operator creates it: the secret from a file, never from a flag.
  secretDir = await sandboxScratchDir('e2e-mcpsecrets-secret-');
  const secretFile = path.join(secretDir, 'echo-token');
  await writeFile(secretFile, secret, { mode: 0o600 });
  await platform.toolplaneJson('connections', 'create', '--name', 'echo-token', '--kind', 'bearer', '--allow', toolId, '--secret-file', secretFile);

  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: [toolId], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
  await platform.putTenantPolicy(e2eTenantPolicy({ gateWrites: false }));
  await waitForTools(platform, [toolId]);
  endpoint = await startHttpProcess('mcp-endpoint', platform, () => ({ MCP_ENDPOINT_CALL_TIMEOUT_MS: '60000' }));
}, 300_000);

afterAll(async () => {
  if (endpoint !== undefined && endpoint.service.child.exitCode === null) endpoint.service.child.kill('SIGTERM');
  await registry?.stop();
  await platform?.stop();
  if (secretDir !== undefined) await rm(secretDir, { recursive: true, force: true });
});

const revisions = [
  { revision: '2025-11-25', connect: legacyClient },
  { revision: '2026-07-28', connect: modernClient },
] as const;

describe.each(revisions)('a leased secret through the endpoint at $revision', ({ revision, connect }) => {
  it('is stripped from the embedded text resource the tool echoes it in, and appears nowhere in the answer', { timeout: 90_000 }, async () => {
    const client = await connect();
    try {
      expect(client.protocolVersion).toBe(revision);
      const before = await platform.executions('vault', 'reveal_env_resource');
      const result = await client.callTool(listedName, { name: 'ECHO_TOKEN' });
      expect(result.isError ?? false).toBe(false);
      // The tool ran, once, for this call.
      expect(await platform.executions('vault', 'reveal_env_resource')).toBe(before + 1);

      const resource = result.content.find((block) => block.type === 'resource') as { resource?: { uri?: string; mimeType?: string; text?: string } } | undefined;
      expect(resource?.resource).toMatchObject({ uri: 'env://ECHO_TOKEN', mimeType: 'text/plain' });
      const text = resource?.resource?.text ?? '';
      // The server was given exactly the secret (its length, which carries no secret, comes back intact), and the
      // sanitizer put its marker where the value and its base64 form were (a base64 match takes its neighbouring
      // base64-alphabet characters with it, as they carry bits of the secret: here the `=` of `base64=`).
      expect(text).toContain(`length=${secret.length}`);
      expect(text).toMatch(/^value=\[REDACTED\] base64=?\[REDACTED\] length=\d+$/);
      const everything = JSON.stringify(result);
      for (const form of forms) expect(everything).not.toContain(form);
    } finally {
      await client.close();
    }
  });
});
