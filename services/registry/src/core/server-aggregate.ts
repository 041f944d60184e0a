import { ToolplaneError, type McpCapabilitiesSnapshot, type McpServer, type McpServerRecord, type McpServerState } from '@toolplane/contracts';
import type { Decider } from '@toolplane/event-store';
import { argumentsCredentialProblem, settingCredentialProblem, urlCredentialProblem } from './credential-guard.js';
import { authenticationProblem, isBeyondLocalProcess } from './reachability.js';

// The McpServer aggregate: decide(command, state) → events, evolve(state, event) → state. Pure: the clock comes in
// on each command (`at`), ids are minted by the caller.

/**
 * The seed's transitions, plus retiring a server that never became Active (one registered with a typo, or that
 * an operator no longer wants): an operator can retire a server in any state. Every state change is one of these.
 */
export const serverTransitions = [
  { from: 'Registered', to: 'Verified', trigger: 'HandshakeAndDiscoverySucceeded' },
  { from: 'Verified', to: 'Active', trigger: 'BindingsApproved' },
  { from: 'Active', to: 'Degraded', trigger: 'HandshakeFailed' },
  { from: 'Degraded', to: 'Active', trigger: 'HandshakeRecovered' },
  { from: 'Active', to: 'Retired', trigger: 'Retire' },
  { from: 'Degraded', to: 'Retired', trigger: 'Retire' },
  { from: 'Registered', to: 'Retired', trigger: 'Retire' },
  { from: 'Verified', to: 'Retired', trigger: 'Retire' },
] as const satisfies readonly { from: McpServerState; to: McpServerState; trigger: string }[];

/** What moves a server from one state to another. */
export type ServerTrigger = (typeof serverTransitions)[number]['trigger'];

/** The longest a platform admin's authentication exception may run. */
export const MAX_EXCEPTION_MS = 90 * 24 * 60 * 60 * 1000;

/** A registration as decided from a request: everything of the document but its state and bookkeeping. */
export type ServerRegistration = Omit<McpServer, 'state' | 'health' | 'registeredAt' | 'updatedAt' | 'version' | 'capabilities' | 'protocolVersion' | 'lastHandshakeAt' | 'authenticationException'>;

/** A command to the McpServer aggregate; `at` is now, from the injected clock. */
export type ServerCommand =
  | { readonly type: 'RegisterServer'; readonly registration: ServerRegistration; readonly at: string }
  /** Creates a workspace's reserved Local provider (Active at once: there is nothing to reach); nothing when it exists. */
  | { readonly type: 'EnsureLocalProvider'; readonly registration: ServerRegistration; readonly at: string }
  | { readonly type: 'RecordDiscovery'; readonly snapshot: McpCapabilitiesSnapshot; readonly at: string }
  | { readonly type: 'ApproveBindings'; readonly at: string }
  | { readonly type: 'RecordHealthCheck'; readonly outcome: { readonly ok: true } | { readonly ok: false; readonly error: string }; readonly failureThreshold: number; readonly at: string }
  | { readonly type: 'CheckAuthentication'; readonly at: string }
  | { readonly type: 'GrantAuthenticationException'; readonly exception: NonNullable<McpServer['authenticationException']>; readonly at: string }
  | { readonly type: 'RetireServer'; readonly reason?: string | undefined; readonly at: string };

/** What happened to a server (the recorded form, `McpServerRecord`, less the binding index); the wire events are derived from these. */
export type ServerEvent = Exclude<McpServerRecord, { type: 'ToolBindingRecorded' }>;

function conflict(state: McpServerState | undefined, command: string, why?: string): ToolplaneError {
  const where = state === undefined ? 'an unregistered server' : `a server in state ${state}`;
  return new ToolplaneError('CONFLICT', `cannot ${command} ${where}${why === undefined ? '' : `: ${why}`}`, { details: { state: state ?? null, command } });
}

/** The state change a trigger makes from `from`, or a CONFLICT naming the state and the command. */
export function transition(from: McpServerState, trigger: ServerTrigger, command: string, at: string, reason?: string): ServerEvent {
  const allowed = serverTransitions.find((candidate) => candidate.from === from && candidate.trigger === trigger);
  if (allowed === undefined) throw conflict(from, command, `${trigger} is not a transition from ${from}`);
  return { type: 'ServerStateChanged', from, to: allowed.to, trigger, ...(reason === undefined ? {} : { reason: reason.slice(0, 1024) }), at };
}

