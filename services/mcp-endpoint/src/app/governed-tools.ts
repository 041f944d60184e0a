import type { ToolplaneClient } from '@toolplane/client';
import { McpCallRequestMeta, ToolplaneError, hasErrorCode, isFlowToolId, mcpMetaKeys, sleep, type JsonObject, type Scope } from '@toolplane/contracts';
import { mcpCallKey } from '../core/call-key.js';
import { resultOfFailure, resultOfInvocation, resultOfPendingApproval, type McpCallToolResult } from '../core/call-result.js';
import { paramHeadersOf, type ParamHeader } from '../core/param-headers.js';
import { toMcpPrompt, toMcpResource, toMcpResourceTemplate } from '../core/read-mapping.js';
import { mcpToolName, toMcpTool, toolIdOfName, type McpToolEntry } from '../core/tool-mapping.js';
import type { McpLists } from '../core/tool-set-digest.js';
import type { Caller } from './authenticate.js';
import type { ToolNames } from './tool-names.js';

/** A problem with the MCP request itself (not with the call): answered as a JSON-RPC error, never as a tool result. */
export class McpProtocolError extends Error {
  readonly kind: 'invalid_params';
  constructor(message: string) {
    super(message);
    this.name = 'McpProtocolError';
    this.kind = 'invalid_params';
  }
}

/** One tools/call as the endpoint received it. */
export interface ToolCall {
  readonly name: string;
  readonly arguments: JsonObject;
  /** The request's `_meta` (the client's idempotency key and deadline may be in it). */
  readonly meta: Record<string, unknown> | undefined;
  readonly requestId: string | number;
  readonly session: string | undefined;
  /** A deadline from the `Toolplane-Timeout-Ms` header, when given. */
  readonly headerTimeoutMs: number | undefined;
}

/** The MCP tool operations, each through the governed pipeline as the calling agent. */
export interface GovernedTools {
  list(caller: Caller, signal: AbortSignal): Promise<McpToolEntry[]>;
  /** The caller's tools, resources and prompts as MCP lists them, from one effective set (what a stream compares). */
  lists(caller: Caller, signal: AbortSignal): Promise<McpLists>;
  call(caller: Caller, call: ToolCall, signal: AbortSignal): Promise<McpCallToolResult>;
  /**
   * The `Mcp-Param-*` headers a 2026-07-28 call of `name` (a listed name or a governed id) must carry, as the input
   * schema the caller is listed declares them: from what it was last listed, else from its set now. None for a tool
   * it is not offered (the call answers that) or whose declarations are invalid.
   */
  paramHeaders(caller: Caller, name: string, signal: AbortSignal): Promise<readonly ParamHeader[]>;
}

export interface GovernedToolsOptions {
  /** The client of a workspace (one per scope, shared by every agent of it; each request carries its own token). */
  readonly clientFor: (scope: Scope) => Promise<ToolplaneClient>;
  readonly defaultTimeoutMs: number;
  /** How long a call runs before the endpoint looks whether it waits for an approval. */
  readonly approvalProbeMs: number;
  /** What each caller was last listed, to find a listed name's tool id. */
  readonly names: ToolNames;
}

/** Why a call's probe stops: it has its answer (one reason for all, which abortError passes on as it is: no DOMException and no error is built per call). */
const callSettled = new ToolplaneError('CANCELLED', 'the call has its answer');

/** The delays between approval probes: starting at the probe delay, doubling up to two seconds. */
function probeDelays(firstMs: number): () => number {
  let next = firstMs;
  return () => {
    const delay = next;
    next = Math.min(next * 2, 2_000);
    return delay;
  };
}

/** The headers a tool's valid `x-mcp-header` declarations ask for; none when they are invalid (nothing is checked then). */
function declaredParamHeaders(inputSchema: JsonObject): readonly ParamHeader[] {
  const declared = paramHeadersOf(inputSchema);
  return declared.valid ? declared.headers : [];
}

/** Whether a tool is served where the caller came in: the flows endpoint serves the workspace's flow-backed tools alone. */
function onSurface(caller: Caller, toolId: string): boolean {
  return caller.surface !== 'flows' || isFlowToolId(toolId);
}

/**
 * tools/list and tools/call as use cases: the list is the adapter's effective set for the agent, mapped to MCP; a
 * call is `invoke` of the agent-runtime client (the one pipeline), with the client's idempotency key or a key derived
 * from the request, the request's deadline, and the request's cancellation as its signal.
 */
