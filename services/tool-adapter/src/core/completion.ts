import {
  MAX_COMPLETION_BYTES,
  MAX_COMPLETION_VALUE_CHARS,
  MAX_COMPLETION_VALUES,
  type CompletionContent,
  type InvocationCompletion,
  type JsonObject,
  type ToolDescriptor,
  type ToolFailure,
} from '@toolplane/contracts';
import type { ArgumentCheck, SchemaViolation } from './argument-validation.js';

// A completion (MCP `completion/complete`) runs the pipeline of the prompt (or resource template) it completes: the
// same descriptor, the same permission and policy decision as fetching it, recorded and receipted like any call. What
// differs is decided here: its arguments are a partial set (the ones already chosen), so they are checked against the
// names and string type of the item's arguments rather than against its input schema, which requires them all; it is
// never put to a human (asking someone to approve a list of suggestions would only stall the client typing); and its
// answer is a bounded list of values.

/** The arguments the descriptor's input schema declares (a prompt's arguments, a resource template's variables). */
function declaredArguments(inputSchemaJson: string): ReadonlySet<string> | undefined {
  try {
    const schema = JSON.parse(inputSchemaJson) as { properties?: unknown };
    const { properties } = schema;
    return typeof properties === 'object' && properties !== null && !Array.isArray(properties) ? new Set(Object.keys(properties)) : new Set();
  } catch {
    return undefined;
  }
}

function invalid(message: string, violations: SchemaViolation[]): ArgumentCheck {
  return { valid: false, failure: { code: 'INVALID_ARGUMENT', message: message.slice(0, 4096), retryable: false }, violations, omitted: 0 };
}

/**
 * Whether a completion fits its descriptor (the SCHEMA_VALIDATION stage of a completion): the argument asked about is
 * one it declares, and so is each argument already chosen (`args`), as a string. Never echoes values.
 */
export function checkCompletion(descriptor: Pick<ToolDescriptor, 'toolId' | 'toolVersion' | 'inputSchemaJson'>, completion: InvocationCompletion, args: JsonObject): ArgumentCheck {
  const declared = declaredArguments(descriptor.inputSchemaJson);
  const what = `${descriptor.toolId}@${descriptor.toolVersion}`;
  if (declared === undefined) {
    return { valid: false, failure: { code: 'CONFLICT', message: `${what} cannot be completed: its input schema is unusable`, retryable: false }, violations: [], omitted: 0 };
  }
  const name = completion.argument.name;
  if (!declared.has(name)) {
    return invalid(`${what} has no argument ${JSON.stringify(name.slice(0, 256))} to complete`, [{ path: '/completion/argument/name', keyword: 'enum', message: 'must be an argument the item declares' }]);
  }
  const violations: SchemaViolation[] = [];
  for (const [key, value] of Object.entries(args)) {
    const path = `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`.slice(0, 256);
    if (!declared.has(key)) violations.push({ path, keyword: 'additionalProperties', message: 'must be an argument the item declares' });
    else if (typeof value !== 'string') violations.push({ path, keyword: 'type', message: 'must be string' });
  }
  if (violations.length > 0) {
    const shown = violations.slice(0, 5).map((violation) => `${violation.path} ${violation.message}`);
    return invalid(`the arguments already chosen do not fit ${what}: ${shown.join('; ')}`, violations.slice(0, 20));
  }
  return { valid: true };
}

/** Why a completion is refused when the policy would put it to a human: a completion is never gated. */
export function gatedCompletionFailure(toolId: string): ToolFailure {
  return {
    code: 'AUTHORIZATION_DENIED',
    message: `${toolId} is gated behind a human approval; a completion is never put to one, so its values are not offered`.slice(0, 4096),
    retryable: false,
  };
}

/** The answer of a completion, bounded: what MCP (and the result bound) allows, `hasMore` set when values were left out. */
export type BoundedCompletion = CompletionContent['completion'];

/**
 * The values a server offered, bounded: at most MAX_COMPLETION_VALUES, each at most MAX_COMPLETION_VALUE_CHARS (a
 * longer one is left out, never cut: a cut suggestion would be a wrong value), at most MAX_COMPLETION_BYTES together.
 * Anything left out sets `hasMore`; `total` is kept only when it is a count.
 */
export function boundCompletion(offered: { readonly values: readonly unknown[]; readonly total?: unknown; readonly hasMore?: unknown }): BoundedCompletion {
  const values: string[] = [];
  let bytes = 0;
  let leftOut = false;
  for (const value of offered.values) {
    if (values.length === MAX_COMPLETION_VALUES) {
      leftOut = true;
      break;
    }
    if (typeof value !== 'string' || value.length > MAX_COMPLETION_VALUE_CHARS) {
      leftOut = true;
      continue;
    }
    bytes += Buffer.byteLength(value, 'utf8');
    if (bytes > MAX_COMPLETION_BYTES) {
      leftOut = true;
      break;
    }
    values.push(value);
  }
  const { total } = offered;
  const counted = typeof total === 'number' && Number.isSafeInteger(total) && total >= 0 ? { total } : {};
  const more = leftOut || offered.hasMore === true ? { hasMore: true } : offered.hasMore === false ? { hasMore: false } : {};
  return { values, ...counted, ...more };
}

/** The output of a completion as the pipeline sanitizes it: the values as structured content, and one per line as text. */
export function completionOutput(completion: BoundedCompletion): { readonly content: readonly { readonly type: 'text'; readonly text: string }[]; readonly structuredContent: CompletionContent } {
  return { content: [{ type: 'text', text: completion.values.join('\n') }], structuredContent: { completion } };
}
