import {
  McpCapabilitiesSnapshot,
  ToolplaneError,
  canonicalHash,
  type McpDiscoveredPrompt,
  type McpDiscoveredResource,
  type McpDiscoveredResourceTemplate,
  type McpDiscoveredTool,
} from '@toolplane/contracts';

/** What handshake and discovery returned: tools already as the contract stores them (schemas as JSON text). */
export interface DiscoveredCapabilities {
  readonly protocolVersion: string;
  readonly serverInfo: { readonly name: string; readonly version: string };
  readonly tools: readonly McpDiscoveredTool[];
  /** Listed tools whose definitions could not be stored or pinned, with the reason (see McpCapabilitiesSnapshot). */
  readonly refusedTools?: readonly { readonly name: string; readonly reason: string }[];
  readonly resources: readonly McpDiscoveredResource[];
  /** The server's resource templates (none when it lists none, or has no resources/templates/list). */
  readonly resourceTemplates?: readonly McpDiscoveredResourceTemplate[];
  readonly prompts: readonly McpDiscoveredPrompt[];
}

/**
 * Turns a discovery into the stored capabilities snapshot: tools ordered by name, refused tools (whose definitions
 * discovery could not store or pin) apart with their reasons, and a snapshot hash over what was found. A server
 * whose answer as a whole breaks the registry's limits (too many tools or resources, duplicate names or URIs) is
 * refused with INVALID_ARGUMENT: nothing of it is stored.
 */
export function buildSnapshot(found: DiscoveredCapabilities, at: string): McpCapabilitiesSnapshot {
  const names = new Set<string>();
  for (const tool of [...found.tools, ...(found.refusedTools ?? [])]) {
    if (names.has(tool.name)) throw new ToolplaneError('INVALID_ARGUMENT', `the server lists the tool ${JSON.stringify(tool.name.slice(0, 100))} twice`);
    names.add(tool.name);
  }
  const tools = [...found.tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const refusedTools = [...(found.refusedTools ?? [])]
    .map((tool) => ({ name: tool.name.slice(0, 256), reason: tool.reason.slice(0, 1024) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const resources = uniqueBy(found.resources, (resource) => resource.uri, 'resource');
  const resourceTemplates = uniqueBy(found.resourceTemplates ?? [], (template) => template.uriTemplate, 'resource template');
  const prompts = uniqueBy(found.prompts, (prompt) => prompt.name, 'prompt');
  const snapshotHash = canonicalHash({
    protocolVersion: found.protocolVersion,
    serverInfo: found.serverInfo,
    tools: tools.map((tool) => [tool.name, tool.definitionHash]),
    ...(refusedTools.length === 0 ? {} : { refusedTools: refusedTools.map((tool) => tool.name) }),
    resources: resources.map((resource) => [resource.uri, resource.definitionHash ?? null]),
    // Only when there are any: the hash of a server without templates stays what it was before they were discovered.
    ...(resourceTemplates.length === 0 ? {} : { resourceTemplates: resourceTemplates.map((template) => [template.uriTemplate, template.definitionHash]) }),
    prompts: prompts.map((prompt) => [prompt.name, prompt.definitionHash ?? null]),
  });
  const parsed = McpCapabilitiesSnapshot.safeParse({
    protocolVersion: found.protocolVersion,
    serverInfo: found.serverInfo,
    tools,
    ...(refusedTools.length === 0 ? {} : { refusedTools }),
    resources,
    ...(resourceTemplates.length === 0 ? {} : { resourceTemplates }),
    prompts,
    snapshotHash,
    discoveredAt: at,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined ? '' : ` at ${issue.path.map(String).join('.')}: ${issue.message}`;
    throw new ToolplaneError('INVALID_ARGUMENT', `the server's capabilities break the registry's limits${where}`);
  }
  return parsed.data;
}

/** The items ordered by key; a key listed twice makes the answer unusable (a binding could not say which it pins). */
function uniqueBy<T>(items: readonly T[], key: (item: T) => string, what: string): T[] {
  const seen = new Set<string>();
  for (const item of items) {
    const k = key(item);
    if (seen.has(k)) throw new ToolplaneError('INVALID_ARGUMENT', `the server lists the ${what} ${JSON.stringify(k.slice(0, 100))} twice`);
    seen.add(k);
  }
  return [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}
