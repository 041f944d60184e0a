import { mcpCapabilityOf, type McpCapabilitiesSnapshot, type McpCapability, type ToolDescriptor } from '@toolplane/contracts';

/** A bound tool whose definition on the server no longer matches the hash its binding pinned. */
export interface DefinitionDrift {
  readonly descriptor: ToolDescriptor;
  readonly change: 'Changed' | 'Removed';
  /** The definition the server reports now; absent when the tool is gone. */
  readonly definitionHash?: string;
}

/**
 * Compares what a discovery found with what the active bindings pinned. Each binding is compared with its own
 * pinned hash (not with the previous snapshot), so a change missed by one discovery is still caught by the next.
 */
export function definitionDrift(
  snapshot: Pick<McpCapabilitiesSnapshot, 'tools' | 'resources' | 'resourceTemplates' | 'prompts'>,
  active: readonly ToolDescriptor[],
): DefinitionDrift[] {
  // Tools by name, resources by URI, resource templates by uriTemplate, prompts by name: a binding compares with the
  // item of its own kind.
  const found: Record<McpCapability | 'resourceTemplate', Map<string, string | undefined>> = {
    tool: new Map(snapshot.tools.map((tool) => [tool.name, tool.definitionHash])),
    resource: new Map(snapshot.resources.map((resource) => [resource.uri, resource.definitionHash])),
    resourceTemplate: new Map((snapshot.resourceTemplates ?? []).map((template) => [template.uriTemplate, template.definitionHash])),
    prompt: new Map(snapshot.prompts.map((prompt) => [prompt.name, prompt.definitionHash])),
  };
  const drift: DefinitionDrift[] = [];
  for (const descriptor of active) {
    if (!descriptor.active) continue;
    const kind = descriptor.resource?.uriTemplate === undefined ? mcpCapabilityOf(descriptor) : 'resourceTemplate';
    const hash = found[kind].get(descriptor.providerToolName);
    if (hash === undefined) drift.push({ descriptor, change: 'Removed' });
    else if (hash !== descriptor.definitionHash) drift.push({ descriptor, change: 'Changed', definitionHash: hash });
  }
  return drift;
}
