import { describe, expect, it } from 'vitest';
import { McpServer, type LeasedCredential } from '@toolplane/contracts';
import { mcpTargetKey } from '@toolplane/mcp';
import { SecretRedactor } from './secret-redaction.js';
import { authorizationHeader, credentialValue, planConnections, secretValuesOf, targetOf } from './credential-injection.js';

const now = '2026-01-01T00:00:00.000Z';
const base = {
  serverId: '00000000-0000-4000-8000-000000000001',
  tenant: 'acme',
  workspace: 'main',
  name: 'github',
  direction: 'Consumed',
  authentication: 'None',
  governancePolicyRef: 'default',
  state: 'Active',
  health: { consecutiveFailures: 0 },
  registeredBy: 'user:admin',
  registeredAt: now,
  updatedAt: now,
  version: 1,
} as const;

const stdio = (env: NonNullable<McpServer['command']>['env'], extra: Partial<McpServer> = {}) =>
  McpServer.parse({ ...base, transport: 'Stdio', command: { executable: '/usr/bin/node', args: ['server.js'], env }, ...extra });
const http = (headers: McpServer['headers'], extra: Partial<McpServer> = {}) => McpServer.parse({ ...base, transport: 'StreamableHttp', endpointUrl: 'https://mcp.example/mcp', headers, ...extra });

describe('planConnections', () => {
  it('leases each connection once: the server settings’ connections, then the tool’s own dependencies', () => {
    const server = stdio([
      { name: 'GITHUB_TOKEN', connectionRef: 'github' },
      { name: 'LOG_LEVEL', value: 'debug' },
      { name: 'GH_TOKEN', connectionRef: 'github' },
      { name: 'JIRA_KEY', connectionRef: 'jira' },
    ]);
    expect(planConnections(['jira'], server)).toEqual({ ok: true, connectionRefs: ['github', 'jira'] });
    expect(planConnections([], stdio([{ name: 'PLAIN', value: 'x' }]))).toEqual({ ok: true, connectionRefs: [] });
  });

  it('refuses a dependency no server setting names, since it could not reach the tool', () => {
    const plan = planConnections(['slack'], stdio([{ name: 'GITHUB_TOKEN', connectionRef: 'github' }]));
    expect(plan).toMatchObject({ ok: false, failure: { code: 'CONFLICT', retryable: false } });
    expect(!plan.ok && plan.failure.message).toContain('slack');
    expect(planConnections(['slack'], undefined)).toMatchObject({ ok: false });
    expect(planConnections([], undefined)).toEqual({ ok: true, connectionRefs: [] });
  });

  it('takes the server’s own connection of an HTTP server, and refuses one on a stdio server', () => {
    expect(planConnections(['api'], http([{ name: 'X-Api-Key', connectionRef: 'api' }], { connectionRef: 'oauth' }))).toEqual({ ok: true, connectionRefs: ['api', 'oauth'] });
    expect(planConnections(['oauth'], http([], { connectionRef: 'oauth' }))).toEqual({ ok: true, connectionRefs: ['oauth'] });
    expect(planConnections([], stdio([], { connectionRef: 'oauth' }))).toMatchObject({ ok: false, failure: { code: 'CONFLICT' } });
  });
});

describe('targetOf', () => {
  const bearer: LeasedCredential = { kind: 'bearer', token: 'tok-1' };
  const basic: LeasedCredential = { kind: 'basic', username: 'ci', password: 'pa:ss' };
  const apiKey: LeasedCredential = { kind: 'api-key', apiKey: 'key-9' };
  const oauth: LeasedCredential = { kind: 'oauth2-client-credentials', accessToken: 'at-5', tokenType: 'Bearer', expiresAt: now };

  it('gives a stdio server exactly its settings as environment, leased values in the named variables', () => {
    const target = targetOf(stdio([{ name: 'GITHUB_TOKEN', connectionRef: 'github' }, { name: 'MODE', value: 'ro' }]), new Map([['github', bearer]]));
    expect(target).toEqual({ transport: 'stdio', command: '/usr/bin/node', args: ['server.js'], env: { GITHUB_TOKEN: 'tok-1', MODE: 'ro' } });
  });

  it('puts an HTTP server’s leased settings in the named headers and its own connection in Authorization', () => {
    expect(targetOf(http([{ name: 'X-Api-Key', connectionRef: 'api' }, { name: 'Authorization', value: 'plain' }], { connectionRef: 'oauth' }), new Map<string, LeasedCredential>([['api', apiKey], ['oauth', oauth]]))).toEqual({
      transport: 'http',
      url: 'https://mcp.example/mcp',
      headers: { 'X-Api-Key': 'key-9', Authorization: 'Bearer at-5' },
    });
    expect(targetOf(http([], { connectionRef: 'ci' }), new Map([['ci', basic]]))).toMatchObject({ headers: { Authorization: `Basic ${Buffer.from('ci:pa:ss').toString('base64')}` } });
  });

  it('fails when a connection the settings name was not leased', () => {
    expect(() => targetOf(stdio([{ name: 'GITHUB_TOKEN', connectionRef: 'github' }]), new Map())).toThrow(/github/);
  });

  it('gives a rotated credential another pool key, so it never shares a session with the old one', () => {
    const server = stdio([{ name: 'GITHUB_TOKEN', connectionRef: 'github' }]);
    const before = mcpTargetKey(targetOf(server, new Map([['github', bearer]])));
    const after = mcpTargetKey(targetOf(server, new Map([['github', { kind: 'bearer', token: 'tok-2' } as const]])));
    expect(after).not.toBe(before);
    expect(mcpTargetKey(targetOf(server, new Map([['github', bearer]])))).toBe(before);
    expect(before).not.toContain('tok-1');
  });
});

describe('credential values', () => {
  it('uses the credential itself for a setting, and the scheme of its kind for Authorization', () => {
    expect(credentialValue({ kind: 'api-key', apiKey: 'k' })).toBe('k');
    expect(credentialValue({ kind: 'basic', username: 'u', password: 'p' })).toBe('u:p');
    expect(authorizationHeader({ kind: 'bearer', token: 't' })).toBe('Bearer t');
    expect(authorizationHeader({ kind: 'api-key', apiKey: 'k' })).toBe('Bearer k');
  });

  it('scrubs every leased secret, including a Basic header built from it', () => {
    const secrets = secretValuesOf([
      { kind: 'basic', username: 'ci-user', password: 'hunter2-very-secret' },
      { kind: 'bearer', token: 'tp-token-abcdef' },
    ]);
    expect(secrets).toEqual(['ci-user:hunter2-very-secret', 'hunter2-very-secret', 'tp-token-abcdef']);
    const header = authorizationHeader({ kind: 'basic', username: 'ci-user', password: 'hunter2-very-secret' });
    const redacted = new SecretRedactor(secrets).redact(`sent ${header} and tp-token-abcdef and hunter2-very-secret`).text;
    expect(redacted).not.toContain('hunter2-very-secret');
    expect(redacted).not.toContain('tp-token-abcdef');
    expect(redacted).not.toContain(header.slice('Basic '.length, 'Basic '.length + 12));
  });
});