/** Checks a registration against the invariants that need no I/O: one transport, no inline credential. */
export function validateRegistration(registration: ServerRegistration): void {
  const invalid = (message: string) => new ToolplaneError('INVALID_ARGUMENT', message);
  if (registration.transport === 'Local') {
    // A provider inside Toolplane: nothing to spawn, nothing to connect to, nothing to authenticate.
    if (registration.command !== undefined || registration.endpointUrl !== undefined || registration.headers !== undefined || registration.connectionRef !== undefined) {
      throw invalid('a Local provider has no command, endpoint, headers or connection');
    }
    if (registration.direction !== 'Published') throw invalid('a Local provider publishes Toolplane tools (direction Published)');
    return;
  }
  if (registration.transport === 'Stdio') {
    if (registration.command === undefined || registration.endpointUrl !== undefined) throw invalid('a stdio server has a command and no endpoint URL');
    if (registration.headers !== undefined) throw invalid('headers apply to Streamable HTTP servers only');
    const problem = argumentsCredentialProblem([registration.command.executable, ...registration.command.args]);
    if (problem !== undefined) throw invalid(problem);
    for (const setting of registration.command.env ?? []) {
      const settingProblem = settingCredentialProblem(setting, 'environment variable');
      if (settingProblem !== undefined) throw invalid(settingProblem);
    }
  } else {
    if (registration.endpointUrl === undefined || registration.command !== undefined) throw invalid('a Streamable HTTP server has an endpoint URL and no command');
    const problem = urlCredentialProblem(registration.endpointUrl);
    if (problem !== undefined) throw invalid(problem);
    for (const setting of registration.headers ?? []) {
      const settingProblem = settingCredentialProblem(setting, 'header');
      if (settingProblem !== undefined) throw invalid(settingProblem);
    }
  }
  if (registration.authentication === 'OAuth2ProtectedResource' && registration.connectionRef === undefined) {
    throw invalid('OAuth2ProtectedResource authentication needs a connectionRef: the connection holding the client credential');
  }
  const names = new Set<string>();
  for (const setting of [...(registration.command?.env ?? []), ...(registration.headers ?? [])]) {
    const key = registration.transport === 'Stdio' ? setting.name : setting.name.toLowerCase();
    if (names.has(key)) throw invalid(`the setting ${JSON.stringify(setting.name)} is given twice`);
    names.add(key);
  }
}

/** Refuses (CONFLICT) to discover a server that cannot be discovered any more: checked before connecting to it. */
export function assertDiscoverable(server: Pick<McpServer, 'state'>): void {
  if (server.state === 'Retired') throw conflict(server.state, 'discover');
}

