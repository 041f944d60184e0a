import {
  FLOW_PROVIDER_NAME,
  ToolId,
  ToolplaneError,
  canonicalHash,
  compareToolVersions,
  flowProviderId,
  flowToolId,
  isFlowToolId,
  jsonProblem,
  type McpServer,
  type PublishFlowToolRequest,
  type Scope,
  type ToolDescriptor,
} from '@toolplane/contracts';
import type { ToolBinding } from './server-aggregate.js';
import type { ServerRegistration } from './server-aggregate.js';

// Flow-backed tools in the registry (ADR-0106): each ToolDefinition of a workspace materializes as the descriptor
// `flows.<name>` bound to the workspace's reserved provider server (transport Local: FlowRunner, never connected to).
// Their versions are their definitions' versions, so a newer definition supersedes the older tool; the provider's
// record lists every version published (its binding records), since those versions are not 1, 2, 3….

/** The registration of a workspace's reserved provider of flow-backed tools: Local, Published, created Active by the registry. */
export function flowProviderRegistration(scope: Scope, registeredBy: string): ServerRegistration {
  return {
    serverId: flowProviderId(scope),
    tenant: scope.tenant,
    workspace: scope.workspace,
    name: FLOW_PROVIDER_NAME,
    direction: 'Published',
    transport: 'Local',
    authentication: 'None',
    governancePolicyRef: 'default',
    registeredBy,
  };
}

/** Whether a server is a workspace's reserved provider of flow-backed tools (managed by ToolDefinitions, not MCP operations). */
export function isFlowProvider(server: Pick<McpServer, 'serverId' | 'tenant' | 'workspace' | 'transport'>): boolean {
  return server.transport === 'Local' || server.serverId === flowProviderId(server);
}

/** Refuses an MCP server operation on the reserved flow provider: its tools come and go with ToolDefinitions only. */
export function assertNotFlowProvider(server: Pick<McpServer, 'serverId' | 'tenant' | 'workspace' | 'transport'>, operation: string): void {
  if (!isFlowProvider(server)) return;
  throw new ToolplaneError('CONFLICT', `cannot ${operation} the reserved provider ${FLOW_PROVIDER_NAME}: its tools are published and retired by ToolDefinitions (stop them with a SERVER kill switch)`, {
    details: { serverId: server.serverId, command: operation },
  });
}

/** Refuses a registration under the reserved provider name. */
export function assertNotReservedServerName(name: string): void {
  if (name === FLOW_PROVIDER_NAME) throw new ToolplaneError('INVALID_ARGUMENT', `the server name ${FLOW_PROVIDER_NAME} is reserved for the workspace's flow-backed tools`);
}

/** Refuses binding an MCP tool under the reserved `flows.` namespace. */
export function assertNotFlowToolId(toolId: string): void {
  if (isFlowToolId(toolId)) {
    throw new ToolplaneError('INVALID_ARGUMENT', `the tool id ${toolId} is in the reserved flows. namespace of flow-backed tools; choose another toolId`);
  }
}

/** The tool id of a definition, or INVALID_ARGUMENT when the name cannot make one. */
export function flowToolIdOf(definitionName: string): string {
  const toolId = flowToolId(definitionName);
  if (!ToolId.safeParse(toolId).success) {
    throw new ToolplaneError('INVALID_ARGUMENT', `the definition name ${JSON.stringify(definitionName)} cannot name a tool: use dot-separated segments of [A-Za-z0-9_-] (tool id ${toolId})`);
  }
  return toolId;
}

