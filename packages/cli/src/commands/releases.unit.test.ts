import { describe, expect, it } from 'vitest';
import type { Release } from '@toolplane/contracts';
import { parseInFlight, parseReleaseState, releaseFields } from './releases.js';
import { registerRequest } from './servers.js';

const release: Release = {
  tenant: 'acme',
  workspace: 'main',
  releaseId: 'payments-2026.03',
  state: 'Revoked',
  inFlight: 'CANCEL_PENDING',
  reason: 'leaked key',
  publishedBy: 'user:ada',
  publishedAt: '2026-03-01T12:00:00.000Z',
  changedBy: 'user:bob',
  changedAt: '2026-03-02T12:00:00.000Z',
  version: 4,
};

describe('releases in the CLI', () => {
  it('reads --in-flight and --state as an operator writes them', () => {
    expect(parseInFlight('finish')).toBe('FINISH');
    expect(parseInFlight('Cancel-Pending')).toBe('CANCEL_PENDING');
    expect(() => parseInFlight('cancel')).toThrow('--in-flight must be finish (accepted calls finish) or cancel-pending (calls not yet executing are cancelled)');
    expect(parseReleaseState('deprecated')).toBe('Deprecated');
    expect(() => parseReleaseState('gone')).toThrow('--state must be published, deprecated or revoked');
  });

  it('shows a release with its in-flight policy and who changed it', () => {
    const text = releaseFields(release);
    expect(text).toContain('release:   payments-2026.03\n');
    expect(text).toContain('state:     Revoked\n');
    expect(text).toContain('in flight: cancel-pending\n');
    expect(text).toContain('changed:   2026-03-02T12:00:00.000Z by user:bob\n');
  });

  it('registers a server with --release', () => {
    const request = registerRequest({ name: 'payments', stdio: '/usr/bin/mcp', release: 'payments-2026.03', env: [], envConnection: [], header: [], headerConnection: [] });
    expect(request.releaseId).toBe('payments-2026.03');
  });
});
