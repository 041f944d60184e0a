import type { ToolplaneClient } from '@toolplane/client';
import {
  CompletionContent,
  MAX_COMPLETION_VALUE_CHARS,
  MAX_COMPLETION_VALUES,
  PromptContent,
  ResourceReadContent,
  ToolId,
  ToolplaneError,
  mcpMetaKeys,
  type EffectiveResourceTemplate,
  type ErrorCode,
  type InvocationCompletion,
  type InvocationResult,
  type JsonObject,
  type Scope,
} from '@toolplane/contracts';
import { mcpCallKey } from '../core/call-key.js';
import {
  exposedResourceUri,
  readTargetOf,
  resourceIdOfTemplate,
  resourceIdOfUri,
  toMcpPrompt,
  toMcpResource,
  toMcpResourceTemplate,
  type McpPromptEntry,
  type McpResourceEntry,
  type McpResourceTemplateEntry,
  type ReadTarget,
} from '../core/read-mapping.js';
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
  /** The caller's bound resource templates, each under the endpoint's template of its governed id (see read-mapping.ts). */
  listResourceTemplates(caller: Caller, signal: AbortSignal): Promise<McpResourceTemplateEntry[]>;
  /** A read of a bound resource, or of a URI one of the caller's bound templates expands to (with its variables). */
  readResource(caller: Caller, uri: string, request: ReadRequest, signal: AbortSignal): Promise<McpReadResult>;
  listPrompts(caller: Caller, signal: AbortSignal): Promise<McpPromptEntry[]>;
  getPrompt(caller: Caller, name: string, args: Readonly<Record<string, string>>, request: ReadRequest, signal: AbortSignal): Promise<McpPromptResult>;
  /** completion/complete of a prompt's (or resource template's) argument, through the pipeline as its fetch (or read) would be. */
  complete(caller: Caller, completion: CompletionRequest, request: ReadRequest, signal: AbortSignal): Promise<McpCompletionResult>;
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

/** One completion/complete as the endpoint received it: what it completes, the argument and partial value, the others. */
export interface CompletionRequest {
  readonly ref: { readonly type: 'ref/prompt'; readonly name: string } | { readonly type: 'ref/resource'; readonly uri: string };
  readonly argument: InvocationCompletion['argument'];
  /** The arguments already chosen (`context.arguments`). */
  readonly context: Readonly<Record<string, string>>;
}

/** What a completion/complete answers: the values (at most 100), and the receipt. */
export interface McpCompletionResult {
  readonly completion: CompletionContent['completion'];
  readonly _meta: ReadMeta;
}

/**
 * A completion the caller cannot have: an item it is not offered, an argument the item does not have, or one its policy
 * refuses. MCP answers each as invalid params (-32602); `code` is the taxonomy's reason (NOT_FOUND, INVALID_ARGUMENT,
 * AUTHORIZATION_DENIED), which the endpoint's metrics count it by.
 */
export class McpInvalidReference extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'McpInvalidReference';
    this.code = code;
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

/** The failures of a completion that mean the caller cannot complete that argument of that item: invalid params. */
const refusedCompletion: ReadonlySet<ErrorCode> = new Set(['NOT_FOUND', 'INVALID_ARGUMENT', 'AUTHORIZATION_DENIED']);

/**
 * The values of a completion's result. A denial for an item not offered, an argument it lacks or a policy refusal is
 * McpInvalidReference (NOT_FOUND says no more than that the item is not offered); any other failure is typed, as a
 * read's. The structured form is always within the result bound (the adapter bounds the values to fit it twice); should
 * it be missing anyway, the values are the lines of the text view.
 */
function completionOf(result: InvocationResult, what: string): CompletionContent['completion'] {
  const failure = result.receipt.failure;
  if (result.status !== 'SUCCESS' && failure !== undefined && refusedCompletion.has(failure.code)) {
    throw new McpInvalidReference(failure.code, failure.code === 'NOT_FOUND' ? `no ${what} is offered to this agent` : failure.message);
  }
  const content = CompletionContent.safeParse(contentOf(result));
  if (content.success) return content.data.completion;
  const lines = (result.textContent ?? '').split('\n').filter((line) => line !== '' && line.length <= MAX_COMPLETION_VALUE_CHARS);
  return { values: lines.slice(0, MAX_COMPLETION_VALUES), hasMore: true };
}

/** What a completion completes: the governed id, what it binds, and how a refusal names it. */
interface CompletionTarget {
  readonly id: string;
  readonly capability: 'prompt' | 'resource';
  readonly what: string;
}

/**
 * The governed id a completion's reference names: a prompt by the name it is listed under (its governed id); a bound
 * resource template by the template it is listed under (`resources/templates/list`), or by its server's own template
 * among the caller's (`templates`, asked only then). The pipeline decides whether the caller may complete it.
 */