/** Decides what a command does to a server: the events, possibly none; throws CONFLICT or INVALID_ARGUMENT to refuse. */
export function decideServer(command: ServerCommand, state: McpServer | undefined): ServerEvent[] {
  if (command.type === 'RegisterServer') {
    if (state !== undefined) throw conflict(state.state, 'register', 'a server with this id or name exists');
    validateRegistration(command.registration);
    const server: McpServer = {
      ...command.registration,
      state: 'Registered',
      health: { consecutiveFailures: 0 },
      registeredAt: command.at,
      updatedAt: command.at,
      version: 1,
    };
    return [{ type: 'ServerRegistered', server }];
  }
  if (command.type === 'EnsureLocalProvider') {
    if (state !== undefined) return [];
    if (command.registration.transport !== 'Local') throw new ToolplaneError('INVALID_ARGUMENT', 'only a Local provider is created without a registration');
    validateRegistration(command.registration);
    const server: McpServer = { ...command.registration, state: 'Active', health: { consecutiveFailures: 0 }, registeredAt: command.at, updatedAt: command.at, version: 1 };
    return [{ type: 'ServerRegistered', server }];
  }
  if (state === undefined) throw new ToolplaneError('NOT_FOUND', 'no such MCP server');
  const { at } = command;
  switch (command.type) {
    case 'RecordDiscovery': {
      assertDiscoverable(state);
      if (state.capabilities?.snapshotHash === command.snapshot.snapshotHash && state.state !== 'Registered') return [];
      const discovered: ServerEvent = { type: 'CapabilitiesDiscovered', snapshot: command.snapshot, at };
      if (state.state !== 'Registered') return [discovered];
      return [discovered, transition(state.state, 'HandshakeAndDiscoverySucceeded', 'record the discovery of', at)];
    }
    case 'ApproveBindings': {
      if (state.state === 'Verified' || state.state === 'Active') {
        const problem = authenticationProblem(state, at);
        if (problem !== undefined) throw conflict(state.state, 'approve bindings of', problem);
      }
      // A binding on an Active server approves nothing new; on a Degraded one it waits for recovery.
      if (state.state === 'Active' || state.state === 'Degraded') return [];
      return [transition(state.state, 'BindingsApproved', 'approve bindings of', at)];
    }
    case 'RecordHealthCheck':
      return decideHealthCheck(command, state);
    case 'CheckAuthentication': {
      if (state.state !== 'Active') return [];
      const problem = authenticationProblem(state, at);
      if (problem === undefined) return [];
      const lastError = problem.slice(0, 1024);
      return [{ type: 'HealthRecorded', health: { ...state.health, lastCheckedAt: at, lastError }, at }, transition(state.state, 'HandshakeFailed', 'degrade', at, problem)];
    }
    case 'GrantAuthenticationException': {
      if (state.state === 'Retired') throw conflict(state.state, 'grant an authentication exception to');
      if (!isBeyondLocalProcess(state)) throw conflict(state.state, 'grant an authentication exception to', 'the server is not reachable beyond the local process, so it needs none');
      const expires = Date.parse(command.exception.expiresAt);
      if (!(expires > Date.parse(at))) throw new ToolplaneError('INVALID_ARGUMENT', 'an authentication exception must expire in the future');
      if (expires - Date.parse(at) > MAX_EXCEPTION_MS) throw new ToolplaneError('INVALID_ARGUMENT', 'an authentication exception may run for at most 90 days');
      return [{ type: 'AuthenticationExceptionGranted', exception: command.exception, at }];
    }
    case 'RetireServer':
      // Retiring a retired server again (a retried command) is done already, and emits nothing.
      if (state.state === 'Retired') return [];
      return [transition(state.state, 'Retire', 'retire', at, command.reason)];
  }
}

function decideHealthCheck(command: Extract<ServerCommand, { type: 'RecordHealthCheck' }>, state: McpServer): ServerEvent[] {
  const { at, outcome } = command;
  if (state.state !== 'Active' && state.state !== 'Degraded') throw conflict(state.state, 'record a health check of', 'only Active and Degraded servers are watched');
  if (outcome.ok) {
    const authProblem = authenticationProblem(state, at);
    if (state.state === 'Degraded' && authProblem === undefined) {
      return [
        { type: 'HealthRecorded', health: { consecutiveFailures: 0, lastCheckedAt: at }, at },
        transition(state.state, 'HandshakeRecovered', 'recover', at),
      ];
    }
    // Reachable again but still not acceptable: it stays Degraded, and says why.
    if (state.state === 'Degraded' && authProblem !== undefined) {
      if (state.health.lastError === authProblem.slice(0, 1024) && state.health.consecutiveFailures === 0) return [];
      return [{ type: 'HealthRecorded', health: { consecutiveFailures: 0, lastCheckedAt: at, lastError: authProblem.slice(0, 1024) }, at }];
    }
    // A steady healthy server is not rewritten on every check.
    if (state.health.consecutiveFailures === 0 && state.health.lastError === undefined) return [];
    return [{ type: 'HealthRecorded', health: { consecutiveFailures: 0, lastCheckedAt: at }, at }];
  }
  const lastError = (outcome.error.trim() === '' ? 'health check failed' : outcome.error).slice(0, 1024);
  // A Degraded server that keeps failing the same way is not recorded again on every check: its record (read for
  // every decision about it) would otherwise grow with the time it stays down.
  if (state.state === 'Degraded' && state.health.consecutiveFailures >= command.failureThreshold && state.health.lastError === lastError) return [];
  const failures = state.health.consecutiveFailures + 1;
  const recorded: ServerEvent = { type: 'HealthRecorded', health: { consecutiveFailures: failures, lastCheckedAt: at, lastError }, at };
  if (state.state === 'Active' && failures >= command.failureThreshold) {
    return [recorded, transition(state.state, 'HandshakeFailed', 'degrade', at, `${failures} consecutive failed health checks: ${lastError}`)];
  }
  return [recorded];
}

