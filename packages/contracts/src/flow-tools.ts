import { deterministicUuid } from './deterministic-ids.js';
import { ToolId, type Scope, type Uuid } from './primitives.js';

// Where a workspace's flow-backed tools live in the registry: under the reserved `flows.` tool-id namespace, all of
// them bound to one reserved provider server per workspace (transport Local: FlowRunner inside Toolplane), so a
// SERVER kill switch on that provider stops every flow tool of the workspace at once.

/** The tool-id namespace of flow-backed tools: binding an MCP tool under it is refused. */
export const FLOW_TOOL_NAMESPACE = 'flows';

/** The name of every workspace's reserved provider of flow-backed tools: registering a server under it is refused. */
export const FLOW_PROVIDER_NAME = 'toolplane-flows';

const namespacePrefix = `${FLOW_TOOL_NAMESPACE}.`;

/** The tool id a ToolDefinition materializes as: `flows.<definitionName>`. */
export function flowToolId(definitionName: string): string {
  return `${namespacePrefix}${definitionName}`;
}

/** Whether a tool id is in the reserved flow-tool namespace. */
export function isFlowToolId(toolId: string): boolean {
  return toolId.startsWith(namespacePrefix);
}

/** The ToolDefinition name behind a flow tool id, or undefined when the id is not a well-formed flow tool id. */
export function flowDefinitionNameOf(toolId: string): string | undefined {
  if (!isFlowToolId(toolId) || !ToolId.safeParse(toolId).success) return undefined;
  return toolId.slice(namespacePrefix.length);
}

/** The id of a workspace's reserved provider server of flow-backed tools (the same in every replica and run). */
export function flowProviderId(scope: Scope): Uuid {
  return deterministicUuid('toolplane/v1/flow-provider', { tenant: scope.tenant, workspace: scope.workspace });
}
