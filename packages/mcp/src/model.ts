// The shapes this package hands out: plain data, independent of the SDK's types, so no other workspace needs
// (or may take) a dependency on the SDK.

/** A JSON object as a server sent it. */
export type JsonRecord = Record<string, unknown>;

/** Name and version a server (or this client) reports in the handshake. */
/** A list a server may announce has changed (`notifications/<list>/list_changed`). */
export type McpList = 'tools' | 'resources' | 'prompts';

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

/** One block of a tool result's content. */
export type McpContentBlock =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'image'; readonly data: string; readonly mimeType: string }
  | { readonly type: 'audio'; readonly data: string; readonly mimeType: string }
  | { readonly type: 'resource_link'; readonly uri: string; readonly name: string; readonly mimeType?: string | undefined; readonly description?: string | undefined }
  | {
      readonly type: 'resource';
      readonly resource: { readonly uri: string; readonly mimeType?: string | undefined; readonly text?: string | undefined; readonly blob?: string | undefined };
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
