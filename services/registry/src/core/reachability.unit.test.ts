import { describe, expect, it } from 'vitest';
import { authenticationProblem, isBeyondLocalProcess, isLoopbackHost } from './reachability.js';

describe('reachability', () => {
  it.each(['localhost', 'LOCALHOST', 'api.localhost', '127.0.0.1', '127.8.9.10', '[::1]', '::1', '[::ffff:7f00:1]'])('%s is loopback', (host) => expect(isLoopbackHost(host)).toBe(true));
  it.each(['example.com', '10.0.0.1', '192.168.1.2', '[::2]', 'localhost.example.com', '0.0.0.0'])('%s is not loopback', (host) => expect(isLoopbackHost(host)).toBe(false));

  it('takes stdio servers and loopback endpoints as local, everything else as remote', () => {
    expect(isBeyondLocalProcess({ transport: 'Stdio', endpointUrl: undefined })).toBe(false);
    expect(isBeyondLocalProcess({ transport: 'StreamableHttp', endpointUrl: 'http://127.0.0.1:3001/mcp' })).toBe(false);
    expect(isBeyondLocalProcess({ transport: 'StreamableHttp', endpointUrl: 'https://mcp.example.com/mcp' })).toBe(true);
    expect(isBeyondLocalProcess({ transport: 'StreamableHttp', endpointUrl: 'not a url' })).toBe(true);
  });

  it('accepts remote servers only with OAuth2, workload identity or an unexpired exception', () => {
    const remote = { transport: 'StreamableHttp' as const, endpointUrl: 'https://mcp.example.com/mcp' };
    const now = '2026-01-01T00:00:00.000Z';
    expect(authenticationProblem({ ...remote, authentication: 'None' }, now)).toMatch(/needs/);
    expect(authenticationProblem({ ...remote, authentication: 'OAuth2ProtectedResource' }, now)).toBeUndefined();
    expect(authenticationProblem({ ...remote, authentication: 'WorkloadIdentity' }, now)).toBeUndefined();
    const exception = { grantedBy: 'user:admin', reason: 'r', grantedAt: now, expiresAt: '2026-01-02T00:00:00.000Z' };
    expect(authenticationProblem({ ...remote, authentication: 'None', authenticationException: exception }, now)).toBeUndefined();
    expect(authenticationProblem({ ...remote, authentication: 'None', authenticationException: exception }, '2026-01-02T00:00:00.000Z')).toMatch(/expired/);
    expect(authenticationProblem({ transport: 'Stdio', endpointUrl: undefined, authentication: 'None' }, now)).toBeUndefined();
  });
});
