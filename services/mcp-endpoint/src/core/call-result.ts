import { mcpMetaKeys, type ErrorCode, type InvocationResult, type JsonObject, type McpCallResultMeta, type ToolContentBlock } from '@toolplane/contracts';

/** A tools/call answer as MCP carries it. */
export interface McpCallToolResult {
  readonly content: readonly ToolContentBlock[];
  readonly structuredContent?: JsonObject;
  readonly isError?: boolean;
  readonly _meta: McpCallResultMeta;
}

/** A failure that left no result: what the pipeline refused or the wait gave up on, by the taxonomy. */
export interface CallFailure {
  readonly code: ErrorCode;
  readonly message: string;
  readonly retryable: boolean;
  readonly details?: Record<string, unknown> | undefined;
}

/** The operator command that approves a parked call. */
export function approveCommand(approvalId: string | undefined): string {
  return `toolplane approvals approve ${approvalId ?? '<approval id>'}`;
}

/** The content blocks of a successful result: the tool's own (sanitized), else its text, else its structured content as JSON text. */
function contentOf(result: InvocationResult): readonly ToolContentBlock[] {
  if (result.content !== undefined && result.content.length > 0) return result.content;
  const text = result.textContent ?? (result.structuredContent === undefined ? undefined : JSON.stringify(result.structuredContent));
  return text === undefined ? [] : [{ type: 'text', text }];
}

/**
 * The MCP answer of a call that ended: on SUCCESS the tool's content blocks (text, images, audio, resource links,
 * embedded resources, with their annotations) and structured content, as the adapter sanitized them; otherwise a tool
 * error (`isError`) whose text starts with the taxonomy code; both with the signed receipt.
 */
export function resultOfInvocation(result: InvocationResult, idempotencyKey: string): McpCallToolResult {
  const meta = {
    [mcpMetaKeys.call]: { idempotencyKey },
    [mcpMetaKeys.provenance]: result.provenance,
    [mcpMetaKeys.receipt]: result.receipt,
    ...(result.truncated ? { [mcpMetaKeys.truncated]: true as const } : {}),
  };
  if (result.status === 'SUCCESS') {
    return {
      content: contentOf(result),
      ...(result.structuredContent === undefined ? {} : { structuredContent: result.structuredContent }),
      _meta: meta,
    };
  }
  // The schema guarantees every other ending has a failure; a fallback keeps the answer well-formed regardless.
  const failure = result.receipt.failure ?? { code: 'INTERNAL' as const, message: `the call ended ${result.status}`, retryable: false };
  return {
    content: [{ type: 'text', text: `${failure.code}: ${failure.message}` }],
    isError: true,
    _meta: { ...meta, [mcpMetaKeys.error]: { code: failure.code, message: failure.message, retryable: failure.retryable } },
  };
}

/** The MCP answer of a call that waits for a human: a tool error naming the approval, how to decide it, how to re-attach. */
export function resultOfPendingApproval(approvalId: string | undefined, idempotencyKey: string): McpCallToolResult {
  const decide = approveCommand(approvalId);
  const text =
    `APPROVAL_PENDING: the call awaits a human approval${approvalId === undefined ? '' : ` (approval ${approvalId})`}. ` +
    `An approver decides it with \`${decide}\` (or \`toolplane approvals reject …\`); the call then runs once. ` +
    `Repeat this request with _meta {"${mcpMetaKeys.idempotencyKey}": "${idempotencyKey}"} for its result.`;
  return {
    content: [{ type: 'text', text }],
    isError: true,
    _meta: {
      [mcpMetaKeys.call]: { idempotencyKey },
      [mcpMetaKeys.error]: { code: 'APPROVAL_PENDING', message: 'the call awaits a human approval', retryable: true },
      [mcpMetaKeys.approval]: { ...(approvalId === undefined ? {} : { approvalId }), decide },
    },
  };
}

/** The MCP answer of a call that has no result: a tool error with the taxonomy code (APPROVAL_PENDING names its approval). */
export function resultOfFailure(failure: CallFailure, idempotencyKey: string): McpCallToolResult {
  if (failure.code === 'APPROVAL_PENDING') {
    const approvalId = failure.details?.['approvalId'];
    return resultOfPendingApproval(typeof approvalId === 'string' ? approvalId : undefined, idempotencyKey);
  }
  const message = failure.message.slice(0, 4096);
  return {
    content: [{ type: 'text', text: `${failure.code}: ${message}` }],
    isError: true,
    _meta: { [mcpMetaKeys.call]: { idempotencyKey }, [mcpMetaKeys.error]: { code: failure.code, message, retryable: failure.retryable } },
  };
}
