import type { ToolplaneClient } from '@toolplane/client';
import { PromptContent, ResourceReadContent, ToolId, ToolplaneError, mcpMetaKeys, type InvocationResult, type JsonObject, type Scope } from '@toolplane/contracts';
import { mcpCallKey } from '../core/call-key.js';
import { exposedResourceUri, resourceIdOfUri, toMcpPrompt, toMcpResource, type McpPromptEntry, type McpResourceEntry } from '../core/read-mapping.js';
import type { Caller } from './authenticate.js';

/** One resources/read or prompts/get as the endpoint received it. */
export interface ReadRequest {
  readonly requestId: string | number;
  readonly session: string | undefined;
  readonly headerTimeoutMs: number | undefined;
}

/** The `_meta` of a read's answer: its signed receipt, and that the content is untrusted tool data. */
export type ReadMeta = Readonly<Record<string, unknown>>;

/** What a resources/read answers: the contents (under the URI the endpoint lists), and the receipt. */
export interface McpReadResult {
  readonly contents: ResourceReadContent['contents'];
  readonly _meta: ReadMeta;
}

/** What a prompts/get answers: the messages, and the receipt. */
export type McpPromptResult = PromptContent & { readonly _meta: ReadMeta };

/**
 * The MCP resource and prompt operations, each through the governed pipeline as the calling agent: the lists are the
 * adapter's effective resources and prompts; a read or a prompt fetch is the agent-runtime client's `readResource` or
 * `getPrompt` (the one pipeline: permission, policy, clearance, credentials, sanitization, events, receipt).
 */
export interface GovernedReads {
  listResources(caller: Caller, signal: AbortSignal): Promise<McpResourceEntry[]>;
  readResource(caller: Caller, uri: string, request: ReadRequest, signal: AbortSignal): Promise<McpReadResult>;
  listPrompts(caller: Caller, signal: AbortSignal): Promise<McpPromptEntry[]>;
  getPrompt(caller: Caller, name: string, args: Readonly<Record<string, string>>, request: ReadRequest, signal: AbortSignal): Promise<McpPromptResult>;
}

export interface GovernedReadsOptions {
  readonly clientFor: (scope: Scope) => Promise<ToolplaneClient>;
  readonly defaultTimeoutMs: number;
}

/** A read that found nothing to read: MCP's "resource not found" (-32002), or an unknown prompt. */
export class McpNotFound extends Error {
  /** The resource URI that was asked for (MCP's not-found error names it in `data.uri`); absent for a prompt. */
  readonly uri: string | undefined;
  constructor(message: string, uri?: string) {
    super(message);
    this.name = 'McpNotFound';
    this.uri = uri;
  }
}

function metaOf(result: InvocationResult): ReadMeta {
  return { [mcpMetaKeys.receipt]: result.receipt, [mcpMetaKeys.provenance]: result.provenance };
}

/** The content of a successful read, or the call's failure as a typed error (a read has no tool-error form). */
function contentOf(result: InvocationResult): JsonObject | undefined {
  if (result.status === 'SUCCESS') return result.structuredContent;
  const failure = result.receipt.failure ?? { code: 'INTERNAL' as const, message: `the read ended ${result.status}`, retryable: false };
  throw new ToolplaneError(failure.code, `${result.receipt.toolId} ended ${result.status}: ${failure.message}`, { retryable: failure.retryable });
}

/** Resources and prompts of the workspace for MCP clients, governed as tool calls are. */
export function governedReads(options: GovernedReadsOptions): GovernedReads {
  const { clientFor } = options;
  const keyOf = (caller: Caller, request: ReadRequest, toolId: string, args: JsonObject) =>
    mcpCallKey({
      tenant: caller.scope.tenant,
      workspace: caller.scope.workspace,
      agentId: caller.claims.agentId,
      principal: caller.claims.principal,
      session: request.session,
      requestId: request.requestId,
      toolId,
      arguments: args,
    });
  // The endpoint of flow-backed tools serves those tools alone: no resources, no prompts.
  const effective = async (caller: Caller, signal: AbortSignal) =>
    caller.surface === 'flows' ? { resources: [], prompts: [] } : (await clientFor(caller.scope)).effectiveTools({}, { contextToken: caller.token, signal });
  const served = (caller: Caller, what: string, name: string) => {
    if (caller.surface === 'flows') throw new McpNotFound(`no ${what} ${name.slice(0, 256)} is offered on the endpoint of flow-backed tools`);
  };

  return {
    async listResources(caller, signal) {
      return ((await effective(caller, signal)).resources ?? []).map(toMcpResource);
    },

    async readResource(caller, uri, request, signal) {
      served(caller, 'resource', uri);
      // The URI the endpoint lists, or the server's own URI of a resource the agent may read.
      const resourceId = resourceIdOfUri(uri) ?? ((await effective(caller, signal)).resources ?? []).find((resource) => resource.uri === uri)?.resourceId;
      if (resourceId === undefined) throw new McpNotFound(`no resource ${uri.slice(0, 256)} is offered to this agent`, uri.slice(0, 2048));
      const client = await clientFor(caller.scope);
      const result = await client.readResource(resourceId, {
        idempotencyKey: keyOf(caller, request, resourceId, {}),
        contextToken: caller.token,
        timeoutMs: request.headerTimeoutMs ?? options.defaultTimeoutMs,
        signal,
      });
      const content = ResourceReadContent.safeParse(contentOf(result));
      if (!content.success) {
        // Over the size bound, the structured form was dropped: the sanitized text is all there is.
        return { contents: [{ uri: exposedResourceUri(resourceId), mimeType: 'text/plain', text: result.textContent ?? '' }], _meta: metaOf(result) };
      }
      const listedUri = exposedResourceUri(resourceId);
      return { contents: content.data.contents.map((item) => ({ ...item, uri: listedUri })), _meta: metaOf(result) };
    },

    async listPrompts(caller, signal) {
      return ((await effective(caller, signal)).prompts ?? []).map(toMcpPrompt);
    },

    async getPrompt(caller, name, args, request, signal) {
      served(caller, 'prompt', name);
      // Listed under its governed id: the pipeline decides whether the agent may fetch it (as tools/call does).
      if (!ToolId.safeParse(name).success) throw new McpNotFound(`no prompt ${name.slice(0, 256)} is offered to this agent`);
      const client = await clientFor(caller.scope);
      const result = await client.getPrompt(name, args, {
        idempotencyKey: keyOf(caller, request, name, { ...args }),
        contextToken: caller.token,
        timeoutMs: request.headerTimeoutMs ?? options.defaultTimeoutMs,
        signal,
      });
      const content = PromptContent.safeParse(contentOf(result));
      if (!content.success) return { messages: [{ role: 'user', content: { type: 'text', text: result.textContent ?? '' } }], _meta: metaOf(result) };
      return { ...content.data, _meta: metaOf(result) };
    },
  };
}
