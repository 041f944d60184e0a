import { ToolId, mcpMetaKeys, type EffectiveTool, type JsonObject, type McpToolMeta, type SideEffectClass } from '@toolplane/contracts';

/** MCP tool names (protocol 2025-11-25): 1-128 of letters, digits, `_`, `-` and `.`, case-sensitive. */
const MCP_TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

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
  readonly annotations: McpToolAnnotations;
  readonly _meta: { readonly [mcpMetaKeys.tool]: McpToolMeta };
}

/**
 * The MCP name of a tool: its toolId (`server.tool`, unique in the workspace, so names from two servers never
 * collide), or, for an id longer than MCP allows, the effective set's model-safe name (which ends in a hash of it).
 */
export function mcpToolName(tool: Pick<EffectiveTool, 'toolId' | 'name'>): string {
  return MCP_TOOL_NAME.test(tool.toolId) ? tool.toolId : tool.name;
}

/**
 * The toolId an MCP name stands for, when the name says it by itself (every name but a long id's): a tools/call then
 * goes straight to the pipeline, which decides whether the agent may call it. Undefined: look it up in the set.
 */
export function toolIdOfName(name: string): string | undefined {
  return MCP_TOOL_NAME.test(name) && ToolId.safeParse(name).success ? name : undefined;
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
    annotations: annotationsOf(tool.sideEffectClass, tool.title),
    _meta: {
      [mcpMetaKeys.tool]: { toolVersion: tool.toolVersion, sideEffectClass: tool.sideEffectClass, riskClass: tool.riskClass, requiresApproval: tool.requiresApproval },
    },
  };
}
