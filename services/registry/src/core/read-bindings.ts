import {
  ToolplaneError,
  canonicalJson,
  parseUriTemplate,
  type BindPromptRequest,
  type BindResourceRequest,
  type McpDiscoveredPrompt,
  type McpDiscoveredResource,
  type McpDiscoveredResourceTemplate,
  type McpDiscoveredTool,
} from '@toolplane/contracts';
import type { BindingDeclaration } from './descriptor-aggregate.js';

// Resources and prompts are bound like tools: a descriptor version pins the item's definition hash, and every read
// goes through the same pipeline as a tool call. A read binding is always READ and naturally idempotent; what it adds
// is what the item maps to (a knowledge source, or a skill or workflow step). These turn a discovered resource or
// prompt into the shape a tool binding is decided from.

/** The longest resource URI a binding can pin (the descriptor's provider name). */
export const MAX_BOUND_URI = 256;

/** A resource is read without arguments: its input schema admits the empty object only. */
const NO_ARGUMENTS = canonicalJson({ type: 'object', properties: {}, additionalProperties: false });

/** The declaration every read binding shares: READ, naturally idempotent, retried like any read. */
export function readDeclaration(request: Pick<BindResourceRequest, 'riskClass' | 'permissions' | 'roles' | 'secretDependencies' | 'timeoutMs' | 'rateLimits' | 'auditRequirements'>): BindingDeclaration {
  return {
    sideEffectClass: 'READ',
    riskClass: request.riskClass,
    idempotency: 'NATURAL',
    permissions: request.permissions,
    roles: request.roles,
    secretDependencies: request.secretDependencies,
    timeoutMs: request.timeoutMs,
    rateLimits: request.rateLimits,
    auditRequirements: request.auditRequirements,
  };
}

function unpinnable(what: string): ToolplaneError {
  return new ToolplaneError('CONFLICT', `the ${what} was discovered before resources and prompts were bindable, so it has no definition hash to pin: discover the server again`);
}

/** A discovered resource as the item a binding describes: its URI as the name, no arguments. */
export function resourceItem(resource: McpDiscoveredResource): McpDiscoveredTool {
  if (resource.uri.length > MAX_BOUND_URI) {
    throw new ToolplaneError('INVALID_ARGUMENT', `the resource ${JSON.stringify(resource.uri.slice(0, 100))}… cannot be bound: its URI is longer than ${MAX_BOUND_URI} characters`);
  }
  if (resource.definitionHash === undefined) throw unpinnable(`resource ${JSON.stringify(resource.uri)}`);
  return {
    name: resource.uri,
    // The descriptor's title is the resource's (its name when it has none), as a client lists it.
    title: resource.title ?? resource.name,
    description: resource.description ?? '',
    inputSchemaJson: NO_ARGUMENTS,
    definitionHash: resource.definitionHash,
  };
}

/**
 * A discovered resource template as the item a binding describes: its `uriTemplate` as the name, and its variables as
 * the arguments, each a required string (a read expands the template with them, so each must have a value). A
 * template that is malformed or uses RFC 6570 level-4 modifiers cannot be bound.
 */
export function resourceTemplateItem(template: McpDiscoveredResourceTemplate): McpDiscoveredTool {
  const quoted = JSON.stringify(template.uriTemplate.slice(0, 100));
  if (template.uriTemplate.length > MAX_BOUND_URI) {
    throw new ToolplaneError('INVALID_ARGUMENT', `the resource template ${quoted}… cannot be bound: it is longer than ${MAX_BOUND_URI} characters`);
  }
  const parsed = parseUriTemplate(template.uriTemplate);
  if (!parsed.ok) throw new ToolplaneError('INVALID_ARGUMENT', `the resource template ${quoted} cannot be bound: ${parsed.problem}`);
  const { variables } = parsed.template;
  const properties = Object.fromEntries(variables.map((name) => [name, { type: 'string' }]));
  return {
    name: template.uriTemplate,
    title: template.title ?? template.name,
    description: template.description ?? '',
    inputSchemaJson: canonicalJson({ type: 'object', properties, ...(variables.length === 0 ? {} : { required: variables }), additionalProperties: false }),
    definitionHash: template.definitionHash,
  };
}

/** A discovered prompt as the item a binding describes: its arguments as string properties (required as the server says). */
export function promptItem(prompt: McpDiscoveredPrompt): McpDiscoveredTool {
  if (prompt.definitionHash === undefined) throw unpinnable(`prompt ${JSON.stringify(prompt.name)}`);
  const args = prompt.arguments ?? [];
  const properties = Object.fromEntries(args.map((argument) => [argument.name, { type: 'string', ...(argument.description === undefined ? {} : { description: argument.description }) }]));
  const required = args.filter((argument) => argument.required === true).map((argument) => argument.name);
  return {
    name: prompt.name,
    ...(prompt.title === undefined ? {} : { title: prompt.title }),
    ...(prompt.description === undefined ? {} : { description: prompt.description }),
    inputSchemaJson: canonicalJson({ type: 'object', properties, ...(required.length === 0 ? {} : { required }), additionalProperties: false }),
    definitionHash: prompt.definitionHash,
  };
}

/** The resource binding a request declares; a template's records its `uriTemplate`. */
export function resourceBindingOf(request: BindResourceRequest, resource: Pick<McpDiscoveredResource, 'mimeType'> & { readonly uriTemplate?: string }) {
  return {
    resource: {
      knowledgeSource: request.knowledgeSource,
      scope: request.scope,
      classification: request.classification,
      ...(resource.mimeType === undefined ? {} : { mimeType: resource.mimeType }),
      ...(resource.uriTemplate === undefined ? {} : { uriTemplate: resource.uriTemplate }),
    },
  };
}

/** The prompt binding a request declares: its target, a skill or a workflow step (the contract admits nothing else). */
export function promptBindingOf(request: BindPromptRequest) {
  return { prompt: { target: request.target } };
}
