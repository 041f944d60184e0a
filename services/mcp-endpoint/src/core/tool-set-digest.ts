import { canonicalHash } from '@toolplane/contracts';
import type { McpPromptEntry, McpResourceEntry, McpResourceTemplateEntry } from './read-mapping.js';
import type { McpToolEntry } from './tool-mapping.js';

/**
 * What a client's view of its tools depends on, as one hash: every listed tool's name, title, description, input
 * schema, hints and governance facts, in name order. Two lists that a client would render the same hash the same;
 * a change of any of those (a tool bound or unbound, a schema, a side-effect class raised) changes it, so a
 * `notifications/tools/list_changed` is sent exactly when tools/list would answer differently.
 */
export function toolSetDigest(tools: readonly McpToolEntry[]): string {
  const ordered = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return canonicalHash(ordered.map(({ name, title, description, inputSchema, annotations, _meta }) => ({ name, title: title ?? null, description, inputSchema, annotations, _meta })));
}

/** The lists an MCP client may be told have changed. */
export type McpListKind = 'tools' | 'resources' | 'prompts';

/** What tools/list, resources/list (and resources/templates/list) and prompts/list answer a caller (one effective set, mapped). */
export interface McpLists {
  readonly tools: readonly McpToolEntry[];
  readonly resources: readonly McpResourceEntry[];
  /** MCP announces a change of the templates as one of the resources (`notifications/resources/list_changed`). */
  readonly resourceTemplates?: readonly McpResourceTemplateEntry[];
  readonly prompts: readonly McpPromptEntry[];
}

/** One digest per list, each as `toolSetDigest` is for tools: equal exactly when the list would answer the same. */
export type ListDigests = Readonly<Record<McpListKind, string>>;

function byKey<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** The resources' digest; the templates' are in it only when there are any, so a list without templates hashes as before. */
function resourcesDigest(lists: McpLists): string {
  const resources = byKey(lists.resources, (resource) => resource.uri).map(({ uri, name, title, description, mimeType, _meta }) => ({
    uri,
    name,
    title: title ?? null,
    description,
    mimeType: mimeType ?? null,
    _meta,
  }));
  const templates = byKey(lists.resourceTemplates ?? [], (template) => template.uriTemplate).map(({ uriTemplate, name, title, description, mimeType, _meta }) => ({
    uriTemplate,
    name,
    title: title ?? null,
    description,
    mimeType: mimeType ?? null,
    _meta,
  }));
  return canonicalHash(templates.length === 0 ? resources : { resources, templates });
}

/** The digests of a caller's three lists. */
export function listDigests(lists: McpLists): ListDigests {
  return {
    tools: toolSetDigest(lists.tools),
    resources: resourcesDigest(lists),
    prompts: canonicalHash(
      byKey(lists.prompts, (prompt) => prompt.name).map(({ name, title, description, arguments: args }) => ({
        name,
        title: title ?? null,
        description,
        arguments: args.map((argument) => ({ name: argument.name, description: argument.description ?? null, required: argument.required })),
      })),
    ),
  };
}

/** The lists whose digest moved (every list when nothing was seen before). */
export function changedLists(before: ListDigests | undefined, after: ListDigests): McpListKind[] {
  return (['tools', 'resources', 'prompts'] as const).filter((kind) => before?.[kind] !== after[kind]);
}
