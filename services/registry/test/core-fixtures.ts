// Builders of servers, snapshots and descriptors for the pure core's unit tests.
import { sha256Hex, type McpCapabilitiesSnapshot, type McpDiscoveredTool, type McpServer, type ToolDescriptor } from '@toolplane/contracts';
import type { BindingDeclaration } from '../src/core/descriptor-aggregate.js';
import type { ServerRegistration } from '../src/core/server-aggregate.js';

export const at = '2026-11-29T12:00:00.000Z';
export const later = (ms: number, from: string = at): string => new Date(Date.parse(from) + ms).toISOString();
export const scope = { tenant: 'acme', workspace: 'dev' };
export const serverId = '0b9f6a3e-2f4c-4b7a-9c1d-5e6f7a8b9c0d';
export const hash = (seed: string): string => sha256Hex(seed);

export function stdioRegistration(overrides: Partial<ServerRegistration> = {}): ServerRegistration {
  return {
    serverId,
    ...scope,
    name: 'everything',
    direction: 'Consumed',
    transport: 'Stdio',
    command: { executable: 'mcp-server-everything', args: ['stdio'] },
    authentication: 'None',
    governancePolicyRef: 'default',
    registeredBy: 'user:op',
    ...overrides,
  };
}

export function httpRegistration(url: string, overrides: Partial<ServerRegistration> = {}): ServerRegistration {
  return {
    serverId,
    ...scope,
    name: 'remote',
    direction: 'Consumed',
    transport: 'StreamableHttp',
    endpointUrl: url,
    authentication: 'None',
    governancePolicyRef: 'default',
    registeredBy: 'user:op',
    ...overrides,
  };
}

export function tool(name: string, definitionSeed = name, overrides: Partial<McpDiscoveredTool> = {}): McpDiscoveredTool {
  return {
    name,
    description: `${name} tool`,
    inputSchemaJson: JSON.stringify({ type: 'object', properties: { message: { type: 'string' }, command: { type: 'string' } } }),
    definitionHash: hash(definitionSeed),
    ...overrides,
  };
}

export function snapshot(tools: McpDiscoveredTool[], seed = 'snap'): McpCapabilitiesSnapshot {
  return {
    protocolVersion: '2025-06-18',
    serverInfo: { name: 'everything', version: '1.0.0' },
    tools,
    resources: [{ uri: 'test://static/resource/1', name: 'Resource 1' }],
    prompts: [{ name: 'simple-prompt' }],
    snapshotHash: hash(`${seed}:${tools.map((t) => t.definitionHash).join(',')}`),
    discoveredAt: at,
  };
}

export function server(state: McpServer['state'], overrides: Partial<McpServer> = {}): McpServer {
  return {
    ...stdioRegistration(),
    state,
    health: { consecutiveFailures: 0 },
    registeredAt: at,
    updatedAt: at,
    version: 3,
    ...(state === 'Registered' ? {} : { capabilities: snapshot([tool('echo'), tool('add')]), protocolVersion: '2025-06-18' }),
    ...overrides,
  };
}

export function declaration(overrides: Partial<BindingDeclaration> = {}): BindingDeclaration {
  return {
    sideEffectClass: 'READ',
    riskClass: 'LOW',
    idempotency: 'NATURAL',
    permissions: ['echo:use'],
    roles: [],
    secretDependencies: [],
    timeoutMs: 10_000,
    rateLimits: [],
    auditRequirements: { argumentsHash: true, resultHash: true },
    ...overrides,
  };
}

export function descriptor(overrides: Partial<ToolDescriptor> = {}): ToolDescriptor {
  return {
    ...scope,
    toolId: 'everything.echo',
    toolVersion: '1',
    kind: 'Mcp',
    providerToolName: 'echo',
    description: 'echo tool',
    inputSchemaJson: '{"type":"object"}',
    definitionHash: hash('echo'),
    sideEffectClass: 'READ',
    riskClass: 'LOW',
    idempotency: 'NATURAL',
    authorization: { permissions: [], roles: [] },
    secretDependencies: [],
    timeoutMs: 10_000,
    retryPolicy: { maxAttempts: 3, initialBackoffMs: 200, maxBackoffMs: 5000 },
    rateLimits: [],
    auditRequirements: { argumentsHash: true, resultHash: true },
    sandboxKind: 'Process',
    mcpServerId: serverId,
    healthy: true,
    active: true,
    boundBy: 'user:op',
    boundAt: at,
    updatedAt: at,
    version: 1,
    ...overrides,
  };
}
