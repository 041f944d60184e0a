import {
  ToolplaneError,
  canonicalJson,
  compileCommandPattern,
  type BindToolRequest,
  type DescriptorRetirementReason,
  type InFlightPolicy,
  type McpDiscoveredTool,
  type McpServer,
  type PromptBinding,
  type ResourceBinding,
  type RetryPolicy,
  type SandboxKind,
  type Scope,
  type ToolDescriptor,
  type ToolDescriptorRecord,
} from '@toolplane/contracts';
import type { Decider } from '@toolplane/event-store';

// The ToolDescriptor aggregate: one immutable, governed version of a discovered tool. Binding creates a version
// that pins the tool's definition hash; unbinding, a changed definition, a removed tool or a retired server
// deactivates it for good (a re-bind makes a new version), so whatever was approved for a version stays about
// exactly that definition and those declarations.

/** What an operator declares when binding a tool (the request without its addressing). */
export type BindingDeclaration = Omit<BindToolRequest, 'serverId' | 'toolName' | 'toolId' | 'expectedDefinitionHash' | 'actor'>;

/** A command to the ToolDescriptor aggregate; `at` is now, from the injected clock. */
export type DescriptorCommand =
  | {
      readonly type: 'BindTool';
      readonly scope: Scope;
      readonly toolId: string;
      readonly toolVersion: string;
      readonly server: McpServer;
      readonly tool: McpDiscoveredTool;
      readonly declaration: BindingDeclaration;
      /** A resource or prompt binding: what it maps the item to (`tool` then describes the item, see read-bindings.ts). */
      readonly binds?: { readonly resource: ResourceBinding } | { readonly prompt: PromptBinding } | undefined;
      readonly boundBy: string;
      readonly at: string;
    }
  /** Publishes a flow-backed tool's version as decided from its ToolDefinition (see flow-tools.ts). */
  | { readonly type: 'PublishFlowTool'; readonly descriptor: ToolDescriptor }
  | { readonly type: 'SuspendDescriptor'; readonly change: 'Changed' | 'Removed'; readonly definitionHash?: string | undefined; readonly at: string }
  | {
      readonly type: 'RetireDescriptor';
      readonly reason: Exclude<DescriptorRetirementReason, 'DefinitionChanged' | 'ToolRemoved'>;
      /** The in-flight policy of a release's deprecation or revocation (reasons ReleaseDeprecated, ReleaseRevoked). */
      readonly inFlight?: InFlightPolicy | undefined;
      readonly at: string;
    }
  | { readonly type: 'SetDescriptorHealth'; readonly healthy: boolean; readonly at: string };

/** What happened to a descriptor (its recorded form); the wire events are derived from these. */
export type DescriptorEvent = ToolDescriptorRecord;

/** The sandbox a tool of this server runs in: a child process for stdio servers, none for remote endpoints and Local providers. */
export function sandboxKindFor(server: Pick<McpServer, 'transport'>): SandboxKind {
  return server.transport === 'Stdio' ? 'Process' : 'None';
}

/** Whether repeating a call of a tool declared this way is safe, so an executor may retry it at all. */
export function retrySafe(declaration: Pick<BindingDeclaration, 'sideEffectClass' | 'idempotency'>): boolean {
  return declaration.sideEffectClass === 'READ' || declaration.idempotency !== 'NONE';
}

/** The retry policy when none is declared: a few attempts where a retry is safe, one otherwise. */
export function defaultRetryPolicy(declaration: Pick<BindingDeclaration, 'sideEffectClass' | 'idempotency'>): RetryPolicy {
  return retrySafe(declaration) ? { maxAttempts: 3, initialBackoffMs: 200, maxBackoffMs: 5_000 } : { maxAttempts: 1, initialBackoffMs: 0, maxBackoffMs: 0 };
}

function invalid(message: string): ToolplaneError {
  return new ToolplaneError('INVALID_ARGUMENT', message);
}

