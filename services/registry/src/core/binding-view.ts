import { compareToolVersions, type DiscoveredToolView, type McpServer, type ToolDescriptor } from '@toolplane/contracts';

/** The discovered tools of a server with where each one's binding stands; an unbound tool is listed, never invocable. */
export function toolViews(server: McpServer, descriptors: readonly ToolDescriptor[]): DiscoveredToolView[] {
  const mine = descriptors.filter((d) => d.mcpServerId === server.serverId);
  return (server.capabilities?.tools ?? []).map((tool) => {
    const base = {
      serverId: server.serverId,
      serverName: server.name,
      serverState: server.state,
      toolName: tool.name,
      ...(tool.title === undefined ? {} : { title: tool.title }),
      ...(tool.description === undefined ? {} : { description: tool.description }),
      definitionHash: tool.definitionHash,
    };
    const latest = mine.filter((d) => d.providerToolName === tool.name).sort(compareToolVersions).at(-1);
    const bound = latest !== undefined && (latest.active || latest.inactiveReason === 'DefinitionChanged');
    if (latest === undefined || !bound) return { ...base, binding: 'Unbound', invocable: false };
    const binding = {
      toolId: latest.toolId,
      toolVersion: latest.toolVersion,
      sideEffectClass: latest.sideEffectClass,
      riskClass: latest.riskClass,
      ...(latest.definitionHash === tool.definitionHash ? {} : { boundDefinitionHash: latest.definitionHash }),
    };
    if (!latest.active) return { ...base, ...binding, binding: 'Suspended', invocable: false };
    const invocable = latest.healthy && server.state === 'Active';
    return { ...base, ...binding, binding: invocable ? 'Bound' : 'Unhealthy', invocable };
  });
}