export function governedTools(options: GovernedToolsOptions): GovernedTools {
  const { clientFor, names } = options;

  /** The caller's tools as MCP lists them, remembering each listed name's tool id. */
  const listed = async (caller: Caller, signal: AbortSignal) => {
    const client = await clientFor(caller.scope);
    const set = await client.effectiveTools({}, { contextToken: caller.token, signal });
    const tools = set.tools.filter((tool) => onSurface(caller, tool.toolId));
    names.remember(caller, tools.map((tool) => ({ name: mcpToolName(tool), toolId: tool.toolId, paramHeaders: declaredParamHeaders(tool.inputSchema) })));
    return { set, tools: tools.map(toMcpTool) };
  };

  // A governed id says itself; a listed name is looked up in what the caller was last listed, else in its set now.
  const resolveToolId = async (caller: Caller, name: string, signal: AbortSignal): Promise<string | undefined> => {
    const known = toolIdOfName(name) ?? names.toolIdOf(caller, name);
    if (known !== undefined) return known;
    await listed(caller, signal);
    return names.toolIdOf(caller, name);
  };

  /** Resolves when the call is seen waiting for an approval (with its id); never otherwise. */
  const awaitingApproval = async (client: ToolplaneClient, caller: Caller, key: string, signal: AbortSignal): Promise<{ approvalId: string | undefined }> => {
    const delay = probeDelays(options.approvalProbeMs);
    for (;;) {
      await sleep(delay(), signal, 'waiting for the call');
      try {
        const found = await client.lookup(key, { contextToken: caller.token, signal });
        if (found.state === 'AwaitingApproval') return { approvalId: found.approvalId };
      } catch (error) {
        // Not recorded yet, or the adapter busy: the call itself answers; probing is only a shortcut.
        if (signal.aborted) throw error;
      }
    }
  };

  return {
    async list(caller, signal) {
      return (await listed(caller, signal)).tools;
    },

    async paramHeaders(caller, name, signal) {
      const known = names.paramHeadersOf(caller, name);
      if (known !== undefined) return known;
      await listed(caller, signal);
      return names.paramHeadersOf(caller, name) ?? [];
    },

    async lists(caller, signal) {
      const { set, tools } = await listed(caller, signal);
      // The endpoint of flow-backed tools serves those tools alone: no resources, no prompts.
      if (caller.surface === 'flows') return { tools, resources: [], prompts: [] };
      return {
        tools,
        resources: (set.resources ?? []).map(toMcpResource),
        resourceTemplates: (set.resourceTemplates ?? []).map(toMcpResourceTemplate),
        prompts: (set.prompts ?? []).map(toMcpPrompt),
      };
    },

    async call(caller, call, signal) {
      const meta = McpCallRequestMeta.safeParse(call.meta ?? {});
      if (!meta.success) throw new McpProtocolError(`invalid _meta: ${meta.error.issues.map((issue) => `${issue.path.map(String).join('.')}: ${issue.message}`).join('; ')}`);
      const toolId = await resolveToolId(caller, call.name, signal);
      const given = meta.data[mcpMetaKeys.idempotencyKey];
      const key =
        given ??
        mcpCallKey({
          tenant: caller.scope.tenant,
          workspace: caller.scope.workspace,
          agentId: caller.claims.agentId,
          principal: caller.claims.principal,
          session: call.session,
          requestId: call.requestId,
          toolId: toolId ?? call.name,
          arguments: call.arguments,
        });
      if (toolId === undefined || !onSurface(caller, toolId)) {
        const where = caller.surface === 'flows' ? ' on the endpoint of flow-backed tools' : '';
        return resultOfFailure({ code: 'NOT_FOUND', message: `no tool ${call.name} is offered to this agent${where}`, retryable: false }, key);
      }
      const timeoutMs = meta.data[mcpMetaKeys.timeoutMs] ?? call.headerTimeoutMs ?? options.defaultTimeoutMs;

      const client = await clientFor(caller.scope);
      // The probe and the invoke's wait end together: whichever answers first, the other stops.
      const settled = new AbortController();
      const work = AbortSignal.any([signal, settled.signal]);
      const invoked = client.invoke(toolId, call.arguments, { idempotencyKey: key, contextToken: caller.token, timeoutMs, signal: work, capability: 'tool' });
      const parked = awaitingApproval(client, caller, key, work);
      invoked.catch(() => undefined);
      parked.catch(() => undefined);
      try {
        const outcome = await Promise.race([invoked.then((result) => ({ kind: 'ended' as const, result })), parked.then((approval) => ({ kind: 'parked' as const, approval }))]);
        return outcome.kind === 'ended' ? resultOfInvocation(outcome.result, key) : resultOfPendingApproval(outcome.approval.approvalId, key);
      } catch (error) {
        // The client's own cancellation is not an answer: the SDK answers a cancelled request (or not at all).
        if (signal.aborted) throw error;
        if (hasErrorCode(error)) return resultOfFailure({ code: error.code, message: error.message, retryable: error.retryable, details: (error as { details?: Record<string, unknown> }).details }, key);
        throw error;
      } finally {
        settled.abort(callSettled);
      }
    },
  };
}

/** A JSON-RPC error message for a failure of tools/list (it has no tool-error form): the taxonomy code and message. */
export function listFailureMessage(error: unknown): string {
  return hasErrorCode(error) ? `${error.code}: ${error.message}` : 'INTERNAL: internal error';
}
