import { ToolId, mcpMetaKeys, type EffectivePrompt, type EffectiveResource } from '@toolplane/contracts';

// How the workspace's bound resources and prompts appear to MCP clients. A resource is listed under a URI of the
// endpoint's own naming it by its governed id (two servers may both have `file:///README.md`); a prompt under its
// governed id. The server's own URI stays in the entry's governance facts (`_meta`), not in what a client reads by.

const RESOURCE_URI_PREFIX = 'toolplane://resources/';

/** One entry of a resources/list answer. */
export interface McpResourceEntry {
  readonly uri: string;
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  readonly mimeType?: string;
  readonly _meta: { readonly [mcpMetaKeys.resource]: { readonly resourceId: string; readonly serverUri: string; readonly classification: string; readonly knowledgeSource: string; readonly scope: string } };
}

/** One entry of a prompts/list answer. */
export interface McpPromptEntry {
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  readonly arguments: readonly { readonly name: string; readonly description?: string; readonly required: boolean }[];
}

/** The URI the endpoint lists a resource under. */
export function exposedResourceUri(resourceId: string): string {
  return `${RESOURCE_URI_PREFIX}${resourceId}`;
}

/** The resource id a URI of the endpoint's names, or undefined for any other URI (a server's own, say). */
export function resourceIdOfUri(uri: string): string | undefined {
  if (!uri.startsWith(RESOURCE_URI_PREFIX)) return undefined;
  const id = uri.slice(RESOURCE_URI_PREFIX.length);
  return ToolId.safeParse(id).success ? id : undefined;
}

/** An effective resource as MCP lists it. */
export function toMcpResource(resource: EffectiveResource): McpResourceEntry {
  return {
    uri: exposedResourceUri(resource.resourceId),
    name: resource.name,
    ...(resource.title === undefined ? {} : { title: resource.title }),
    description: resource.description,
    ...(resource.mimeType === undefined ? {} : { mimeType: resource.mimeType }),
    _meta: {
      [mcpMetaKeys.resource]: {
        resourceId: resource.resourceId,
        serverUri: resource.uri,
        classification: resource.classification,
        knowledgeSource: resource.knowledgeSource,
        scope: resource.scope,
      },
    },
  };
}

/** An effective prompt as MCP lists it: named by its governed id. */
export function toMcpPrompt(prompt: EffectivePrompt): McpPromptEntry {
  return {
    name: prompt.promptId,
    ...(prompt.title === undefined ? {} : { title: prompt.title }),
    description: prompt.description,
    arguments: prompt.arguments.map((argument) => ({ name: argument.name, ...(argument.description === undefined ? {} : { description: argument.description }), required: argument.required })),
  };
}
