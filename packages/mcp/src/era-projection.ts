import type { JsonRecord } from './model.js';

// Since 2026-07-28 a tool's output schema may have any root, and its structuredContent may be any JSON value; the
// 2025 revisions require objects, and a server answering a 2025-era client wraps both in a `{ result }` envelope.
// Applying that same projection to what a 2026-07-28 server sends gives callers one shape whichever revision was
// negotiated: a tool keeps its definition hash when its server is upgraded, and structuredContent stays an object.

/** Whether an output schema's root is not an object (an explicit other `type`, or a typeless root like `anyOf`). */
export function isNonObjectSchemaRoot(schema: JsonRecord): boolean {
  return schema['type'] !== 'object';
}

/**
 * A non-object output schema wrapped as `{ type: 'object', properties: { result }, required: ['result'] }`, with its
 * same-document references (`#`, `#/…`) moved under `#/properties/result` so they still resolve. An object schema is
 * returned as it is.
 */
export function objectOutputSchema(schema: JsonRecord): JsonRecord {
  if (!isNonObjectSchemaRoot(schema)) return schema;
  const $schema = typeof schema['$schema'] === 'string' ? { $schema: schema['$schema'] } : {};
  // An `$id` that sets a new base makes the references inside resolve against it, not against the wrapper.
  const convertRecursion = declares2019(schema['$schema']) && schema['$recursiveAnchor'] !== true;
  const natural = establishesBase(schema['$id']) ? schema : rebase(schema, false, convertRecursion);
  return { ...$schema, type: 'object', properties: { result: natural }, required: ['result'] };
}

/** structuredContent as an object: a non-object value, or any value of a tool whose schema was wrapped, as `{ result }`. */
export function objectStructuredContent(value: unknown, schemaWrapped: boolean): JsonRecord {
  const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
  return isObject && !schemaWrapped ? (value as JsonRecord) : { result: value };
}

const RESULT_POINTER = '#/properties/result';
// Keywords whose values are instance data, not subschemas: a `$ref` inside them is a literal.
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples']);
// Keywords whose values map names to subschemas: their keys are names, not keywords.
const NAME_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies']);
const DRAFT_2019_09 = new Set(['https://json-schema.org/draft/2019-09/schema', 'http://json-schema.org/draft/2019-09/schema']);

/** A same-document pointer moved under the wrapper's `result`; any other reference as it is. */
function rebasePointer(reference: string): string {
  if (reference === '#') return RESULT_POINTER;
  return reference.startsWith('#/') ? `${RESULT_POINTER}${reference.slice(1)}` : reference;
}

function establishesBase(id: unknown): boolean {
  return id !== undefined && !(typeof id === 'string' && id.startsWith('#'));
}

function declares2019($schema: unknown): boolean {
  return typeof $schema === 'string' && DRAFT_2019_09.has($schema.replace(/#$/, ''));
}

/** `node` with its same-document pointers rebased under the wrapper's `result`; 2019-09 `$recursiveRef: '#'` becomes a `$ref`. */
function rebase(node: unknown, inNameMap: boolean, convertRecursion: boolean): unknown {
  if (Array.isArray(node)) return node.map((item) => rebase(item, false, convertRecursion));
  if (node === null || typeof node !== 'object') return node;
  const record = node as JsonRecord;
  if (!inNameMap && establishesBase(record['$id'])) return record;
  const out: JsonRecord = {};
  let recursion = false;
  for (const [key, value] of Object.entries(record)) {
    if (inNameMap) out[key] = rebase(value, false, convertRecursion);
    else if ((key === '$ref' || key === '$dynamicRef') && typeof value === 'string') out[key] = rebasePointer(value);
    else if (key === '$recursiveRef' && value === '#' && convertRecursion) recursion = true;
    else if (DATA_KEYWORDS.has(key)) out[key] = value;
    else out[key] = rebase(value, NAME_MAPS.has(key), convertRecursion);
  }
  if (recursion) {
    const allOf: unknown[] = Array.isArray(out['allOf']) ? out['allOf'] : [];
    if ('$ref' in out) out['allOf'] = [...allOf, { $ref: RESULT_POINTER }];
    else out['$ref'] = RESULT_POINTER;
  }
  return out;
}
