// Completions end to end: an operator binds @modelcontextprotocol/server-everything's `completable-prompt` as a skill
// through the CLI; an agent asks for values of its arguments through the same pipeline as fetching it, over the SDK
// (`complete`) and over the governed MCP endpoint (`completion/complete`, the `completions` capability), at both
// protocol revisions, with a receipt naming the operation and lifecycle events; a prompt the agent is not offered is
// invalid params. The pipeline services and the endpoint run as processes over a private NATS and FerretDB.
/* eslint-disable no-restricted-imports -- clients of the endpoint as any client is: the SDK v2's own Client at 2026-07-28 and the 1.x SDK's at 2025-11-25 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
/* eslint-enable no-restricted-imports */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completionValues, createToolplaneClient, type ToolplaneClient } from '@toolplane/client';
import { verifyReceipt, type InvocationReceipt } from '@toolplane/contracts';
import { realServerPath } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { agent, e2eTenantPolicy, endingOf, registerServer, startPlatform, waitFor, waitForTools, type Platform } from './platform-harness.js';
import { startHttpProcess, type HttpProcess } from './http-process.js';

const infra = testScope('completions');
let platform: Platform;
let client: ToolplaneClient;
let endpoint: HttpProcess;

const profile = { agentId: agent.agentId, allowedTools: ['everything.**'], deniedTools: [], maxRiskClass: 'HIGH' as const, permissions: [] };

/** The answer to completion/complete, whichever SDK asked. */
interface Completed {
  readonly completion: { readonly values: readonly string[]; readonly total?: number; readonly hasMore?: boolean };
  readonly _meta?: Record<string, unknown>;
}

/** One client of the endpoint, whichever SDK and revision it speaks. */
interface EndpointClient {
  readonly protocolVersion: string | undefined;
  readonly completions: unknown;
  complete(ref: { type: 'ref/prompt'; name: string }, argument: { name: string; value: string }, context?: Record<string, string>): Promise<Completed>;
  close(): Promise<void>;
}

const endpointUrl = () => new URL(`${endpoint.url}/mcp/${platform.scope.tenant}/${platform.scope.workspace}`);

async function legacyClient(): Promise<EndpointClient> {
  const sdk = new LegacyClient({ name: 'sdk-1.x', version: '1.0.0' });
  const transport = new LegacyTransport(endpointUrl(), { requestInit: { headers: { Authorization: `Bearer ${await platform.agentToken()}` } } });
  await sdk.connect(transport);
  return {
    protocolVersion: transport.protocolVersion,
    completions: sdk.getServerCapabilities()?.completions,
    complete: (ref, argument, context) => sdk.complete({ ref, argument, ...(context === undefined ? {} : { context: { arguments: context } }) }, { timeout: 60_000 }),
    close: () => sdk.close(),
  };
}

