import { canonicalHash } from '@toolplane/contracts';
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