function schemaOf(json: string, which: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new ToolplaneError('INVALID_ARGUMENT', `the ${which} schema is not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ToolplaneError('INVALID_ARGUMENT', `the ${which} schema is not a JSON object`);
  const problem = jsonProblem(parsed);
  if (problem !== undefined) throw new ToolplaneError('INVALID_ARGUMENT', `the ${which} schema cannot be stored: ${problem}`);
  return parsed;
}

/** The fields of a publication that make it the same tool: all but its version and its enablement. */
export function flowToolDefinitionHash(request: PublishFlowToolRequest): string {
  return canonicalHash({
    purpose: 'toolplane/v1/flow-tool',
    definitionName: request.definitionName,
    mcpName: request.mcpName,
    title: request.title ?? null,
    description: request.description,
    inputSchema: schemaOf(request.inputSchemaJson, 'input'),
    outputSchema: schemaOf(request.outputSchemaJson, 'output'),
    sideEffectClass: request.sideEffectClass,
    riskClass: request.riskClass,
    approvalRequired: request.approvalRequired,
    timeoutMs: request.timeoutMs,
  });
}

/** The descriptor a publication makes: inactive (Disabled) when the definition is disabled. */
export function flowToolDescriptor(scope: Scope, request: PublishFlowToolRequest, boundBy: string, at: string): ToolDescriptor {
  return {
    tenant: scope.tenant,
    workspace: scope.workspace,
    toolId: flowToolIdOf(request.definitionName),
    toolVersion: String(request.definitionVersion),
    kind: 'Flow',
    providerToolName: request.mcpName,
    ...(request.title === undefined ? {} : { title: request.title }),
    description: request.description,
    inputSchemaJson: request.inputSchemaJson,
    outputSchemaJson: request.outputSchemaJson,
    definitionHash: flowToolDefinitionHash(request),
    sideEffectClass: request.sideEffectClass,
    riskClass: request.riskClass,
    approvalRequired: request.approvalRequired,
    // A run is keyed by the logical call and each step by its own key: a new attempt resumes the same run.
    idempotency: 'SUPPORTED_WITH_KEY',
    authorization: { permissions: [], roles: [] },
    secretDependencies: [],
    timeoutMs: request.timeoutMs,
    retryPolicy: { maxAttempts: 1, initialBackoffMs: 0, maxBackoffMs: 0 },
    rateLimits: [],
    auditRequirements: { argumentsHash: true, resultHash: true },
    sandboxKind: 'None',
    mcpServerId: flowProviderId(scope),
    healthy: true,
    active: request.enabled,
    ...(request.enabled ? {} : { inactiveReason: 'Disabled' as const }),
    boundBy,
    boundAt: at,
    updatedAt: at,
    version: 1,
  };
}

/** The versions of a flow tool the provider's record lists, oldest first. */
export function flowToolVersions(bindings: readonly ToolBinding[], toolId: string): string[] {
  const versions = new Set<string>();
  for (const binding of bindings) if (binding.toolId === toolId && binding.toolVersion !== undefined) versions.add(binding.toolVersion);
  return [...versions].map((toolVersion) => ({ toolVersion })).sort(compareToolVersions).map((entry) => entry.toolVersion);
}

/** What a publication does given the versions of the tool that exist. */
export type FlowPublishPlan =
  | { readonly kind: 'Existing'; readonly descriptor: ToolDescriptor }
  | { readonly kind: 'New'; readonly supersede: readonly ToolDescriptor[] };

/** Whether a stored version is what `candidate` would publish (a retried publication). */
function samePublication(stored: ToolDescriptor, candidate: ToolDescriptor): boolean {
  if (stored.definitionHash !== candidate.definitionHash || stored.providerToolName !== candidate.providerToolName) return false;
  // A version that was superseded or retired since is the same publication, as it is now.
  if (!stored.active && stored.inactiveReason !== 'Disabled') return true;
  return stored.active === candidate.active;
}

/**
 * Plans a publication of `candidate` given the tool's existing versions: the same version published the same way is
 * answered as it is; the same version with other fields, or a version older than one already published, is a
 * CONFLICT; otherwise a new version that supersedes the active older ones.
 */
export function planFlowPublish(candidate: ToolDescriptor, existing: readonly ToolDescriptor[]): FlowPublishPlan {
  const same = existing.find((descriptor) => descriptor.toolVersion === candidate.toolVersion);
  if (same !== undefined) {
    if (samePublication(same, candidate)) return { kind: 'Existing', descriptor: same };
    throw new ToolplaneError('CONFLICT', `${candidate.toolId} version ${candidate.toolVersion} was published with other fields; publish the definition's new version`, {
      details: { toolId: candidate.toolId, toolVersion: candidate.toolVersion },
    });
  }
  const newer = existing.filter((descriptor) => compareToolVersions(descriptor, candidate) > 0).at(-1);
  if (newer !== undefined) {
    throw new ToolplaneError('CONFLICT', `${candidate.toolId} has a newer version ${newer.toolVersion} than ${candidate.toolVersion}; an older definition version is not published again`, {
      details: { toolId: candidate.toolId, toolVersion: candidate.toolVersion, newerVersion: newer.toolVersion },
    });
  }
  return { kind: 'New', supersede: existing.filter((descriptor) => descriptor.active) };
}

/** The versions a retirement ends: the active ones and the disabled ones (a disabled tool is still listed). */
export function retirableFlowVersions(existing: readonly ToolDescriptor[]): ToolDescriptor[] {
  return existing.filter((descriptor) => descriptor.active || descriptor.inactiveReason === 'Disabled');
}
