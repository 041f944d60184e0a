import { describe, expect, it } from 'vitest';
import type { RegistryEvent } from '@toolplane/contracts';
import { suspendedToolVersion } from './registry-changes.js';

const metadata = { eventId: '0b9f6a3e-2f4c-4b7a-9c1d-5e6f7a8b9c00', tenant: 'acme', workspace: 'dev', occurredAt: '2026-03-01T12:00:00.000Z' };
const retired = (data: Partial<Extract<RegistryEvent, { type: 'ToolDescriptorRetired' }>['data']>): RegistryEvent => ({
  type: 'ToolDescriptorRetired',
  data: { toolId: 'payments.refund', toolVersion: '2', reason: 'Unbound', ...data },
  metadata,
});

describe('which registry events void approvals', () => {
  it('voids on a retirement, and on a release retirement that cancels pending calls', () => {
    expect(suspendedToolVersion(retired({}))).toEqual({ toolId: 'payments.refund', toolVersion: '2', reason: 'Unbound' });
    expect(suspendedToolVersion(retired({ reason: 'ReleaseRevoked', releaseId: 'r1', inFlight: 'CANCEL_PENDING' }))).toEqual({ toolId: 'payments.refund', toolVersion: '2', reason: 'ReleaseRevoked' });
  });

  it('keeps the approvals of a release retired with in-flight policy FINISH: parked calls may still be approved', () => {
    expect(suspendedToolVersion(retired({ reason: 'ReleaseDeprecated', releaseId: 'r1', inFlight: 'FINISH' }))).toBeUndefined();
  });

  it('ignores release events themselves (their descriptors’ retirements carry the decision)', () => {
    expect(suspendedToolVersion({ type: 'ReleaseRevoked', data: { releaseId: 'r1', inFlight: 'CANCEL_PENDING', version: 3 }, metadata })).toBeUndefined();
  });
});
