import { ToolId, mcpMetaKeys, type EffectiveTool, type JsonObject, type McpToolMeta, type SideEffectClass } from '@toolplane/contracts';


/** The MCP behaviour hints of a tool (untrusted by clients: they describe, they do not enforce). */
export interface McpToolAnnotations {
  readonly title?: string;
  readonly readOnlyHint: boolean;
  readonly destructiveHint?: boolean;
  readonly idempotentHint?: boolean;
  readonly openWorldHint?: boolean;
}

/** One entry of a tools/list answer. */
export interface McpToolEntry {
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  readonly inputSchema: JsonObject & { readonly type: 'object' };
  readonly outputSchema?: JsonObject;
  readonly annotations: McpToolAnnotations;
  readonly _meta: { readonly [mcpMetaKeys.tool]: McpToolMeta };
}

/**
 * The MCP name of a tool: the effective set's model-safe name, `^[A-Za-z0-9_-]{1,64}$` (the alphabet and length
 * OpenAI's and Anthropic's function names accept, so a client can hand it to a model as it is): the tool id with its
 * dots as `__` (`everything__echo`), or, when that is too long or taken in the set, cut and ending in a hash of the id.
 * Unique in the caller's set, and the same for the same set whenever it is computed. The governed id is in `_meta`.
 */
export function mcpToolName(tool: Pick<EffectiveTool, 'name'>): string {
  return tool.name;
}

/**
 * The toolId an MCP name stands for when the name says it by itself: a governed id (`everything.echo`, dotted, which
 * no listed name is) goes straight to the pipeline, which decides whether the agent may call it. Undefined for a
 * listed name: look it up in what the caller was listed.
 */
export function toolIdOfName(name: string): string | undefined {
  return name.includes('.') && ToolId.safeParse(name).success ? name : undefined;
}

// Hints from the effective side-effect class (the declared one raised by policy, never lowered). WRITE and
// EXTERNAL_COMMUNICATION add or send rather than destroy; the other non-read classes may destroy. Only a read is known
// to be idempotent; only external communication and code execution are known to reach an open world (MCP's default
// for an absent openWorldHint is true, so absence claims nothing).
const destructive: Record<Exclude<SideEffectClass, 'READ'>, boolean> = {
  WRITE: false,
  EXTERNAL_COMMUNICATION: false,
  DESTRUCTIVE: true,
  CODE_EXECUTION: true,
  PRIVILEGED: true,
};

/** The MCP hints of a side-effect class. */
export function annotationsOf(sideEffectClass: SideEffectClass, title: string | undefined): McpToolAnnotations {
  const openWorld = sideEffectClass === 'EXTERNAL_COMMUNICATION' || sideEffectClass === 'CODE_EXECUTION' ? { openWorldHint: true } : {};
  const named = title === undefined ? {} : { title };
  if (sideEffectClass === 'READ') return { ...named, readOnlyHint: true, idempotentHint: true, ...openWorld };
  return { ...named, readOnlyHint: false, destructiveHint: destructive[sideEffectClass], ...openWorld };
}

/** A tool of the agent's effective set as an MCP tools/list entry. */
export function toMcpTool(tool: EffectiveTool): McpToolEntry {
  return {
    name: mcpToolName(tool),
    ...(tool.title === undefined ? {} : { title: tool.title }),
    description: tool.description,
    // MCP requires an object schema at the top; tool arguments are an object whatever the descriptor says (the
    // adapter still validates them against the descriptor's own schema).
    inputSchema: { ...tool.inputSchema, type: 'object' },
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
    annotations: annotationsOf(tool.sideEffectClass, tool.title),
    _meta: {
      [mcpMetaKeys.tool]: { toolId: tool.toolId, toolVersion: tool.toolVersion, sideEffectClass: tool.sideEffectClass, riskClass: tool.riskClass, requiresApproval: tool.requiresApproval },
    },
  };
}
