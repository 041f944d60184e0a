import { compareToolVersions, mcpCapabilityOf, type DiscoveredReadView, type DiscoveredToolView, type McpServer, type ToolDescriptor } from '@toolplane/contracts';

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
    const latest = mine.filter((d) => d.providerToolName === tool.name && mcpCapabilityOf(d) === 'tool').sort(compareToolVersions).at(-1);
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

/**
 * The discovered resources, resource templates and prompts of a server with where each one's binding stands, as
 * `toolViews` for tools (a template is a `resource` view named by its uriTemplate).
 */
export function readViews(
  server: McpServer,
  descriptors: readonly ToolDescriptor[],
): { resources: DiscoveredReadView[]; resourceTemplates: DiscoveredReadView[]; prompts: DiscoveredReadView[] } {
  const mine = descriptors.filter((d) => d.mcpServerId === server.serverId);
  const view = (
    capability: 'resource' | 'prompt',
    name: string,
    found: { title?: string | undefined; description?: string | undefined; definitionHash?: string | undefined },
    template = false,
  ): DiscoveredReadView => {
    const base = {
      serverId: server.serverId,
      serverName: server.name,
      serverState: server.state,
      capability,
      name,
      ...(found.title === undefined ? {} : { title: found.title }),
      ...(found.description === undefined ? {} : { description: found.description }),
      ...(found.definitionHash === undefined ? {} : { definitionHash: found.definitionHash }),
    };
    const latest = mine
      .filter((d) => d.providerToolName === name && mcpCapabilityOf(d) === capability && (d.resource?.uriTemplate !== undefined) === template)
      .sort(compareToolVersions)
      .at(-1);
    if (latest === undefined || !(latest.active || latest.inactiveReason === 'DefinitionChanged')) return { ...base, binding: 'Unbound', invocable: false };
    const binding = {
      toolId: latest.toolId,
      toolVersion: latest.toolVersion,
      ...(latest.resource === undefined ? {} : { classification: latest.resource.classification }),
      ...(latest.prompt === undefined ? {} : { target: latest.prompt.target }),
      ...(latest.definitionHash === found.definitionHash ? {} : { boundDefinitionHash: latest.definitionHash }),
    };
    if (!latest.active) return { ...base, ...binding, binding: 'Suspended', invocable: false };
    const invocable = latest.healthy && server.state === 'Active';
    return { ...base, ...binding, binding: invocable ? 'Bound' : 'Unhealthy', invocable };
  };
  return {
    resources: (server.capabilities?.resources ?? []).map((resource) => view('resource', resource.uri, { title: resource.title ?? resource.name, description: resource.description, definitionHash: resource.definitionHash })),
    resourceTemplates: (server.capabilities?.resourceTemplates ?? []).map((template) =>
      view('resource', template.uriTemplate, { title: template.title ?? template.name, description: template.description, definitionHash: template.definitionHash }, true),
    ),
    prompts: (server.capabilities?.prompts ?? []).map((prompt) => view('prompt', prompt.name, prompt)),
  };
}
