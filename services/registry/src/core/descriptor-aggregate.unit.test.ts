import { describe, expect, it } from 'vitest';
import { ToolDescriptor, hasErrorCode } from '@toolplane/contracts';
import { at, declaration, descriptor, hash, scope, server, tool } from '../../test/core-fixtures.js';
import { bindingFingerprint, decideDescriptor, foldDescriptor, isInvocable, type DescriptorCommand } from './descriptor-aggregate.js';

function refusal(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (hasErrorCode(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected a refusal');
}

const bind = (overrides: Partial<Extract<DescriptorCommand, { type: 'BindTool' }>> = {}): DescriptorCommand => ({
  type: 'BindTool',
  scope,
  toolId: 'everything.echo',
  toolVersion: '1',
  server: server('Verified'),
  tool: tool('echo'),
  declaration: declaration(),
  boundBy: 'user:op',
  at,
  ...overrides,
});

describe('binding a discovered tool', () => {
  it('makes an active, healthy descriptor that pins the definition hash and the declared classes', () => {
    const events = decideDescriptor(bind(), undefined);
    expect(events.map((e) => e.type)).toEqual(['DescriptorBound']);
    const bound = ToolDescriptor.parse(foldDescriptor(undefined, events));
    expect(bound).toMatchObject({
      toolId: 'everything.echo',
      toolVersion: '1',
      kind: 'Mcp',
      providerToolName: 'echo',
      definitionHash: hash('echo'),
      sideEffectClass: 'READ',
      riskClass: 'LOW',
      sandboxKind: 'Process',
      mcpServerId: server('Verified').serverId,
      active: true,
      healthy: true,
      authorization: { permissions: ['echo:use'], roles: [] },
    });
    expect(isInvocable(bound)).toBe(true);
  });

  it('binds on Active and Degraded servers too; on a Degraded one the descriptor is unhealthy until recovery', () => {
    expect(foldDescriptor(undefined, decideDescriptor(bind({ server: server('Active') }), undefined))?.healthy).toBe(true);
    const degraded = foldDescriptor(undefined, decideDescriptor(bind({ server: server('Degraded') }), undefined));
    expect(degraded?.healthy).toBe(false);
    expect(isInvocable(degraded)).toBe(false);
  });

  it('refuses Registered (undiscovered) and Retired servers with CONFLICT', () => {
    const unverified = refusal(() => decideDescriptor(bind({ server: server('Registered') }), undefined));
    expect(unverified.code).toBe('CONFLICT');
    expect(unverified.message).toMatch(/Registered: discover it first/);
    expect(refusal(() => decideDescriptor(bind({ server: server('Retired') }), undefined)).code).toBe('CONFLICT');
  });

  it('refuses a version that exists', () => {
    expect(refusal(() => decideDescriptor(bind(), descriptor())).code).toBe('CONFLICT');
  });

  it('refuses retries for a tool whose repetition is not safe', () => {
    const unsafe = declaration({ sideEffectClass: 'WRITE', idempotency: 'NONE', retryPolicy: { maxAttempts: 3, initialBackoffMs: 100, maxBackoffMs: 1000 } });
    expect(refusal(() => decideDescriptor(bind({ declaration: unsafe }), undefined)).code).toBe('INVALID_ARGUMENT');
    const defaulted = foldDescriptor(undefined, decideDescriptor(bind({ declaration: declaration({ sideEffectClass: 'WRITE', idempotency: 'NONE' }) }), undefined));
    expect(defaulted?.retryPolicy.maxAttempts).toBe(1);
    const keyed = foldDescriptor(undefined, decideDescriptor(bind({ declaration: declaration({ sideEffectClass: 'WRITE', idempotency: 'SUPPORTED_WITH_KEY' }) }), undefined));
    expect(keyed?.retryPolicy.maxAttempts).toBe(3);
  });

  it('derives the sandbox from the transport and refuses a contradicting one', () => {
    const http = server('Verified', { transport: 'StreamableHttp', command: undefined, endpointUrl: 'http://127.0.0.1:1/mcp' });
    expect(foldDescriptor(undefined, decideDescriptor(bind({ server: http }), undefined))?.sandboxKind).toBe('None');
    expect(refusal(() => decideDescriptor(bind({ declaration: declaration({ sandboxKind: 'None' }) }), undefined)).code).toBe('INVALID_ARGUMENT');
  });

  it('checks a command policy: valid patterns over an argument the tool has', () => {
    const policy = (argument: string, block: string[]) => declaration({ commandPolicy: { argument, allow: [], block } });
    expect(decideDescriptor(bind({ declaration: policy('command', ['rm\\s+-rf']) }), undefined)).toHaveLength(1);
    expect(refusal(() => decideDescriptor(bind({ declaration: policy('command', ['(']) }), undefined)).code).toBe('INVALID_ARGUMENT');
    expect(refusal(() => decideDescriptor(bind({ declaration: policy('nope', []) }), undefined)).code).toBe('INVALID_ARGUMENT');
  });

  it('checks command-policy patterns with the engine the adapter runs them on (RE2): a backreference is refused, naming the pattern', () => {
    const policy = (allow: string[], block: string[]) => declaration({ commandPolicy: { argument: 'command', allow, block } });
    for (const [allow, block] of [[[], [String.raw`(a)\1`]], [[String.raw`^(git)\s+\1$`], []], [[], ['(?=rm)rm']]] as const) {
      const refused = refusal(() => decideDescriptor(bind({ declaration: policy([...allow], [...block]) }), undefined));
      const pattern = [...allow, ...block][0] ?? '';
      expect(refused.code).toBe('INVALID_ARGUMENT');
      expect(refused.message).toContain(`commandPolicy pattern ${JSON.stringify(pattern)} cannot be used:`);
      expect(refused.message).toMatch(/linear-time matching cannot support/);
    }
    const valid = foldDescriptor(undefined, decideDescriptor(bind({ declaration: policy([String.raw`^git\s+(?:status|log)\b`], [String.raw`\bpush\s+--force`]) }), undefined));
    expect(valid?.commandPolicy).toEqual({ argument: 'command', allow: [String.raw`^git\s+(?:status|log)\b`], block: [String.raw`\bpush\s+--force`] });
  });

  it('refuses tools of a published (not consumed) server', () => {
    expect(refusal(() => decideDescriptor(bind({ server: server('Active', { direction: 'Published' }) }), undefined)).code).toBe('CONFLICT');
  });
});

describe('deactivating a descriptor', () => {
  it('suspends it when its definition changed: McpToolDefinitionChanged facts and retirement for DefinitionChanged', () => {
    const events = decideDescriptor({ type: 'SuspendDescriptor', change: 'Changed', definitionHash: hash('new'), at }, descriptor());
    expect(events).toEqual([
      { type: 'DescriptorSuspended', change: 'Changed', previousDefinitionHash: hash('echo'), definitionHash: hash('new'), at },
      { type: 'DescriptorRetired', reason: 'DefinitionChanged', at },
    ]);
    const suspended = foldDescriptor(descriptor(), events);
    expect(suspended).toMatchObject({ active: false, inactiveReason: 'DefinitionChanged', definitionHash: hash('echo') });
    expect(isInvocable(suspended)).toBe(false);
  });

  it('retires it when the tool disappeared (ToolRemoved)', () => {
    const events = decideDescriptor({ type: 'SuspendDescriptor', change: 'Removed', at }, descriptor());
    expect(foldDescriptor(descriptor(), events)).toMatchObject({ active: false, inactiveReason: 'ToolRemoved' });
  });

  it('retires it on unbind and server retirement', () => {
    for (const reason of ['Unbound', 'ServerRetired', 'Superseded'] as const) {
      expect(foldDescriptor(descriptor(), decideDescriptor({ type: 'RetireDescriptor', reason, at }, descriptor()))).toMatchObject({ active: false, inactiveReason: reason });
    }
  });

  it('is final: deactivating an inactive descriptor again emits nothing, and it cannot be made healthy-invocable', () => {
    const inactive = descriptor({ active: false, inactiveReason: 'DefinitionChanged' });
    expect(decideDescriptor({ type: 'SuspendDescriptor', change: 'Changed', definitionHash: hash('x'), at }, inactive)).toEqual([]);
    expect(decideDescriptor({ type: 'RetireDescriptor', reason: 'Unbound', at }, inactive)).toEqual([]);
    expect(decideDescriptor({ type: 'SetDescriptorHealth', healthy: true, at }, inactive)).toEqual([]);
  });

  it('is retired again when its deprecated release is revoked: the revocation\'s in-flight policy governs the calls left, the first retirement time stays', () => {
    const later = '2026-11-30T12:00:00.000Z';
    const deprecated = foldDescriptor(descriptor({ releaseId: 'r1' }), decideDescriptor({ type: 'RetireDescriptor', reason: 'ReleaseDeprecated', inFlight: 'FINISH', at }, descriptor({ releaseId: 'r1' })));
    expect(deprecated).toMatchObject({ active: false, inactiveReason: 'ReleaseDeprecated', inFlight: 'FINISH', retiredAt: at });
    const revocation = decideDescriptor({ type: 'RetireDescriptor', reason: 'ReleaseRevoked', inFlight: 'CANCEL_PENDING', at: later }, deprecated);
    expect(revocation).toEqual([{ type: 'DescriptorRetired', reason: 'ReleaseRevoked', inFlight: 'CANCEL_PENDING', at: later }]);
    const revoked = foldDescriptor(deprecated, revocation);
    expect(revoked).toMatchObject({ active: false, inactiveReason: 'ReleaseRevoked', inFlight: 'CANCEL_PENDING', retiredAt: at, updatedAt: later });
    // Revoked is final, and only a deprecation is revoked again: no other retirement changes.
    expect(decideDescriptor({ type: 'RetireDescriptor', reason: 'ReleaseRevoked', inFlight: 'CANCEL_PENDING', at: later }, revoked)).toEqual([]);
    expect(decideDescriptor({ type: 'RetireDescriptor', reason: 'ReleaseRevoked', inFlight: 'CANCEL_PENDING', at: later }, descriptor({ active: false, inactiveReason: 'Unbound' }))).toEqual([]);
  });

  it('answers NOT_FOUND for a descriptor that does not exist', () => {
    expect(refusal(() => decideDescriptor({ type: 'RetireDescriptor', reason: 'Unbound', at }, undefined)).code).toBe('NOT_FOUND');
  });
});

describe('descriptor health', () => {
  it('follows the server: unhealthy descriptors are not invocable, and only changes are recorded', () => {
    const events = decideDescriptor({ type: 'SetDescriptorHealth', healthy: false, at }, descriptor());
    const unhealthy = foldDescriptor(descriptor(), events);
    expect(isInvocable(unhealthy)).toBe(false);
    expect(decideDescriptor({ type: 'SetDescriptorHealth', healthy: false, at }, unhealthy)).toEqual([]);
    expect(isInvocable(foldDescriptor(unhealthy, decideDescriptor({ type: 'SetDescriptorHealth', healthy: true, at }, unhealthy)))).toBe(true);
  });
});

describe('binding fingerprints', () => {
  it('are equal for the same governance and differ when a declaration or the definition differs', () => {
    expect(bindingFingerprint(descriptor({ toolVersion: '2', version: 5, boundAt: '2030-01-01T00:00:00.000Z' }))).toBe(bindingFingerprint(descriptor()));
    expect(bindingFingerprint(descriptor({ riskClass: 'HIGH' }))).not.toBe(bindingFingerprint(descriptor()));
    expect(bindingFingerprint(descriptor({ definitionHash: hash('other') }))).not.toBe(bindingFingerprint(descriptor()));
  });
});
