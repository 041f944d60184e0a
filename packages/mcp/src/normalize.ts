import type { CallToolResult, ContentBlock, GetPromptResult, Prompt, ReadResourceResult, Resource, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpContentBlock, McpPrompt, McpPromptMessages, McpResource, McpResourceContents, McpTool, McpToolResult } from './model.js';

// From the SDK's parsed types to this package's plain shapes. Optional fields stay absent rather than undefined
// where possible, so the result is what the server sent, minus what we do not expose (_meta, icons).

/** A listed tool, as this package exposes it. */
export function normalizeTool(tool: Tool): McpTool {
  return {
    name: tool.name,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    ...(tool.description === undefined ? {} : { description: tool.description }),
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
    ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
  };
}

/** A listed resource, as this package exposes it. */
export function normalizeResource(resource: Resource): McpResource {
  return {
    uri: resource.uri,
    name: resource.name,
    ...(resource.title === undefined ? {} : { title: resource.title }),
    ...(resource.description === undefined ? {} : { description: resource.description }),
    ...(resource.mimeType === undefined ? {} : { mimeType: resource.mimeType }),
    ...(resource.size === undefined ? {} : { size: resource.size }),
  };
}

/** A listed prompt, as this package exposes it. */
export function normalizePrompt(prompt: Prompt): McpPrompt {
  return {
    name: prompt.name,
    ...(prompt.title === undefined ? {} : { title: prompt.title }),
    ...(prompt.description === undefined ? {} : { description: prompt.description }),
    ...(prompt.arguments === undefined
      ? {}
      : {
          arguments: prompt.arguments.map((argument) => ({
            name: argument.name,
            ...(argument.description === undefined ? {} : { description: argument.description }),
            ...(argument.required === undefined ? {} : { required: argument.required }),
          })),
        }),
  };
}

/** A tools/call result, as this package exposes it. */
export function normalizeToolResult(result: CallToolResult): McpToolResult {
  return {
    isError: result.isError === true,
    content: result.content.map(normalizeContent),
    ...(result.structuredContent === undefined ? {} : { structuredContent: result.structuredContent }),
  };
}

/** A resources/read result, as this package exposes it. */
export function normalizeResourceContents(result: ReadResourceResult): McpResourceContents {
  return {
    contents: result.contents.map((item) => ({
      uri: item.uri,
      ...(item.mimeType === undefined ? {} : { mimeType: item.mimeType }),
      ...('text' in item && typeof item.text === 'string' ? { text: item.text } : {}),
      ...('blob' in item && typeof item.blob === 'string' ? { blob: item.blob } : {}),
    })),
  };
}

/** A prompts/get result, as this package exposes it. */
export function normalizePromptMessages(result: GetPromptResult): McpPromptMessages {
  return {
    ...(result.description === undefined ? {} : { description: result.description }),
    messages: result.messages.map((message) => ({ role: message.role, content: normalizeContent(message.content) })),
  };
}

function normalizeContent(block: ContentBlock): McpContentBlock {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
      return { type: 'image', data: block.data, mimeType: block.mimeType };
    case 'audio':
      return { type: 'audio', data: block.data, mimeType: block.mimeType };
    case 'resource_link':
      return {
        type: 'resource_link',
        uri: block.uri,
        name: block.name,
        ...(block.mimeType === undefined ? {} : { mimeType: block.mimeType }),
        ...(block.description === undefined ? {} : { description: block.description }),
      };
    case 'resource': {
      const { resource } = block;
      return {
        type: 'resource',
        resource: {
          uri: resource.uri,
          ...(resource.mimeType === undefined ? {} : { mimeType: resource.mimeType }),
          ...('text' in resource ? { text: resource.text } : {}),
          ...('blob' in resource ? { blob: resource.blob } : {}),
        },
      };
    }
  }
}