async function completionTargetOf(ref: CompletionRequest['ref'], templates: () => Promise<readonly EffectiveResourceTemplate[]>): Promise<CompletionTarget | undefined> {
  if (ref.type === 'ref/prompt') return ToolId.safeParse(ref.name).success ? { id: ref.name, capability: 'prompt', what: `prompt ${ref.name}` } : undefined;
  const id = resourceIdOfTemplate(ref.uri) ?? (await templates()).find((template) => template.uriTemplate === ref.uri)?.resourceId;
  return id === undefined ? undefined : { id, capability: 'resource', what: describeRef(ref) };
}

/** What a completion's reference is called in a refusal (bounded: it is the client's text). */
function describeRef(ref: CompletionRequest['ref']): string {
  return ref.type === 'ref/prompt' ? `prompt ${ref.name.slice(0, 256)}` : `resource template ${ref.uri.slice(0, 256)}`;
}

/** Resources and prompts of the workspace for MCP clients, governed as tool calls are. */
export function governedReads(options: GovernedReadsOptions): GovernedReads {
  const { clientFor } = options;
  const keyOf = (caller: Caller, request: ReadRequest, toolId: string, args: JsonObject, completion?: InvocationCompletion) =>
    mcpCallKey({
      tenant: caller.scope.tenant,
      workspace: caller.scope.workspace,
      agentId: caller.claims.agentId,
      principal: caller.claims.principal,
      session: request.session,
      requestId: request.requestId,
      toolId,
      arguments: args,
      completion,
    });
  // The endpoint of flow-backed tools serves those tools alone: no resources, no prompts.
  const effective = async (caller: Caller, signal: AbortSignal) =>
    caller.surface === 'flows' ? { resources: [], resourceTemplates: [], prompts: [] } : (await clientFor(caller.scope)).effectiveTools({}, { contextToken: caller.token, signal });
  /**
   * What a URI reads: a resource by the URI the endpoint lists it under (the pipeline decides whether the caller may
   * read it), else a resource or template of the caller's effective set the URI names (read-mapping.ts); MCP's
   * resource-not-found otherwise.
   */
  const readTarget = async (caller: Caller, uri: string, signal: AbortSignal): Promise<ReadTarget> => {
    const listed = resourceIdOfUri(uri);
    const target = listed === undefined ? readTargetOf(uri, await effective(caller, signal)) : { resourceId: listed, variables: {}, template: false };
    if (target === undefined) throw new McpNotFound(`no resource ${uri.slice(0, 256)} is offered to this agent`, uri.slice(0, 2048));
    return target;
  };
  const served = (caller: Caller, what: string, name: string) => {
    if (caller.surface === 'flows') throw new McpNotFound(`no ${what} ${name.slice(0, 256)} is offered on the endpoint of flow-backed tools`);
  };

  return {
    async listResources(caller, signal) {
      return ((await effective(caller, signal)).resources ?? []).map(toMcpResource);
    },

    async listResourceTemplates(caller, signal) {
      return ((await effective(caller, signal)).resourceTemplates ?? []).map(toMcpResourceTemplate);
    },

    async readResource(caller, uri, request, signal) {
      served(caller, 'resource', uri);
      const { resourceId, variables, template } = await readTarget(caller, uri, signal);
      const client = await clientFor(caller.scope);
      const result = await client.readResource(resourceId, {
        variables,
        idempotencyKey: keyOf(caller, request, resourceId, { ...variables }),
        contextToken: caller.token,
        timeoutMs: request.headerTimeoutMs ?? options.defaultTimeoutMs,
        signal,
      });
      const content = ResourceReadContent.safeParse(contentOf(result));
      if (!content.success) {
        // Over the size bound, the structured form was dropped: the sanitized text is all there is.
        return { contents: [{ uri: template ? uri : exposedResourceUri(resourceId), mimeType: 'text/plain', text: result.textContent ?? '' }], _meta: metaOf(result) };
      }
      const listedUri = template ? uri : exposedResourceUri(resourceId);
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

    async complete(caller, completion, request, signal) {
      const target = caller.surface === 'flows' ? undefined : await completionTargetOf(completion.ref, async () => (await effective(caller, signal)).resourceTemplates ?? []);
      if (target === undefined) throw new McpInvalidReference('NOT_FOUND', `no ${describeRef(completion.ref)} is offered to this agent`);
      // Governed as the item's fetch is: the pipeline decides whether the agent may have it, and records the call.
      const client = await clientFor(caller.scope);
      const result = await client.complete(target.id, completion.argument, {
        capability: target.capability,
        context: completion.context,
        idempotencyKey: keyOf(caller, request, target.id, { ...completion.context }, { argument: completion.argument }),
        contextToken: caller.token,
        timeoutMs: request.headerTimeoutMs ?? options.defaultTimeoutMs,
        signal,
      });
      return { completion: completionOf(result, target.what), _meta: metaOf(result) };
    },
  };
}
