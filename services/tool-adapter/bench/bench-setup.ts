// What the governed-invocation benchmark stands up besides its servers (`@toolplane/testing/bench`): the tool
// adapter as a child process, and what a call needs: the descriptor in the registry's KV read model, a stand-in
// registry `getServer` responder, the agent profile and tenant policy (written through the adapter's own commands, as
// an operator would), and signed context and operator tokens.
import path from 'node:path';
import { POLICY_ADMIN_ROLE, ToolDescriptor, type McpServer, type RateLimitRule, type Scope } from '@toolplane/contracts';
import { generateSigningKeyPair } from '@toolplane/auth';
import { openKv, type Messaging, type ServeHandle } from '@toolplane/messaging';
import { testSandboxProfile } from '@toolplane/mcp/testing';
import { echoServerPath, startServiceProcess, type ServiceProcess } from '@toolplane/testing/bench';
import { defaultTenantPolicy, descriptorBucket } from '../src/mod.js';
import {
  agentContextToken,
  operatorClaims,
  operatorToken,
  putDescriptor,
  receiptSigningKey,
  serveStandInRegistry,
  stdioServerDocument,
  testDescriptor,
} from '../src/testing.js';
import { putAgentProfile, putTenantPolicy } from './adapter-commands.js';

const repoRoot = path.resolve(import.meta.dirname, '../../..');

/** A tool adapter running in a child process. */
export type AdapterProcess = ServiceProcess;

/** The keys the adapter needs: the tenant's token key it trusts and its receipt signing key; tokens signed with the former. */
export interface BenchKeys {
  readonly trustedKeys: string;
  readonly signingKey: string;
  readonly contextToken: (scope: Scope, agentId: string) => Promise<string>;
  /** An operator token of the scope's workspace with the policy-admin role (writes profiles and policies). */
  readonly adminToken: (scope: Scope) => Promise<string>;
}

/** A fresh agent token key pair and receipt signing key for `tenant`. */
export async function benchKeys(tenant: string): Promise<BenchKeys> {
  const agentKey = await generateSigningKeyPair('bench-agent-1');
  return {
    trustedKeys: JSON.stringify({ [tenant]: [agentKey.publicJwk] }),
    signingKey: receiptSigningKey().setting,
    // One token for the whole run, as an agent runtime holds one per run.
    contextToken: (scope, agentId) => agentContextToken(agentKey, scope, { agentId, principal: 'user:bench@bench.example', agentRevision: '1' }, '2h'),
    adminToken: (scope) => operatorToken(agentKey, operatorClaims(scope, [POLICY_ADMIN_ROLE], 'user:bench-admin@bench.example'), '2h'),
  };
}

/** Starts the built adapter (`dist/main.js`, run `tsc -b` first) with `env` and waits until it is ready. */
export function startAdapterProcess(env: Record<string, string>, options: { readonly cpuProfileDir?: string | undefined } = {}): Promise<AdapterProcess> {
  return startServiceProcess({ name: 'adapter', entry: path.join(repoRoot, 'services/tool-adapter/dist/main.js'), env, cpuProfileDir: options.cpuProfileDir });
}

/** The benchmark's tool, its server and the agent allowed to call it, in one scope. */
export interface BenchTool {
  readonly scope: Scope;
  readonly agentId: string;
  readonly toolId: string;
  readonly serverId: string;
}

/**
 * Writes what a governed call of `tool` needs through the adapter's commands (so the adapter must be running): the
 * agent's profile and the tenant's policy (the default policy, which lets READ calls through, plus `rateLimit`), and
 * the descriptor in the registry's KV read model.
 */
export async function provisionTool(messaging: Messaging, tool: BenchTool, adminToken: string, rateLimit: RateLimitRule): Promise<ToolDescriptor> {
  const { scope, agentId, toolId, serverId } = tool;
  await putAgentProfile(messaging, scope, { agentId, allowedTools: ['bench.*'], deniedTools: [], maxRiskClass: 'LOW', permissions: [] }, adminToken);
  const { tenant: _tenant, updatedBy: _by, updatedAt: _at, version: _version, ...policy } = defaultTenantPolicy(scope.tenant, new Date().toISOString());
  await putTenantPolicy(messaging, scope, { ...policy, rateLimits: [rateLimit] }, adminToken);
  const descriptor = testDescriptor(
    { scope, toolId, providerToolName: 'echo', mcpServerId: serverId, inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
    { description: 'The benchmark echo.', definitionHash: 'b'.repeat(64), retryPolicy: { maxAttempts: 2, initialBackoffMs: 50, maxBackoffMs: 200 } },
  );
  return putDescriptor(await openKv(messaging, descriptorBucket, ToolDescriptor), descriptor);
}

/** The MCP server document of the echo fixture, counting into `countFile` (writable in its sandbox). */
export function echoServerDocument(tool: BenchTool, countFile: string): McpServer {
  return stdioServerDocument(
    { serverId: tool.serverId, scope: tool.scope, name: 'bench-echo' },
    { args: [echoServerPath], env: [{ name: 'COUNT_FILE', value: countFile }], sandbox: testSandboxProfile([countFile]) },
  );
}

/** Stands in for the registry's `getServer` (the adapter caches the answer for 30 s). */
export function serveRegistryStandIn(messaging: Messaging, server: McpServer): Promise<ServeHandle> {
  return serveStandInRegistry(messaging, {
    queue: 'bench-registry',
    serverFor: (serverId) => {
      if (serverId !== server.serverId) throw new Error(`unknown server ${serverId}`);
      return server;
    },
  });
}
