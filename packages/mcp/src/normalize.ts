import type {
  Annotations,
  CallToolResult,
  CompleteResult,
  ContentBlock,
  GetPromptResult,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplateType,
  Tool,
} from '@modelcontextprotocol/client';
import { objectOutputSchema, objectStructuredContent } from './era-projection.js';
import type {
  McpCompletion,
  McpContentAnnotations,
  McpContentBlock,
  McpPrompt,
  McpPromptMessages,
  McpResource,
  McpResourceContents,
  McpResourceTemplate,
  McpTool,
  McpToolResult,
} from './model.js';

// From the SDK's parsed types to this package's plain shapes. Optional fields stay absent rather than undefined
// where possible, so the result is what the server sent, minus what we do not expose (_meta, icons), and in the
// shapes of the 2025 revisions whichever revision was negotiated (see era-projection.ts).

/** A listed tool, as this package exposes it (a non-object output schema wrapped as `{ result }`). */
export function normalizeTool(tool: Tool): McpTool {
  return {
    name: tool.name,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    ...(tool.description === undefined ? {} : { description: tool.description }),
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema === undefined ? {} : { outputSchema: objectOutputSchema(tool.outputSchema) }),
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

/**
 * A tools/call result, as this package exposes it: structuredContent that is not an object, or any of a tool whose
 * output schema was wrapped (`schemaWrapped`), as `{ result }`.
 */
export function normalizeToolResult(result: CallToolResult, schemaWrapped = false): McpToolResult {
  const { structuredContent } = result;
  return {
    isError: result.isError === true,
    content: result.content.map(normalizeContent),
    ...(structuredContent === undefined ? {} : { structuredContent: objectStructuredContent(structuredContent, schemaWrapped) }),
  };
}

/** A listed resource template, as this package exposes it. */
export function normalizeResourceTemplate(template: ResourceTemplateType): McpResourceTemplate {
  return {
    uriTemplate: template.uriTemplate,
    name: template.name,
    ...(template.title === undefined ? {} : { title: template.title }),
    ...(template.description === undefined ? {} : { description: template.description }),
    ...(template.mimeType === undefined ? {} : { mimeType: template.mimeType }),
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

/** A completion/complete result, as this package exposes it (what the server sent, without `_meta`). */
export function normalizeCompletion(result: CompleteResult): McpCompletion {
  const { values, total, hasMore } = result.completion;
  return { values, ...(total === undefined ? {} : { total }), ...(hasMore === undefined ? {} : { hasMore }) };
}

function normalizeContent(block: ContentBlock): McpContentBlock {
  const annotations = block.annotations === undefined ? {} : { annotations: normalizeAnnotations(block.annotations) };
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text, ...annotations };
    case 'image':
      return { type: 'image', data: block.data, mimeType: block.mimeType, ...annotations };
    case 'audio':
      return { type: 'audio', data: block.data, mimeType: block.mimeType, ...annotations };
    case 'resource_link':
      return {
        type: 'resource_link',
        uri: block.uri,
        name: block.name,
        ...(block.title === undefined ? {} : { title: block.title }),
        ...(block.mimeType === undefined ? {} : { mimeType: block.mimeType }),
        ...(block.description === undefined ? {} : { description: block.description }),
        ...(block.size === undefined ? {} : { size: block.size }),
        ...annotations,
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
        ...annotations,
      };
    }
  }
}

function normalizeAnnotations(annotations: Annotations): McpContentAnnotations {
  return {
    ...(annotations.audience === undefined ? {} : { audience: [...annotations.audience] }),
    ...(annotations.priority === undefined ? {} : { priority: annotations.priority }),
    ...(annotations.lastModified === undefined ? {} : { lastModified: annotations.lastModified }),
  };
}
