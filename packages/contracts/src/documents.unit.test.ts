import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { hash, ids, receipt, scope } from '../test/fixtures.js';
import { Approval } from './approval-document.js';
import { McpServer } from './mcp-server-document.js';
import { ToolDescriptor } from './tool-descriptor-document.js';
import { ToolInvocation } from './tool-invocation-document.js';

const at = '2026-11-29T17:00:00.000Z';
const inputSchema = JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { 'a.b': { type: 'string' } } });

const server: McpServer = {
  serverId: ids.server,
  ...scope,
  name: 'everything',
  direction: 'Consumed',
  transport: 'Stdio',
  command: { executable: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] },
  authentication: 'None',
  governancePolicyRef: 'default',
  state: 'Verified',
  protocolVersion: '2025-06-18',
  lastHandshakeAt: at,
  capabilities: {
    protocolVersion: '2025-06-18',
    serverInfo: { name: 'everything', version: '1.0.0' },
    tools: [{ name: 'echo', description: 'Echoes', inputSchemaJson: inputSchema, definitionHash: hash('d') }],
    resources: [{ uri: 'test://static/resource/1', name: 'Resource 1' }],
    prompts: [{ name: 'simple_prompt' }],
    snapshotHash: hash('c'),
    discoveredAt: at,
  },
  health: { consecutiveFailures: 0 },
  registeredBy: 'user:bob',
  registeredAt: at,
  updatedAt: at,
  version: 2,
};

const descriptor: ToolDescriptor = {
  ...scope,
  toolId: 'everything.echo',
  toolVersion: '1',
  kind: 'Mcp',
  providerToolName: 'echo',
  description: 'Echoes',
  inputSchemaJson: inputSchema,
  definitionHash: hash('d'),
  sideEffectClass: 'READ',
  riskClass: 'LOW',
  idempotency: 'NATURAL',
  authorization: { permissions: ['echo:use'], roles: [] },
  secretDependencies: [],
  timeoutMs: 10_000,
  retryPolicy: { maxAttempts: 3, initialBackoffMs: 100, maxBackoffMs: 2000 },
  rateLimits: [{ per: 'AGENT', limit: 60, windowMs: 60_000 }],
  auditRequirements: { argumentsHash: true, resultHash: true },
  sandboxKind: 'Process',
  mcpServerId: ids.server,
  healthy: true,
  active: true,
  boundBy: 'user:bob',
  boundAt: at,
  updatedAt: at,
  version: 1,
};

const invocation: ToolInvocation = {
  invocationId: ids.invocation,
  ...scope,
  toolCallId: 'call_AbC123',
  attempt: 1,
  idempotencyKey: 'key-1',
  idempotencyKeyDerived: false,
  requestHash: hash('a'),
  principal: 'user:alice@example.com',
  toolId: 'github.create_issue',
  toolVersion: '1.0.0',
  correlationId: 'run-42',
  argumentsJson: '{"$where":"1","title":"Hi"}',
  secretLeaseIds: [],
  state: 'Observed',
  eventSequence: 4,
  receivedAt: at,
  deadline: '2026-11-29T17:01:00.000Z',
  resultJson: '{"structuredContent":{"a.b":1}}',
  resultHash: hash('b'),
  receipt,
  updatedAt: at,
  version: 5,
};

const approval: Approval = {
  approvalId: ids.approval,
  ...scope,
  invocationId: ids.invocation,
  toolCallId: 'call_AbC123',
  toolId: 'github.create_issue',
  toolVersion: '1.0.0',
  requestHash: hash('a'),
  sideEffectClass: 'WRITE',
  riskClass: 'MEDIUM',
  summary: 'Create an issue',
  requestedBy: 'user:alice@example.com',
  approvers: { roles: ['approver'], principals: [] },
  state: 'Pending',
  requestedAt: at,
  expiresAt: '2026-11-29T18:00:00.000Z',
  correlationId: 'run-42',
  updatedAt: at,
  version: 1,
};

const documents = { McpServer: [McpServer, server], ToolDescriptor: [ToolDescriptor, descriptor], ToolInvocation: [ToolInvocation, invocation], Approval: [Approval, approval] } as const;

describe('stored documents', () => {
  it.each(Object.entries(documents))('%s parses a stored document and strips the store’s own keys', (_name, [schema, document]) => {
    expect((schema as z.ZodType).parse({ _id: 'x', ...document })).toEqual(document);
  });

  it.each(Object.entries(documents))('%s has no free-form map, so no stored key can start with $ or contain a dot', (_name, [schema]) => {
    const maps: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (Array.isArray(node)) return node.forEach((child, i) => walk(child, `${path}[${i}]`));
      if (typeof node !== 'object' || node === null) return;
      const jsonSchema = node as Record<string, unknown>;
      if ('propertyNames' in jsonSchema || typeof jsonSchema.additionalProperties === 'object') maps.push(path);
      for (const [key, child] of Object.entries(jsonSchema)) walk(child, `${path}.${key}`);
    };
    walk(z.toJSONSchema(schema as z.ZodType, { io: 'input' }), '$');
    expect(maps).toEqual([]);
  });

  it('require the transport’s own reachability fields on a server', () => {
    const { command: _command, ...noCommand } = server;
    expect(McpServer.safeParse(noCommand).success).toBe(false);
    expect(McpServer.safeParse({ ...noCommand, transport: 'StreamableHttp' }).success).toBe(false);
    expect(McpServer.safeParse({ ...noCommand, transport: 'StreamableHttp', endpointUrl: 'https://mcp.example.com/mcp' }).success).toBe(true);
  });

  it('reject unknown states and classes', () => {
    expect(ToolInvocation.safeParse({ ...invocation, state: 'Done' }).success).toBe(false);
    expect(ToolDescriptor.safeParse({ ...descriptor, sideEffectClass: 'read' }).success).toBe(false);
    expect(Approval.safeParse({ ...approval, state: 'Approved' }).success).toBe(false);
  });
});
