import { canonicalHash, type InvocationCompletion, type JsonObject } from '@toolplane/contracts';

// Commits to what the hash is for, like the contracts' derived keys, so it is never mistaken for another hash.
const MCP_CALL_KEY_PURPOSE = 'toolplane/v1/mcp-call-key';

/** What identifies one MCP tools/call when the client names no idempotency key. */
export interface McpCallKeyInput {
  readonly tenant: string;
  readonly workspace: string;
  readonly agentId: string;
  readonly principal: string;
  /** The Mcp-Session-Id the client sent (the endpoint hands one out at initialize); absent for a client without. */
  readonly session: string | undefined;
  /** The JSON-RPC request id: an HTTP retry of the request repeats it, a new request of the session does not. */
  readonly requestId: string | number;
  readonly toolId: string;
  readonly arguments: JsonObject;
  /** A completion's argument and partial value (absent for any other call, whose key it leaves as it was). */
  readonly completion?: InvocationCompletion | undefined;
}

/**
 * The idempotency key of a tools/call the client gave none for: `mcp-` and the SHA-256 of the canonical JSON of who
 * calls, in which session, with which request id, which tool with which arguments (and, for a completion, which
 * argument and partial value). An HTTP retry of the same request (same session, id, tool and arguments) joins the
 * same call whichever replica answers it; a new request, a new session (JSON-RPC ids start over in each) or another
 * agent makes a new one.
 */
export function mcpCallKey(input: McpCallKeyInput): string {
  const { tenant, workspace, agentId, principal, session, requestId, toolId, arguments: args, completion } = input;
  return `mcp-${canonicalHash({ purpose: MCP_CALL_KEY_PURPOSE, tenant, workspace, agentId, principal, session: session ?? null, requestId, toolId, arguments: args, completion })}`;
}
