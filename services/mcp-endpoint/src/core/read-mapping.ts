import { ToolId, mcpMetaKeys, parseUriTemplate, type EffectivePrompt, type EffectiveResource, type EffectiveResourceTemplate } from '@toolplane/contracts';

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

// A bound resource template is listed under a template of the endpoint's own naming too: its governed id, and the
// server template's variables as a query (`toolplane://resources/{id}{?a,b}`), so whatever the server's template looks
// like, a URI a client expands from it names the binding in its path and the variables in its query. A read of such a
// URI, or of a URI the server's own template expands to, reads the template with the variables as the arguments.

/** One entry of a resources/templates/list answer. */
export interface McpResourceTemplateEntry {
  readonly uriTemplate: string;
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  readonly mimeType?: string;
  readonly _meta: {
    readonly [mcpMetaKeys.resource]: {
      readonly resourceId: string;
      readonly serverUriTemplate: string;
      readonly classification: string;
      readonly knowledgeSource: string;
      readonly scope: string;
    };
  };
}

/** The variables of a server template, as the binding's arguments; none for a template that cannot be parsed (the registry binds none). */
function variablesOf(uriTemplate: string): readonly string[] {
  const parsed = parseUriTemplate(uriTemplate);
  return parsed.ok ? parsed.template.variables : [];
}

/** The template the endpoint lists a bound resource template under: its URI, with the variables as a query. */
export function exposedResourceTemplate(resourceId: string, serverUriTemplate: string): string {
  const variables = variablesOf(serverUriTemplate);
  return `${exposedResourceUri(resourceId)}${variables.length === 0 ? '' : `{?${variables.join(',')}}`}`;
}

/** An effective resource template as MCP lists it. */
export function toMcpResourceTemplate(template: EffectiveResourceTemplate): McpResourceTemplateEntry {
  return {
    uriTemplate: exposedResourceTemplate(template.resourceId, template.uriTemplate),
    name: template.name,
    ...(template.title === undefined ? {} : { title: template.title }),
    description: template.description,
    ...(template.mimeType === undefined ? {} : { mimeType: template.mimeType }),
    _meta: {
      [mcpMetaKeys.resource]: {
        resourceId: template.resourceId,
        serverUriTemplate: template.uriTemplate,
        classification: template.classification,
        knowledgeSource: template.knowledgeSource,
        scope: template.scope,
      },
    },
  };
}

/** What a resources/read of a URI reads: a bound resource, or a bound template with the variables the URI gives it. */
export interface ReadTarget {
  readonly resourceId: string;
  /** The template's variables (the read's arguments); none for a resource. */
  readonly variables: Readonly<Record<string, string>>;
  /** Whether it is a template, whose contents are answered under the URI asked for (a resource's under its listed URI). */
  readonly template: boolean;
}

/**
 * What a URI reads among the caller's resources and templates, most specific first: a template by the endpoint's
 * naming (its governed id is in the URI), a resource by its server URI, then a template whose server template the URI
 * expands (the first in the set's order, which is by governed id: two servers' templates may both match). Undefined
 * for a URI none of them names. A URI of the endpoint's naming without a query is resolved by `resourceIdOfUri` before
 * this, without the set: the pipeline decides whether the caller may read it.
 */
export function readTargetOf(
  uri: string,
  set: { readonly resources?: readonly EffectiveResource[] | undefined; readonly resourceTemplates?: readonly EffectiveResourceTemplate[] | undefined },
): ReadTarget | undefined {
  const templates = set.resourceTemplates ?? [];
  const matching = (written: (template: EffectiveResourceTemplate) => string): ReadTarget | undefined => {
    for (const template of templates) {
      const parsed = parseUriTemplate(written(template));
      const variables = parsed.ok ? parsed.template.match(uri) : undefined;
      if (variables !== undefined) return { resourceId: template.resourceId, variables, template: true };
    }
    return undefined;
  };
  const resource = (set.resources ?? []).find((candidate) => candidate.uri === uri);
  return (
    matching((template) => exposedResourceTemplate(template.resourceId, template.uriTemplate)) ??
    (resource === undefined ? undefined : { resourceId: resource.resourceId, variables: {}, template: false }) ??
    matching((template) => template.uriTemplate)
  );
}

/** The resource id an endpoint template (as resources/templates/list gives it) names, or undefined for any other text. */
export function resourceIdOfTemplate(uriTemplate: string): string | undefined {
  const query = uriTemplate.indexOf('{?');
  return resourceIdOfUri(query === -1 ? uriTemplate : uriTemplate.slice(0, query));
}
