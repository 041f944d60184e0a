import { describe, expect, it } from 'vitest';
import { DEFAULT_SANDBOX_PROFILE, SANDBOX_LIMIT_DEFAULTS, SandboxProfile, SandboxProfileRequest } from './sandbox.js';

describe('sandbox profiles', () => {
  it('defaults to no network, no mounts and the default limits', () => {
    expect(DEFAULT_SANDBOX_PROFILE).toEqual({ name: 'default', network: 'none', readOnlyMounts: [], writablePaths: [], limits: SANDBOX_LIMIT_DEFAULTS });
    expect(SandboxProfileRequest.parse({ limits: { processes: 8 } }).limits).toEqual({ ...SANDBOX_LIMIT_DEFAULTS, processes: 8 });
  });

  it('refuses egress at registration, saying it is not supported yet', () => {
    const parsed = SandboxProfileRequest.safeParse({ network: 'egress', egress: [{ host: 'api.example.com', port: 443 }] });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.message).join()).toContain('not supported yet');
  });

  it('stores a host network only with the operator who approved it', () => {
    expect(SandboxProfile.safeParse({ network: 'host' }).success).toBe(false);
    expect(SandboxProfile.safeParse({ network: 'host', networkHostApprovedBy: 'op:alice', networkHostApprovedAt: '2026-01-01T00:00:00.000Z' }).success).toBe(true);
  });

  it('takes only absolute, normalised paths other than /', () => {
    for (const bad of ['/', 'relative/dir', '/a/../etc', '/a/./b', '/a/', '/a//b']) {
      expect(SandboxProfileRequest.safeParse({ writablePaths: [bad] }).success, bad).toBe(false);
    }
    expect(SandboxProfileRequest.parse({ readOnlyMounts: ['/srv/data'], writablePaths: ['/var/lib/memory'] })).toMatchObject({ readOnlyMounts: ['/srv/data'], writablePaths: ['/var/lib/memory'] });
  });
});
