// The shapes this package hands out: plain data, independent of the SDK's types, so no other workspace needs
// (or may take) a dependency on the SDK.

/** A JSON object as a server sent it. */
export type JsonRecord = Record<string, unknown>;

/** A list a server may announce has changed (`notifications/<list>/list_changed`). */
export type McpList = 'tools' | 'resources' | 'prompts';

/** Name and version a server (or this client) reports in the handshake. */
export interface McpImplementation {
  readonly name: string;
  readonly version: string;
  readonly title?: string | undefined;
}

/** A tool as a server lists it. */
export interface McpTool {
  readonly name: string;
  readonly title?: string | undefined;
  readonly description?: string | undefined;
  /** JSON Schema of the arguments (`type: "object"`). */
  readonly inputSchema: JsonRecord;
  /** JSON Schema of `structuredContent`, when the tool declares one. */
  readonly outputSchema?: JsonRecord | undefined;
  /** Hints (readOnlyHint, destructiveHint, idempotentHint, openWorldHint, title); hints, never guarantees. */
  readonly annotations?: JsonRecord | undefined;
}

/** A resource as a server lists it. */
export interface McpResource {
  readonly uri: string;
  readonly name: string;
  readonly title?: string | undefined;
  readonly description?: string | undefined;
  readonly mimeType?: string | undefined;
  readonly size?: number | undefined;
}

/** A resource template (RFC 6570 `uriTemplate`) as a server lists it. */
export interface McpResourceTemplate {
  readonly uriTemplate: string;
  readonly name: string;
  readonly title?: string | undefined;
  readonly description?: string | undefined;
  readonly mimeType?: string | undefined;
}

/** One argument of a prompt. */
export interface McpPromptArgument {
  readonly name: string;
  readonly description?: string | undefined;
  readonly required?: boolean | undefined;
}

/** A prompt as a server lists it. */
export interface McpPrompt {
  readonly name: string;
  readonly title?: string | undefined;
  readonly description?: string | undefined;
  readonly arguments?: readonly McpPromptArgument[] | undefined;
}

/**
 * How a server said a content block is meant to be used (MCP `Annotations`): hints for a runtime deciding what to
 * show whom, never instructions.
 */
export interface McpContentAnnotations {
  /** Who the block is for: the user, the assistant (the model), or both. */
  readonly audience?: readonly ('user' | 'assistant')[] | undefined;
  /** How important the block is, from 0 (optional) to 1 (required). */
  readonly priority?: number | undefined;
  /** When the content was last modified (ISO 8601). */
  readonly lastModified?: string | undefined;
}

/** One block of a tool result's content; `annotations` only when the server sent them. */
export type McpContentBlock =
  | { readonly type: 'text'; readonly text: string; readonly annotations?: McpContentAnnotations | undefined }
  | { readonly type: 'image'; readonly data: string; readonly mimeType: string; readonly annotations?: McpContentAnnotations | undefined }
  | { readonly type: 'audio'; readonly data: string; readonly mimeType: string; readonly annotations?: McpContentAnnotations | undefined }
  | {
      readonly type: 'resource_link';
      readonly uri: string;
      readonly name: string;
      readonly title?: string | undefined;
      readonly mimeType?: string | undefined;
      readonly description?: string | undefined;
      /** The linked resource's size in bytes, if the server knows it. */
      readonly size?: number | undefined;
      readonly annotations?: McpContentAnnotations | undefined;
    }
  | {
      readonly type: 'resource';
      readonly resource: { readonly uri: string; readonly mimeType?: string | undefined; readonly text?: string | undefined; readonly blob?: string | undefined };
      readonly annotations?: McpContentAnnotations | undefined;
    };

/**
 * The answer to tools/call, normalized. `isError: true` means the tool ran and reported a failure: it is a result,
 * not an exception (see toolResultError). Content is untrusted tool output.
 */
export interface McpToolResult {
  readonly isError: boolean;
  readonly content: readonly McpContentBlock[];
  readonly structuredContent?: JsonRecord | undefined;
}

/** The answer to resources/read: the resource's contents (text or base64 blob per item). Untrusted data. */
export interface McpResourceContents {
  readonly contents: readonly { readonly uri: string; readonly mimeType?: string | undefined; readonly text?: string | undefined; readonly blob?: string | undefined }[];
}

/** The answer to prompts/get: the prompt's messages. Untrusted data: a runtime must not take them as policy or instructions of its own. */
export interface McpPromptMessages {
  readonly description?: string | undefined;
  readonly messages: readonly { readonly role: 'user' | 'assistant'; readonly content: McpContentBlock }[];
}

/** What a completion completes an argument of: a prompt by name, or a resource template by its URI template. */
export type McpCompletionRef = { readonly type: 'ref/prompt'; readonly name: string } | { readonly type: 'ref/resource'; readonly uri: string };

/** A `completion/complete` request: the argument and what has been typed so far, and the arguments already chosen. */
export interface McpCompletionRequest {
  readonly ref: McpCompletionRef;
  readonly argument: { readonly name: string; readonly value: string };
  /** The other arguments already resolved (MCP's `context.arguments`). */
  readonly context?: Readonly<Record<string, string>> | undefined;
}

/**
 * The answer to completion/complete: at most 100 values (the SDK refuses more), the total if the server knows it, and
 * whether there are more. Untrusted data. A server that does not offer completions answers with no values.
 */
export interface McpCompletion {
  readonly values: readonly string[];
  readonly total?: number | undefined;
  readonly hasMore?: boolean | undefined;
}

/** What a server said it can do in the handshake (the MCP `ServerCapabilities` object). */
export interface McpServerCapabilities {
  readonly tools?: { readonly listChanged?: boolean | undefined } | undefined;
  readonly resources?: { readonly subscribe?: boolean | undefined; readonly listChanged?: boolean | undefined } | undefined;
  readonly prompts?: { readonly listChanged?: boolean | undefined } | undefined;
  readonly logging?: JsonRecord | undefined;
  readonly completions?: JsonRecord | undefined;
  readonly experimental?: JsonRecord | undefined;
  readonly [capability: string]: unknown;
}
