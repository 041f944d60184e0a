import { DEFAULT_SANDBOX_PROFILE, SANDBOX_LIMIT_DEFAULTS, type SandboxLimits } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { leaseSandbox, sandboxLeaseOf } from './sandbox-stage.js';

const lease = { sandboxLeaseId: '0b9f6a3e-2f4c-4b7a-9c1d-000000000001', expiresAt: '2026-01-01T00:00:00.000Z' };
const stdio = (limits: SandboxLimits = SANDBOX_LIMIT_DEFAULTS) => ({ transport: 'stdio' as const, command: '/usr/bin/node', sandbox: { ...DEFAULT_SANDBOX_PROFILE, name: 'memory', limits } });

describe('the SANDBOX stage', () => {
  it('leases the sandbox of the stdio session: kind, profile name and hash, network mode and limits', async () => {
    const outcome = await leaseSandbox({ mode: 'bubblewrap' }, stdio(), lease);
    expect(outcome).toMatchObject({
      step: 'SANDBOX',
      result: 'leased',
      ...lease,
      sandbox: { kind: 'Bubblewrap', info: { profileName: 'memory', network: 'none', limits: SANDBOX_LIMIT_DEFAULTS } },
    });
    const other = sandboxLeaseOf(stdio({ ...SANDBOX_LIMIT_DEFAULTS, processes: 8 }), 'bubblewrap');
    expect(other?.info.profileHash).toMatch(/^[0-9a-f]{64}$/);
    expect(other?.info.profileHash).not.toBe(sandboxLeaseOf(stdio(), 'bubblewrap')?.info.profileHash);
  });

  it('says Process when the sandbox is off, and records no sandbox for a remote server', async () => {
    expect(await leaseSandbox({ mode: 'off', bwrapPath: '/nonexistent/bwrap' }, stdio(), lease)).toMatchObject({ result: 'leased', sandbox: { kind: 'Process' } });
    expect(await leaseSandbox({ mode: 'bubblewrap' }, { transport: 'http', url: 'https://mcp.example.com/mcp' }, lease)).toEqual({ step: 'SANDBOX', result: 'leased', ...lease });
  });

  it('refuses the call in one line when the sandbox is on and bwrap is missing', async () => {
    const outcome = await leaseSandbox({ mode: 'bubblewrap', bwrapPath: '/nonexistent/bwrap' }, stdio(), lease);
    expect(outcome).toMatchObject({ step: 'SANDBOX', result: 'denied', failure: { code: 'INTERNAL', retryable: false, providerErrorType: 'SandboxUnavailable' } });
    expect(outcome.result === 'denied' && outcome.failure.message).toMatch(/^stdio MCP servers run sandboxed under bubblewrap, but "\/nonexistent\/bwrap" was not found/);
  });
});