function validateDeclaration(declaration: BindingDeclaration, server: McpServer, tool: McpDiscoveredTool): { retryPolicy: RetryPolicy; sandboxKind: SandboxKind } {
  const retryPolicy = declaration.retryPolicy ?? defaultRetryPolicy(declaration);
  if (retryPolicy.maxAttempts > 1 && !retrySafe(declaration)) {
    throw invalid(`a ${declaration.sideEffectClass} tool without idempotency may not be retried (maxAttempts ${retryPolicy.maxAttempts}); declare its idempotency or use maxAttempts 1`);
  }
  if (retryPolicy.maxBackoffMs < retryPolicy.initialBackoffMs) throw invalid('retryPolicy.maxBackoffMs must be at least initialBackoffMs');
  const sandboxKind = sandboxKindFor(server);
  if (declaration.sandboxKind !== undefined && declaration.sandboxKind !== sandboxKind) {
    throw invalid(`a tool of a ${server.transport} server runs with sandbox ${sandboxKind}, not ${declaration.sandboxKind}`);
  }
  const policy = declaration.commandPolicy;
  if (policy !== undefined) {
    // Checked with the engine and options the tool adapter matches them with (RE2), so what binds also runs.
    for (const pattern of [...policy.allow, ...policy.block]) {
      const compiled = compileCommandPattern(pattern);
      if (!compiled.ok) throw invalid(`commandPolicy pattern ${JSON.stringify(pattern)} cannot be used: ${compiled.problem}`);
    }
    if (!inputProperties(tool).has(policy.argument)) throw invalid(`commandPolicy.argument ${JSON.stringify(policy.argument)} is not a property of the tool's input schema`);
  }
  return { retryPolicy, sandboxKind };
}

function inputProperties(tool: McpDiscoveredTool): Set<string> {
  try {
    const schema = JSON.parse(tool.inputSchemaJson) as { properties?: unknown };
    return typeof schema.properties === 'object' && schema.properties !== null ? new Set(Object.keys(schema.properties)) : new Set();
  } catch {
    return new Set();
  }
}

const bindableStates: ReadonlySet<McpServer['state']> = new Set(['Verified', 'Active', 'Degraded']);

/** Decides what a command does to a descriptor: the events, possibly none; throws a typed error to refuse. */
export function decideDescriptor(command: DescriptorCommand, state: ToolDescriptor | undefined): DescriptorEvent[] {
  if (command.type === 'BindTool') {
    if (state !== undefined) throw new ToolplaneError('CONFLICT', `${command.toolId} version ${command.toolVersion} exists already`);
    const { server, tool, declaration, at } = command;
    if (!bindableStates.has(server.state)) {
      throw new ToolplaneError('CONFLICT', `cannot bind a tool of a server in state ${server.state}${server.state === 'Registered' ? ': discover it first' : ''}`, {
        details: { state: server.state, command: 'bind' },
      });
    }
    if (server.direction !== 'Consumed') throw new ToolplaneError('CONFLICT', 'tools are bound from consumed servers only; this server publishes Toolplane tools');
    const { retryPolicy, sandboxKind } = validateDeclaration(declaration, server, tool);
    const descriptor: ToolDescriptor = {
      tenant: command.scope.tenant,
      workspace: command.scope.workspace,
      toolId: command.toolId,
      toolVersion: command.toolVersion,
      kind: 'Mcp',
      ...(server.releaseId === undefined ? {} : { releaseId: server.releaseId }),
      providerToolName: tool.name,
      ...(tool.title === undefined ? {} : { title: tool.title }),
      description: tool.description ?? '',
      inputSchemaJson: tool.inputSchemaJson,
      ...(tool.outputSchemaJson === undefined ? {} : { outputSchemaJson: tool.outputSchemaJson }),
      definitionHash: tool.definitionHash,
      sideEffectClass: declaration.sideEffectClass,
      riskClass: declaration.riskClass,
      idempotency: declaration.idempotency,
      authorization: { permissions: [...declaration.permissions], roles: [...declaration.roles] },
      secretDependencies: [...declaration.secretDependencies],
      timeoutMs: declaration.timeoutMs,
      retryPolicy,
      rateLimits: [...declaration.rateLimits],
      auditRequirements: declaration.auditRequirements,
      sandboxKind,
      ...(declaration.commandPolicy === undefined ? {} : { commandPolicy: declaration.commandPolicy }),
      mcpServerId: server.serverId,
      ...(command.binds ?? {}),
      // A binding made while the server is Degraded waits, unhealthy, for its recovery.
      healthy: server.state !== 'Degraded',
      active: true,
      boundBy: command.boundBy,
      boundAt: at,
      updatedAt: at,
      version: 1,
    };
    return [{ type: 'DescriptorBound', descriptor }];
  }
  if (command.type === 'PublishFlowTool') {
    if (state !== undefined) throw new ToolplaneError('CONFLICT', `${command.descriptor.toolId} version ${command.descriptor.toolVersion} exists already`);
    if (command.descriptor.kind !== 'Flow') throw new ToolplaneError('INVALID_ARGUMENT', 'only a flow-backed tool is published from a ToolDefinition');
    return [{ type: 'DescriptorBound', descriptor: command.descriptor }];
  }
  if (state === undefined) throw new ToolplaneError('NOT_FOUND', 'no such tool descriptor');
  const { at } = command;
  switch (command.type) {
    case 'SuspendDescriptor': {
      // Deactivation is final for a version: suspending an inactive one again changes nothing.
      if (!state.active) return [];
      const suspended: DescriptorEvent = {
        type: 'DescriptorSuspended',
        change: command.change,
        previousDefinitionHash: state.definitionHash,
        ...(command.definitionHash === undefined ? {} : { definitionHash: command.definitionHash }),
        at,
      };
      return [suspended, { type: 'DescriptorRetired', reason: command.change === 'Changed' ? 'DefinitionChanged' : 'ToolRemoved', at }];
    }
    case 'RetireDescriptor':
      if (!retirementApplies(state, command.reason)) return [];
      return [{ type: 'DescriptorRetired', reason: command.reason, ...(command.inFlight === undefined ? {} : { inFlight: command.inFlight }), at }];
    case 'SetDescriptorHealth':
      return state.active && state.healthy !== command.healthy ? [{ type: 'DescriptorHealthChanged', healthy: command.healthy, at }] : [];
  }
}

