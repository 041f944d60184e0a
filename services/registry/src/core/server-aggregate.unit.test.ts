import { describe, expect, it } from 'vitest';
import { McpServer, McpServerState, hasErrorCode } from '@toolplane/contracts';
import { at, httpRegistration, later, server, snapshot, stdioRegistration, tool } from '../../test/core-fixtures.js';
import { decideServer, decideServerAll, evolveServer, foldServer, serverTransitions, transition, type ServerCommand, type ServerTrigger } from './server-aggregate.js';

function refusal(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (hasErrorCode(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected a refusal');
}

const triggers: ServerTrigger[] = ['HandshakeAndDiscoverySucceeded', 'BindingsApproved', 'HandshakeFailed', 'HandshakeRecovered', 'Retire'];

describe('the McpServer state machine', () => {
  it('has the six transitions of the seed, plus an operator retiring a server before it became Active', () => {
    expect(serverTransitions.map((t) => `${t.from} -${t.trigger}-> ${t.to}`)).toEqual([
      'Registered -HandshakeAndDiscoverySucceeded-> Verified',
      'Verified -BindingsApproved-> Active',
      'Active -HandshakeFailed-> Degraded',
      'Degraded -HandshakeRecovered-> Active',
      'Active -Retire-> Retired',
      'Degraded -Retire-> Retired',
      'Registered -Retire-> Retired',
      'Verified -Retire-> Retired',
    ]);
  });

  it.each(McpServerState.options.flatMap((from) => triggers.map((trigger) => [from, trigger] as const)))('from %s on %s: allowed only if the seed says so', (from, trigger) => {
    const allowed = serverTransitions.find((t) => t.from === from && t.trigger === trigger);
    if (allowed) {
      expect(transition(from, trigger, 'test', at)).toMatchObject({ type: 'ServerStateChanged', from, to: allowed.to, trigger });
    } else {
      const refused = refusal(() => transition(from, trigger, 'do something to', at));
      expect(refused.code).toBe('CONFLICT');
      expect(refused.message).toContain(`state ${from}`);
      expect(refused.message).toContain('do something to');
    }
  });
});

describe('registering', () => {
  it('makes a Registered server with no failures', () => {
    const events = decideServer({ type: 'RegisterServer', registration: stdioRegistration(), at }, undefined);
    expect(events).toHaveLength(1);
    const registered = foldServer(undefined, events);
    expect(McpServer.parse(registered)).toMatchObject({ state: 'Registered', version: 1, health: { consecutiveFailures: 0 }, registeredAt: at });
  });

  it('refuses a second registration of an existing server', () => {
    expect(refusal(() => decideServer({ type: 'RegisterServer', registration: stdioRegistration(), at }, server('Registered'))).code).toBe('CONFLICT');
  });

  it.each([
    ['user info in the URL', httpRegistration('https://bob:hunter2@mcp.example.com/mcp')],
    ['a token query parameter', httpRegistration('https://mcp.example.com/mcp?access_token=abc')],
    ['an Authorization header value', httpRegistration('https://mcp.example.com/mcp', { headers: [{ name: 'Authorization', value: 'Bearer abcdefghijkl' }] })],
    ['an API key header value', httpRegistration('https://mcp.example.com/mcp', { headers: [{ name: 'X-Api-Key', value: 'k' }] })],
    ['a token-shaped header value', httpRegistration('https://mcp.example.com/mcp', { headers: [{ name: 'X-Team', value: 'ghp_0123456789abcdefghijABCDEFGHIJ' }] })],
    ['a secret environment value', stdioRegistration({ command: { executable: 'srv', args: [], env: [{ name: 'GITHUB_TOKEN', value: 'x' }] } })],
    ['a token flag on the command line', stdioRegistration({ command: { executable: 'srv', args: ['--token', 'abc'] } })],
    ['OAuth2 without a connection', httpRegistration('https://mcp.example.com/mcp', { authentication: 'OAuth2ProtectedResource' })],
    ['a header twice', httpRegistration('https://mcp.example.com/mcp', { headers: [{ name: 'X-A', value: '1' }, { name: 'x-a', value: '2' }] })],
  ])('refuses %s with INVALID_ARGUMENT', (_label, registration) => {
    expect(refusal(() => decideServer({ type: 'RegisterServer', registration, at }, undefined)).code).toBe('INVALID_ARGUMENT');
  });

  it('accepts credentials given as connection references', () => {
    const registration = httpRegistration('https://mcp.example.com/mcp', {
      authentication: 'OAuth2ProtectedResource',
      connectionRef: 'github-oauth',
      headers: [{ name: 'Authorization', connectionRef: 'github-oauth' }],
    });
    expect(decideServer({ type: 'RegisterServer', registration, at }, undefined)).toHaveLength(1);
  });
});

describe('discovery', () => {
  const discovered = snapshot([tool('echo')], 'first');

  it('verifies a Registered server (HandshakeAndDiscoverySucceeded) and stores the snapshot', () => {
    const events = decideServer({ type: 'RecordDiscovery', snapshot: discovered, at }, server('Registered'));
    expect(events.map((e) => e.type)).toEqual(['CapabilitiesDiscovered', 'ServerStateChanged']);
    const verified = foldServer(server('Registered'), events);
    expect(verified).toMatchObject({ state: 'Verified', capabilities: discovered, protocolVersion: '2025-06-18', lastHandshakeAt: at });
  });

  it('refreshes the snapshot of a Verified, Active or Degraded server without a state change', () => {
    for (const state of ['Verified', 'Active', 'Degraded'] as const) {
      const events = decideServer({ type: 'RecordDiscovery', snapshot: discovered, at }, server(state));
      expect(events.map((e) => e.type)).toEqual(['CapabilitiesDiscovered']);
      expect(foldServer(server(state), events)?.state).toBe(state);
    }
  });

  it('emits nothing when the snapshot is unchanged', () => {
    expect(decideServer({ type: 'RecordDiscovery', snapshot: discovered, at }, server('Active', { capabilities: discovered }))).toEqual([]);
  });

  it('refuses to discover a Retired server', () => {
    expect(refusal(() => decideServer({ type: 'RecordDiscovery', snapshot: discovered, at }, server('Retired'))).code).toBe('CONFLICT');
  });
});

describe('approving bindings', () => {
  it('makes a Verified local server Active (BindingsApproved)', () => {
    const events = decideServer({ type: 'ApproveBindings', at }, server('Verified'));
    expect(events).toEqual([expect.objectContaining({ from: 'Verified', to: 'Active', trigger: 'BindingsApproved' })]);
  });

  it('changes nothing on a server that is already Active or Degraded', () => {
    expect(decideServer({ type: 'ApproveBindings', at }, server('Active'))).toEqual([]);
    expect(decideServer({ type: 'ApproveBindings', at }, server('Degraded'))).toEqual([]);
  });

  it('refuses a Registered (undiscovered) or Retired server', () => {
    expect(refusal(() => decideServer({ type: 'ApproveBindings', at }, server('Registered'))).code).toBe('CONFLICT');
    expect(refusal(() => decideServer({ type: 'ApproveBindings', at }, server('Retired'))).code).toBe('CONFLICT');
  });

  const remote = (overrides: Partial<McpServer> = {}) => server('Verified', { transport: 'StreamableHttp', command: undefined, endpointUrl: 'https://mcp.example.com/mcp', ...overrides });

  it('refuses a remote server without OAuth2 or workload authentication', () => {
    const refused = refusal(() => decideServer({ type: 'ApproveBindings', at }, remote()));
    expect(refused.code).toBe('CONFLICT');
    expect(refused.message).toMatch(/OAuth2ProtectedResource or WorkloadIdentity/);
  });

  it('allows a remote server with OAuth2, workload identity, or an unexpired exception', () => {
    expect(decideServer({ type: 'ApproveBindings', at }, remote({ authentication: 'OAuth2ProtectedResource', connectionRef: 'c' }))).toHaveLength(1);
    expect(decideServer({ type: 'ApproveBindings', at }, remote({ authentication: 'WorkloadIdentity' }))).toHaveLength(1);
    const exception = { grantedBy: 'user:admin', reason: 'pilot', grantedAt: at, expiresAt: later(60_000) };
    expect(decideServer({ type: 'ApproveBindings', at }, remote({ authenticationException: exception }))).toHaveLength(1);
    expect(refusal(() => decideServer({ type: 'ApproveBindings', at: later(60_000) }, remote({ authenticationException: exception }))).message).toMatch(/expired/);
  });

  it('treats loopback endpoints as local', () => {
    for (const url of ['http://127.0.0.1:3001/mcp', 'http://localhost:3001/mcp', 'http://[::1]:3001/mcp']) {
      expect(decideServer({ type: 'ApproveBindings', at }, remote({ endpointUrl: url }))).toHaveLength(1);
    }
  });
});

describe('health checks', () => {
  const failed = (n = 3, error = 'connection refused'): ServerCommand => ({ type: 'RecordHealthCheck', outcome: { ok: false, error }, failureThreshold: n, at });
  const ok: ServerCommand = { type: 'RecordHealthCheck', outcome: { ok: true }, failureThreshold: 3, at };

  it('counts failures of an Active server and degrades it at the threshold (HandshakeFailed)', () => {
    let state = server('Active');
    for (let i = 1; i <= 2; i++) {
      const events = decideServer(failed(), state);
      expect(events.map((e) => e.type)).toEqual(['HealthRecorded']);
      state = evolveServer(state, events[0]!);
      expect(state.health.consecutiveFailures).toBe(i);
    }
    const events = decideServer(failed(), state);
    expect(events.map((e) => e.type)).toEqual(['HealthRecorded', 'ServerStateChanged']);
    expect(foldServer(state, events)).toMatchObject({ state: 'Degraded', health: { consecutiveFailures: 3, lastError: 'connection refused' } });
  });

  it('does not record a Degraded server that keeps failing the same way again (its record would grow with every check)', () => {
    const steady = server('Degraded', { health: { consecutiveFailures: 3, lastError: 'connection refused' } });
    expect(decideServer(failed(), steady)).toEqual([]);
    // Another failure is recorded, and so is one of a server not yet at the threshold.
    expect(decideServer(failed(3, 'timed out'), steady).map((e) => e.type)).toEqual(['HealthRecorded']);
    expect(decideServer(failed(), { ...steady, health: { consecutiveFailures: 1, lastError: 'connection refused' } }).map((e) => e.type)).toEqual(['HealthRecorded']);
  });

  it('brings a Degraded server back to Active on success (HandshakeRecovered) and resets the count', () => {
    const degraded = server('Degraded', { health: { consecutiveFailures: 5, lastError: 'x' } });
    const events = decideServer(ok, degraded);
    expect(events.map((e) => e.type)).toEqual(['HealthRecorded', 'ServerStateChanged']);
    expect(foldServer(degraded, events)).toMatchObject({ state: 'Active', health: { consecutiveFailures: 0 } });
  });

  it('writes nothing for a steady healthy server', () => {
    expect(decideServer(ok, server('Active'))).toEqual([]);
  });

  it('resets the count of an Active server that recovers before the threshold', () => {
    expect(decideServer(ok, server('Active', { health: { consecutiveFailures: 1, lastError: 'x' } })).map((e) => e.type)).toEqual(['HealthRecorded']);
  });

  it('refuses to record health of servers it does not watch', () => {
    for (const state of ['Registered', 'Verified', 'Retired'] as const) expect(refusal(() => decideServer(ok, server(state))).code).toBe('CONFLICT');
  });

  it('keeps a reachable remote server Degraded while its authentication is not acceptable', () => {
    const degraded = server('Degraded', { transport: 'StreamableHttp', command: undefined, endpointUrl: 'https://mcp.example.com/mcp' });
    const events = decideServer(ok, degraded);
    expect(foldServer(degraded, events)).toMatchObject({ state: 'Degraded', health: { consecutiveFailures: 0 } });
    expect(foldServer(degraded, events)?.health.lastError).toMatch(/OAuth2/);
  });
});

describe('authentication exceptions', () => {
  const remoteActive = (expiresAt: string) =>
    server('Active', {
      transport: 'StreamableHttp',
      command: undefined,
      endpointUrl: 'https://mcp.example.com/mcp',
      authenticationException: { grantedBy: 'user:admin', reason: 'pilot', grantedAt: at, expiresAt },
    });

  it('degrade an Active remote server when they expire (the seed has no other way out of Active but Retire)', () => {
    expect(decideServer({ type: 'CheckAuthentication', at }, remoteActive(later(1000)))).toEqual([]);
    const events = decideServer({ type: 'CheckAuthentication', at: later(1000) }, remoteActive(later(1000)));
    expect(events.map((e) => e.type)).toEqual(['HealthRecorded', 'ServerStateChanged']);
    expect(events[1]).toMatchObject({ from: 'Active', to: 'Degraded', trigger: 'HandshakeFailed' });
    expect(foldServer(remoteActive(later(1000)), events)?.health.lastError).toMatch(/expired/);
  });

  it('are recorded for remote servers, with an expiry in the future and at most 90 days away', () => {
    const remote = server('Verified', { transport: 'StreamableHttp', command: undefined, endpointUrl: 'https://mcp.example.com/mcp' });
    const grant = (expiresAt: string): ServerCommand => ({ type: 'GrantAuthenticationException', exception: { grantedBy: 'user:admin', reason: 'pilot', grantedAt: at, expiresAt }, at });
    expect(foldServer(remote, decideServer(grant(later(86_400_000)), remote))?.authenticationException?.expiresAt).toBe(later(86_400_000));
    expect(refusal(() => decideServer(grant(at), remote)).code).toBe('INVALID_ARGUMENT');
    expect(refusal(() => decideServer(grant(later(91 * 86_400_000)), remote)).code).toBe('INVALID_ARGUMENT');
    expect(refusal(() => decideServer(grant(later(1000)), server('Verified'))).code).toBe('CONFLICT');
  });
});

describe('retiring', () => {
  it('retires a server in any state but Retired, recording the change with its reason', () => {
    for (const state of ['Registered', 'Verified', 'Active', 'Degraded'] as const) {
      const events = decideServer({ type: 'RetireServer', reason: 'registered with a typo', at }, server(state));
      expect(events).toEqual([{ type: 'ServerStateChanged', from: state, to: 'Retired', trigger: 'Retire', reason: 'registered with a typo', at }]);
      expect(foldServer(server(state), events)?.state).toBe('Retired');
    }
  });

  it('emits nothing when a retired server is retired again (a retried command)', () => {
    expect(decideServer({ type: 'RetireServer', at }, server('Retired'))).toEqual([]);
  });

  it('answers NOT_FOUND for a server that does not exist', () => {
    expect(refusal(() => decideServer({ type: 'RetireServer', at }, undefined)).code).toBe('NOT_FOUND');
  });
});

describe('deciding several commands as one change', () => {
  it('applies each to the state the previous one left', () => {
    const events = decideServerAll([{ type: 'RecordDiscovery', snapshot: snapshot([tool('echo')], 'x'), at }, { type: 'ApproveBindings', at }], server('Registered'));
    expect(foldServer(server('Registered'), events)?.state).toBe('Active');
  });
});