/** Applies one event to a server's state. */
export function evolveServer(state: McpServer | undefined, event: ServerEvent): McpServer {
  if (event.type === 'ServerRegistered') return event.server;
  if (state === undefined) throw new ToolplaneError('INTERNAL', `${event.type} applied to an unregistered server`);
  switch (event.type) {
    case 'CapabilitiesDiscovered':
      return { ...state, capabilities: event.snapshot, protocolVersion: event.snapshot.protocolVersion, lastHandshakeAt: event.at, updatedAt: event.at };
    case 'ServerStateChanged': {
      const next: McpServer = { ...state, state: event.to, updatedAt: event.at };
      return event.to === 'Active' ? { ...next, health: { ...next.health, consecutiveFailures: 0 } } : next;
    }
    case 'HealthRecorded':
      return { ...state, health: event.health, ...(event.health.consecutiveFailures === 0 ? { lastHandshakeAt: event.at } : {}), updatedAt: event.at };
    case 'AuthenticationExceptionGranted':
      return { ...state, authenticationException: event.exception, updatedAt: event.at };
  }
}

/** Decides a sequence of commands against one state, as one change: the events of all, in order. */
export function decideServerAll(commands: readonly ServerCommand[], state: McpServer | undefined): ServerEvent[] {
  const events: ServerEvent[] = [];
  let current = state;
  for (const command of commands) {
    for (const event of decideServer(command, current)) {
      events.push(event);
      current = evolveServer(current, event);
    }
  }
  return events;
}

/** The state after a list of events. */
export function foldServer(state: McpServer | undefined, events: readonly ServerEvent[]): McpServer | undefined {
  return events.reduce<McpServer | undefined>((current, event) => evolveServer(current, event), state);
}

/** A tool of the server bound under a tool id (the server's effects find the descriptor versions through these). */
export interface ToolBinding {
  readonly toolName: string;
  readonly toolId: string;
  /** The version published, on the reserved flow provider (whose versions are not 1, 2, 3…). */
  readonly toolVersion?: string | undefined;
}

/** The McpServer aggregate as its stream folds: the server (none before its registration) and the tool ids its tools were bound under. */
export interface ServerAggregate {
  readonly server: McpServer | undefined;
  readonly bindings: readonly ToolBinding[];
}

/** A command of the McpServer aggregate: a server command, or recording that one of its tools was bound under a tool id. */
export type ServerAggregateCommand =
  | ServerCommand
  | { readonly type: 'RecordBinding'; readonly toolName: string; readonly toolId: string; readonly toolVersion?: string | undefined; readonly at: string };

/**
 * What one decision on a server does: commands decided in order against the state each leaves (one append), or a
 * function choosing them from the server as it is read (e.g. a health check only while the server is watched).
 */
export type ServerChange = readonly ServerAggregateCommand[] | ((server: McpServer) => readonly ServerAggregateCommand[]);

function decideOne(command: ServerAggregateCommand, state: ServerAggregate): McpServerRecord[] {
  if (command.type !== 'RecordBinding') return decideServer(command, state.server);
  if (state.server === undefined) throw new ToolplaneError('NOT_FOUND', 'no such MCP server');
  if (state.bindings.some((binding) => binding.toolName === command.toolName && binding.toolId === command.toolId && binding.toolVersion === command.toolVersion)) return [];
  return [{ type: 'ToolBindingRecorded', toolName: command.toolName, toolId: command.toolId, ...(command.toolVersion === undefined ? {} : { toolVersion: command.toolVersion }), at: command.at }];
}

function evolveAggregate(state: ServerAggregate, event: McpServerRecord): ServerAggregate {
  if (event.type === 'ToolBindingRecorded') {
    return { ...state, bindings: [...state.bindings, { toolName: event.toolName, toolId: event.toolId, ...(event.toolVersion === undefined ? {} : { toolVersion: event.toolVersion }) }] };
  }
  return { ...state, server: evolveServer(state.server, event) };
}

/** The McpServer aggregate as a Decider: a change's commands decided in order, each against what the previous left. */
export const serverDecider: Decider<ServerAggregate, ServerChange, McpServerRecord> = {
  decide(change, state) {
    if (typeof change === 'function' && state.server === undefined) throw new ToolplaneError('NOT_FOUND', 'no such MCP server');
    const commands = typeof change === 'function' ? change(state.server as McpServer) : change;
    const events: McpServerRecord[] = [];
    let current = state;
    for (const command of commands) {
      for (const event of decideOne(command, current)) {
        events.push(event);
        current = evolveAggregate(current, event);
      }
    }
    return events;
  },
  evolve: evolveAggregate,
  initialState: () => ({ server: undefined, bindings: [] }),
};
