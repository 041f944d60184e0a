import {
  canonicalJson,
  McpDiscoveredTool,
  sha256Hex,
  ToolplaneError,
  type McpDiscoveredPrompt,
  type McpDiscoveredResource,
  type McpDiscoveredResourceTemplate,
  type Sha256Hex,
} from '@toolplane/contracts';
import type { McpPrompt, McpResource, McpResourceTemplate, McpTool } from './model.js';

/**
 * The hash a binding pins: SHA-256 over the canonical JSON (RFC 8785) of `{ name, title, description,
 * inputSchema, outputSchema, annotations }` (absent fields left out). Any change to what a model or a policy
 * reads about a tool changes it, so a server that silently changes a tool after approval is noticed. A
 * definition that is not canonicalizable JSON (for example nested deeper than MAX_JSON_DEPTH) is
 * INVALID_ARGUMENT.
 */
export function toolDefinitionHash(tool: McpTool): Sha256Hex {
  const { name, title, description, inputSchema, outputSchema, annotations } = tool;
  let text: string;
  try {
    text = canonicalJson({ name, title, description, inputSchema, outputSchema, annotations });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ToolplaneError('INVALID_ARGUMENT', `the definition of tool ${JSON.stringify(tool.name).slice(0, 300)} cannot be hashed: ${reason}`, {
      cause: error,
      details: { providerErrorType: 'UnhashableToolDefinition' },
    });
  }
  return sha256Hex(text);
}

/**
 * A listed tool as the registry stores it (the contract's McpDiscoveredTool): schemas and annotations as
 * canonical JSON text, plus the definition hash. Bounds of the contract are enforced: a tool that exceeds them
 * is INVALID_ARGUMENT naming the field.
 */
export function toDiscoveredTool(tool: McpTool): McpDiscoveredTool {
  const definitionHash = toolDefinitionHash(tool);
  const candidate = {
    name: tool.name,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    ...(tool.description === undefined ? {} : { description: tool.description }),
    inputSchemaJson: canonicalJson(tool.inputSchema),
    ...(tool.outputSchema === undefined ? {} : { outputSchemaJson: canonicalJson(tool.outputSchema) }),
    ...(tool.annotations === undefined ? {} : { annotationsJson: canonicalJson(tool.annotations) }),
    definitionHash,
  };
  const parsed = McpDiscoveredTool.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ToolplaneError('INVALID_ARGUMENT', `tool ${JSON.stringify(tool.name).slice(0, 300)} exceeds what can be stored: ${issue?.path.join('.') ?? '?'} ${issue?.message ?? ''}`.trim(), {
      details: { providerErrorType: 'ToolDefinitionOutOfBounds' },
    });
  }
  return parsed.data;
}

/**
 * A listed resource as the registry stores it, with the hash a resource binding pins: SHA-256 over the canonical
 * JSON of `{ uri, name, title, description, mimeType }` as the server sent them (stored text is only bounded).
 */
export function toDiscoveredResource(resource: McpResource): McpDiscoveredResource {
  const { uri, name, title, description, mimeType } = resource;
  const definitionHash = sha256Hex(canonicalJson({ uri, name, title, description, mimeType }));
  return {
    uri,
    name: name.slice(0, 256),
    ...(title === undefined ? {} : { title: title.slice(0, 256) }),
    ...(mimeType === undefined ? {} : { mimeType: mimeType.slice(0, 256) }),
    ...(description === undefined ? {} : { description: description.slice(0, 4096) }),
    definitionHash,
  };
}

/**
 * A listed resource template as the registry stores it, with the hash a binding of it pins: SHA-256 over the canonical
 * JSON of `{ uriTemplate, name, title, description, mimeType }` as the server sent them, like a resource's.
 */
export function toDiscoveredResourceTemplate(template: McpResourceTemplate): McpDiscoveredResourceTemplate {
  const { uriTemplate, name, title, description, mimeType } = template;
  const definitionHash = sha256Hex(canonicalJson({ uriTemplate, name, title, description, mimeType }));
  return {
    uriTemplate,
    name: name.slice(0, 256),
    ...(title === undefined ? {} : { title: title.slice(0, 256) }),
    ...(mimeType === undefined ? {} : { mimeType: mimeType.slice(0, 256) }),
    ...(description === undefined ? {} : { description: description.slice(0, 4096) }),
    definitionHash,
  };
}

/** A listed prompt as the registry stores it, with the hash a prompt binding pins (over name, title, description and arguments). */
export function toDiscoveredPrompt(prompt: McpPrompt): McpDiscoveredPrompt {
  const { name, title, description } = prompt;
  const args = prompt.arguments?.map((argument) => ({
    name: argument.name,
    ...(argument.description === undefined ? {} : { description: argument.description }),
    ...(argument.required === undefined ? {} : { required: argument.required }),
  }));
  const definitionHash = sha256Hex(canonicalJson({ name, title, description, arguments: args }));
  return {
    name,
    ...(title === undefined ? {} : { title: title.slice(0, 256) }),
    ...(description === undefined ? {} : { description: description.slice(0, 4096) }),
    ...(args === undefined ? {} : { arguments: args.slice(0, 64).map((a) => ({ ...a, name: a.name.slice(0, 128), ...(a.description === undefined ? {} : { description: a.description.slice(0, 1024) }) })) }),
    definitionHash,
  };
}
