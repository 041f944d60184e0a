import { ToolplaneError, mcpCapabilityOf, sha256Hex, type ToolDescriptor } from '@toolplane/contracts';
import { bindingFingerprint } from './descriptor-aggregate.js';

const MAX_TOOL_ID = 200;

/** The default governed id of a discovered tool: `{server name}.{tool name}`, unsafe characters replaced by `_`. */
export function defaultToolId(serverName: string, toolName: string): string {
  let segment = toolName.replace(/[^A-Za-z0-9_-]/g, '_');
  const room = MAX_TOOL_ID - serverName.length - 1;
  // A long name keeps a hash of the whole, so two long names that share a prefix stay apart.
  if (segment.length > room) segment = `${segment.slice(0, room - 13)}_${sha256Hex(toolName).slice(0, 12)}`;
  return `${serverName}.${segment}`;
}

/** The version a new binding of a tool id gets: one more than the highest numeric version it ever had. */
export function nextToolVersion(existing: readonly Pick<ToolDescriptor, 'toolVersion'>[]): string {
  let highest = 0;
  for (const { toolVersion } of existing) {
    const number = /^\d{1,9}$/.test(toolVersion) ? Number(toolVersion) : 0;
    if (number > highest) highest = number;
  }
  return String(highest + 1);
}

/** What a bind does given the descriptors that exist: reuse an identical active binding, or make a new version. */
export type BindPlan =
  | { readonly kind: 'Existing'; readonly descriptor: ToolDescriptor }
  | { readonly kind: 'New'; readonly toolVersion: string; readonly supersede: readonly ToolDescriptor[] };

/**
 * Plans a bind of one tool of one server under `toolId`. `sameTool` are the descriptors of this server's tool
 * (any id), `sameId` those of this tool id (any server or tool). An active binding of the id to another tool is a
 * CONFLICT; an active binding of this tool that governs the same way as `candidate` is reused (a retried bind).
 */
export function planBind(candidate: ToolDescriptor, sameTool: readonly ToolDescriptor[], sameId: readonly ToolDescriptor[]): BindPlan {
  const capability = mcpCapabilityOf(candidate);
  const other = sameId.find((d) => d.active && (d.mcpServerId !== candidate.mcpServerId || d.providerToolName !== candidate.providerToolName || mcpCapabilityOf(d) !== capability));
  if (other !== undefined) {
    throw new ToolplaneError('CONFLICT', `the id ${candidate.toolId} is bound to the ${mcpCapabilityOf(other)} ${other.providerToolName} of another server or item; choose another id`);
  }
  const active = sameTool.filter((d) => d.active);
  const fingerprint = bindingFingerprint(candidate);
  const same = active.find((d) => bindingFingerprint(d) === fingerprint);
  if (same !== undefined) return { kind: 'Existing', descriptor: same };
  return { kind: 'New', toolVersion: nextToolVersion(sameId), supersede: active };
}