/**
 * Whether retiring a descriptor for `reason` changes it: an active one, and two inactive ones. A disabled flow tool is
 * listed still, so retiring its definition ends it too (Disabled → Retired); a revocation of a deprecated release
 * retires its versions again, so that the revocation's in-flight policy governs the calls left.
 */
export function retirementApplies(state: Pick<ToolDescriptor, 'active' | 'inactiveReason'>, reason: DescriptorRetirementReason): boolean {
  if (state.active) return true;
  return (reason === 'Retired' && state.inactiveReason === 'Disabled') || (reason === 'ReleaseRevoked' && state.inactiveReason === 'ReleaseDeprecated');
}

/** Applies one event to a descriptor's state. */
export function evolveDescriptor(state: ToolDescriptor | undefined, event: DescriptorEvent): ToolDescriptor {
  if (event.type === 'DescriptorBound') return event.descriptor;
  if (state === undefined) throw new ToolplaneError('INTERNAL', `${event.type} applied to a descriptor that does not exist`);
  switch (event.type) {
    case 'DescriptorSuspended':
      return { ...state, updatedAt: event.at };
    case 'DescriptorRetired':
      return {
        ...state,
        active: false,
        inactiveReason: event.reason,
        ...(event.inFlight === undefined ? {} : { inFlight: event.inFlight }),
        retiredAt: state.retiredAt ?? event.at,
        updatedAt: event.at,
      };
    case 'DescriptorHealthChanged':
      return { ...state, healthy: event.healthy, updatedAt: event.at };
  }
}

/** The state after a list of events. */
export function foldDescriptor(state: ToolDescriptor | undefined, events: readonly DescriptorEvent[]): ToolDescriptor | undefined {
  return events.reduce<ToolDescriptor | undefined>((current, event) => evolveDescriptor(current, event), state);
}

/** Whether a call of this descriptor version may go ahead: bound, not deactivated, and its server healthy. */
export function isInvocable(descriptor: Pick<ToolDescriptor, 'active' | 'healthy'> | undefined): boolean {
  return descriptor !== undefined && descriptor.active && descriptor.healthy;
}

/** What a binding declares and pins: two bindings with the same governance are the same binding. */
export function bindingFingerprint(descriptor: ToolDescriptor): string {
  const { toolId, providerToolName, definitionHash, sideEffectClass, riskClass, idempotency, authorization, secretDependencies, timeoutMs, retryPolicy, rateLimits, auditRequirements, sandboxKind, commandPolicy, mcpServerId } =
    descriptor;
  return canonicalJson({
    toolId,
    providerToolName,
    definitionHash,
    sideEffectClass,
    riskClass,
    idempotency,
    authorization,
    secretDependencies,
    timeoutMs,
    retryPolicy,
    rateLimits,
    auditRequirements,
    sandboxKind,
    commandPolicy: commandPolicy ?? null,
    mcpServerId: mcpServerId ?? null,
    resource: descriptor.resource ?? null,
    prompt: descriptor.prompt ?? null,
  });
}

/** The ToolDescriptor aggregate (one version) as a Decider; its state is undefined until the version is bound. */
export const descriptorDecider: Decider<ToolDescriptor | undefined, DescriptorCommand, DescriptorEvent> = {
  decide: (command, state) => decideDescriptor(command, state),
  evolve: (state, event) => evolveDescriptor(state, event),
  initialState: () => undefined,
};