async function modernClient(): Promise<EndpointClient> {
  const sdk = new ModernClient({ name: 'sdk-2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await sdk.connect(new ModernTransport(endpointUrl(), { requestInit: { headers: { Authorization: `Bearer ${await platform.agentToken()}` } } }));
  return {
    protocolVersion: sdk.getNegotiatedProtocolVersion(),
    completions: sdk.getServerCapabilities()?.completions,
    complete: (ref, argument, context) => sdk.complete({ ref, argument, ...(context === undefined ? {} : { context: { arguments: context } }) }, { timeout: 60_000 }),
    close: () => sdk.close(),
  };
}

beforeAll(async () => {
  platform = await startPlatform(infra, 'completions');
  await platform.putTenantPolicy(e2eTenantPolicy({ gateWrites: false }));
  await platform.putAgentProfile(profile);
  const everythingId = await registerServer(platform, 'everything', [process.execPath, realServerPath('everything'), 'stdio'], {}, []);
  await platform.toolplaneJson('prompts', 'bind', everythingId, 'completable-prompt', '--prompt-id', 'everything.team', '--target', 'skill:team-management');
  await waitForTools(platform, ['everything.team']);
  client = await createToolplaneClient({ messaging: platform.messaging, scope: platform.scope, contextToken: await platform.agentToken() });
  endpoint = await startHttpProcess('mcp-endpoint', platform, () => ({ MCP_ENDPOINT_CALL_TIMEOUT_MS: '30000' }));
}, 300_000);

afterAll(async () => {
  await endpoint?.stop();
  await client?.close();
  await platform?.stop();
});

describe('a completion of a bound prompt', () => {
  it('is asked through the pipeline over the SDK: the values, a signed receipt naming the operation, lifecycle events', { timeout: 60_000 }, async () => {
    const events = await platform.recordEvents();
    try {
      const result = await client.complete('everything.team', { name: 'department', value: 'E' }, { idempotencyKey: 'complete-department-1' });
      expect(completionValues(result).values).toEqual(['Engineering']);
      expect(result.receipt).toMatchObject({ state: 'Observed', toolId: 'everything.team', operation: 'completion', sideEffectClass: 'READ' });
      expect(verifyReceipt(result.receipt, platform.receiptKeys)).toMatchObject({ valid: true });
      const context = await client.complete('everything.team', { name: 'name', value: '' }, { context: { department: 'Marketing' }, idempotencyKey: 'complete-name-1' });
      expect(completionValues(context).values).toEqual(['Grace', 'Henry', 'Iris']);
      // An argument the prompt does not have is refused by the pipeline, recorded like any denial.
      expect(endingOf(await client.complete('everything.team', { name: 'team', value: '' }, { idempotencyKey: 'complete-team-1' }))).toMatchObject({ status: 'DENIED', code: 'INVALID_ARGUMENT' });

      const seen = await waitFor('the completion’s terminal event', () => {
        const mine = events.events.filter((event) => 'invocationId' in event.metadata && event.metadata.invocationId === result.receipt.invocationId);
        return mine.some((event) => event.type === 'ToolCallCompleted') ? mine : undefined;
      });
      expect(seen.map((event) => event.type)).toEqual(expect.arrayContaining(['InvocationReceived', 'ToolCallStarted', 'ToolCallCompleted']));
      expect(seen.find((event) => event.type === 'InvocationReceived')?.data).toMatchObject({ operation: 'completion' });
    } finally {
      events.stop();
    }
  });

  const revisions = [
    { revision: '2025-11-25', connect: legacyClient },
    { revision: '2026-07-28', connect: modernClient },
  ] as const;

  describe.each(revisions)('through the endpoint at $revision', ({ revision, connect }) => {
    it('declares completions and answers completion/complete of the prompt by its listed name, with the receipt', { timeout: 60_000 }, async () => {
      const mcp = await connect();
      try {
        expect(mcp.protocolVersion).toBe(revision);
        expect(mcp.completions).toEqual({});
        const answer = await mcp.complete({ type: 'ref/prompt', name: 'everything.team' }, { name: 'department', value: 'S' });
        expect(answer.completion.values).toEqual(['Sales', 'Support']);
        const receipt = answer._meta?.['dev.toolplane/receipt'] as InvocationReceipt;
        expect(receipt).toMatchObject({ toolId: 'everything.team', operation: 'completion', state: 'Observed' });
        expect(verifyReceipt(receipt, platform.receiptKeys)).toMatchObject({ valid: true });
        const named = await mcp.complete({ type: 'ref/prompt', name: 'everything.team' }, { name: 'name', value: 'J' }, { department: 'Support' });
        expect(named.completion.values).toEqual(['John']);
      } finally {
        await mcp.close();
      }
    });

    it('answers invalid params for a prompt the agent is not offered, and for an argument the prompt lacks', { timeout: 60_000 }, async () => {
      const mcp = await connect();
      try {
        await expect(mcp.complete({ type: 'ref/prompt', name: 'everything.nothing' }, { name: 'x', value: '' })).rejects.toMatchObject({
          code: -32602,
          message: expect.stringContaining('no prompt everything.nothing is offered to this agent') as unknown,
        });
        await expect(mcp.complete({ type: 'ref/prompt', name: 'completable-prompt' }, { name: 'department', value: '' })).rejects.toMatchObject({ code: -32602 });
        await expect(mcp.complete({ type: 'ref/prompt', name: 'everything.team' }, { name: 'team', value: '' })).rejects.toMatchObject({
          code: -32602,
          message: expect.stringContaining('has no argument "team" to complete') as unknown,
        });
      } finally {
        await mcp.close();
      }
    });
  });

  it('is denied to an agent whose profile no longer allows the prompt: invalid params through the endpoint', { timeout: 60_000 }, async () => {
    await platform.putAgentProfile({ ...profile, allowedTools: ['nothing.**'] });
    try {
      const refused = await waitFor('the profile to reach the adapter', async () => {
        const result = await client.complete('everything.team', { name: 'department', value: '' }, { idempotencyKey: `complete-refused-${Date.now()}` });
        return result.status === 'DENIED' ? result : undefined;
      });
      expect(endingOf(refused)).toMatchObject({ status: 'DENIED', code: 'AUTHORIZATION_DENIED' });
      const mcp = await modernClient();
      try {
        await expect(mcp.complete({ type: 'ref/prompt', name: 'everything.team' }, { name: 'department', value: '' })).rejects.toMatchObject({ code: -32602 });
      } finally {
        await mcp.close();
      }
    } finally {
      await platform.putAgentProfile(profile);
    }
  });
});
