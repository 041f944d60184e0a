import { McpCapabilitiesSnapshot, ToolplaneError, canonicalHash, type McpDiscoveredTool } from '@toolplane/contracts';

/** What handshake and discovery returned: tools already as the contract stores them (schemas as JSON text). */
export interface DiscoveredCapabilities {
  readonly protocolVersion: string;
  readonly serverInfo: { readonly name: string; readonly version: string };
  readonly tools: readonly McpDiscoveredTool[];
  /** Listed tools whose definitions could not be stored or pinned, with the reason (see McpCapabilitiesSnapshot). */
  readonly refusedTools?: readonly { readonly name: string; readonly reason: string }[];
  readonly resources: readonly { readonly uri: string; readonly name: string; readonly mimeType?: string | undefined; readonly description?: string | undefined }[];
  readonly prompts: readonly { readonly name: string; readonly description?: string | undefined }[];
}

/**
 * Turns a discovery into the stored capabilities snapshot: tools ordered by name, refused tools (whose definitions
 * discovery could not store or pin) apart with their reasons, and a snapshot hash over what was found. A server
 * whose answer as a whole breaks the registry's limits (too many tools or resources, duplicate names) is refused
 * with INVALID_ARGUMENT: nothing of it is stored.
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
  const resources = found.resources.map((r) => ({
    uri: r.uri,
    name: r.name,
    ...(r.mimeType === undefined ? {} : { mimeType: r.mimeType }),
    ...(r.description === undefined ? {} : { description: r.description }),
  }));
  const prompts = found.prompts.map((p) => ({ name: p.name, ...(p.description === undefined ? {} : { description: p.description }) }));
  const snapshotHash = canonicalHash({
    protocolVersion: found.protocolVersion,
    serverInfo: found.serverInfo,
    tools: tools.map((tool) => [tool.name, tool.definitionHash]),
    ...(refusedTools.length === 0 ? {} : { refusedTools: refusedTools.map((tool) => tool.name) }),
    resources,
    prompts,
  });
  const parsed = McpCapabilitiesSnapshot.safeParse({
    protocolVersion: found.protocolVersion,
    serverInfo: found.serverInfo,
    tools,
    ...(refusedTools.length === 0 ? {} : { refusedTools }),
    resources,
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
