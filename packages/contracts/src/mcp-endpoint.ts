import { z } from 'zod';
import { ErrorCode } from './errors.js';
import { InvocationReceipt } from './invocation-receipt.js';
import { MAX_INVOCATION_TIMEOUT_MS } from './limits.js';
import { IdempotencyKey, ToolId, ToolVersion, Uuid } from './primitives.js';
import { RiskClass, SideEffectClass } from './classification.js';

// What the governed MCP endpoint reads from and writes into MCP `_meta` objects. MCP reserves unprefixed keys and
// the `modelcontextprotocol`/`mcp` labels; ours sit under one reverse-DNS prefix so no client or SDK key collides.

/** The `_meta` key prefix of every Toolplane field in MCP messages. */
export const MCP_META_PREFIX = 'dev.toolplane/';

/** The `_meta` keys the endpoint reads (requests) and writes (tools and results). */
export const mcpMetaKeys = {
  /** tools/call request: the caller's idempotency key; the same key always means the same call. */
  idempotencyKey: `${MCP_META_PREFIX}idempotencyKey`,
  /** tools/call request: how long the call may take, in milliseconds (the call's deadline at the adapter). */
  timeoutMs: `${MCP_META_PREFIX}timeoutMs`,
  /** tools/list entry: the governance facts of the tool. */
  tool: `${MCP_META_PREFIX}tool`,
  /**
   * resources/list (and resources/templates/list) entry: the governed id, the server's URI (template), the classification
   * and knowledge source of the resource.
   */
  resource: `${MCP_META_PREFIX}resource`,
  /** tools/call, resources/read and prompts/get result: the signed receipt of the call. */
  receipt: `${MCP_META_PREFIX}receipt`,
  /** tools/call result: that the content is untrusted tool data, never instructions. */
  provenance: `${MCP_META_PREFIX}provenance`,
  /** tools/call result: the call's idempotency key (to re-attach with). */
  call: `${MCP_META_PREFIX}call`,
  /** tools/call result: true when Toolplane cut or dropped content to keep the result within its bound (the blocks say where). */
  truncated: `${MCP_META_PREFIX}truncated`,
  /** tools/call result of a failed or refused call: its taxonomy code and message. */
  error: `${MCP_META_PREFIX}error`,
  /** tools/call result of a call that waits for a human: the approval and how to decide it. */
  approval: `${MCP_META_PREFIX}approval`,
} as const;

/** The HTTP header a caller may give a tools/call deadline in instead of `_meta` (milliseconds). */
export const MCP_TIMEOUT_HEADER = 'toolplane-timeout-ms';

/** The Toolplane fields a tools/call request may carry in `_meta`. */
export const McpCallRequestMeta = z.object({
  [mcpMetaKeys.idempotencyKey]: IdempotencyKey.optional(),
  [mcpMetaKeys.timeoutMs]: z.number().int().positive().max(MAX_INVOCATION_TIMEOUT_MS).optional(),
});
export type McpCallRequestMeta = z.infer<typeof McpCallRequestMeta>;

/** The governance facts a tools/list entry carries in `_meta`. */
export const McpToolMeta = z.strictObject({
  /** The governed tool id the listed (model-safe) name stands for; `tools/call` accepts either. */
  toolId: ToolId,
  toolVersion: ToolVersion,
  sideEffectClass: SideEffectClass,
  riskClass: RiskClass,
  requiresApproval: z.boolean(),
});
export type McpToolMeta = z.infer<typeof McpToolMeta>;

/** How a call is known to Toolplane: the key it runs under (repeat it in `_meta` to re-attach). */
export const McpCallMeta = z.strictObject({ idempotencyKey: IdempotencyKey });
export type McpCallMeta = z.infer<typeof McpCallMeta>;

/** A failed, refused or unsettled call, by the taxonomy. */
export const McpErrorMeta = z.strictObject({ code: ErrorCode, message: z.string().max(4096), retryable: z.boolean() });
export type McpErrorMeta = z.infer<typeof McpErrorMeta>;

/** A call parked until a human decides its approval. */
export const McpApprovalMeta = z.strictObject({
  approvalId: Uuid.optional(),
  /** The operator command that decides it. */
  decide: z.string().max(512),
});
export type McpApprovalMeta = z.infer<typeof McpApprovalMeta>;

/** The Toolplane fields of a tools/call result's `_meta`. */
export const McpCallResultMeta = z.strictObject({
  [mcpMetaKeys.call]: McpCallMeta,
  [mcpMetaKeys.provenance]: z.literal('untrusted-tool-data').optional(),
  [mcpMetaKeys.receipt]: InvocationReceipt.optional(),
  [mcpMetaKeys.error]: McpErrorMeta.optional(),
  [mcpMetaKeys.approval]: McpApprovalMeta.optional(),
  [mcpMetaKeys.truncated]: z.literal(true).optional(),
});
export type McpCallResultMeta = z.infer<typeof McpCallResultMeta>;
