import { MAX_JSON_DEPTH } from '@toolplane/contracts';
import { schemaDialectOf, type SchemaDialect } from '@toolplane/json-schema';
import { compileLinearRegExp } from './linear-regexp.js';

// Input schemas come from MCP servers, i.e. from outside: before ajv sees one, it is bounded (bytes, nesting) and
// inspected for constructs that could reach beyond the schema (remote references, foreign ids), could not run in
// linear time (patterns RE2 cannot compile), or that ajv would resolve against other tools' schemas.

/** Bounds on an untrusted input schema. */
export interface SchemaLimits {
  /** The largest schema text, in UTF-8 bytes. */
  readonly maxBytes: number;
  /** The deepest nesting of JSON objects and arrays in the schema text. */
  readonly maxDepth: number;
  /** The longest `pattern` (or `patternProperties` key), in characters. */
  readonly maxPatternLength: number;
  /** The most `pattern`s and `patternProperties` keys in one schema (each costs a compilation). */
  readonly maxPatterns: number;
}

/** The default bounds: the descriptor's own size limit, and the nesting any JSON value of Toolplane may have. */
export const defaultSchemaLimits: SchemaLimits = { maxBytes: 262_144, maxDepth: MAX_JSON_DEPTH, maxPatternLength: 4096, maxPatterns: 512 };

/** A schema that passed inspection, ready to compile. */
export interface InspectedSchema {
  readonly ok: true;
  /** The parsed schema, without its root `$schema` and `$id` (the compiler sets its own). */
  readonly schema: Record<string, unknown> | boolean;
  readonly dialect: SchemaDialect;
  /** False when the schema named no dialect (2020-12 is assumed, as MCP specifies; draft-07 is tried next). */
  readonly declared: boolean;
}

/** Why a schema was refused. */
export interface RefusedSchema {
  readonly ok: false;
  readonly problem: string;
}

const schemaValued = new Set([
  'additionalProperties',
  'additionalItems',
  'items',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
]);
const schemaArrays = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const schemaMaps = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies']);
// Values that are instance data or plain strings, never schemas: not inspected as schemas.
const dataValued = new Set(['const', 'enum', 'default', 'examples', 'required', 'dependentRequired', 'title', 'description', '$comment']);
const referenceKeywords = ['$ref', '$dynamicRef', '$recursiveRef'] as const;

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The deepest object/array nesting of JSON text, scanning only as far as `limit` + 1 (strings are skipped). */
function nestingDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

type Node = { readonly value: unknown; readonly at: string; readonly kind: 'schema' | 'schemaMap' | 'schemaArray' };

/**
 * Parses and inspects an untrusted input schema without compiling it: size, nesting, dialect, references (only
 * local `#…` ones), nested ids (only `#anchor` ones), nested `$schema` (refused), and every pattern (must compile
 * to a linear-time matcher). Never throws.
 */
export function inspectInputSchema(text: string, limits: SchemaLimits = defaultSchemaLimits): InspectedSchema | RefusedSchema {
  const refuse = (problem: string): RefusedSchema => ({ ok: false, problem });
  // Cheap checks first, on the text, so a hostile schema costs at most one linear scan.
  if (text.length > limits.maxBytes || byteLength(text) > limits.maxBytes) return refuse(`the schema is larger than ${limits.maxBytes} bytes`);
  const depth = nestingDepth(text, limits.maxDepth);
  if (depth > limits.maxDepth) return refuse(`the schema nests deeper than ${limits.maxDepth} levels`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return refuse('the schema is not valid JSON');
  }
  if (typeof parsed === 'boolean') return { ok: true, schema: parsed, dialect: '2020-12', declared: false };
  if (!isObject(parsed)) return refuse('the schema is not a JSON object');

  const { $schema: declaredDialect, $id: rootId, ...root } = parsed;
  let dialect: SchemaDialect = '2020-12';
  if (declaredDialect !== undefined) {
    if (typeof declaredDialect !== 'string') return refuse('$schema is not a string');
    const known = schemaDialectOf(declaredDialect);
    if (known === undefined) return refuse(`unsupported $schema ${JSON.stringify(declaredDialect.slice(0, 200))}: use draft-07, 2019-09 or 2020-12`);
    dialect = known;
  }
  if (rootId !== undefined && typeof rootId !== 'string') return refuse('$id is not a string');

  let patterns = 0;
  const checkPattern = (source: string, at: string): string | undefined => {
    patterns++;
    if (patterns > limits.maxPatterns) return `the schema has more than ${limits.maxPatterns} patterns`;
    const compiled = compileLinearRegExp(source, { maxLength: limits.maxPatternLength });
    return compiled.ok ? undefined : `the pattern at ${at} is refused: ${compiled.problem}`;
  };

  const stack: Node[] = [{ value: root, at: '#', kind: 'schema' }];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    const { value, at, kind } = node;
    if (kind === 'schemaArray') {
      if (!Array.isArray(value)) continue; // ajv's meta-schema check reports the wrong type
      value.forEach((item, i) => stack.push({ value: item, at: `${at}/${i}`, kind: 'schema' }));
      continue;
    }
    if (kind === 'schemaMap') {
      if (!isObject(value)) continue;
      for (const [key, child] of Object.entries(value)) {
        // `dependencies` values may be arrays of property names: plain data.
        if (!Array.isArray(child)) stack.push({ value: child, at: `${at}/${pointerToken(key)}`, kind: 'schema' });
      }
      if (at.endsWith('/patternProperties')) {
        for (const key of Object.keys(value)) {
          const problem = checkPattern(key, `${at}/${pointerToken(key)}`);
          if (problem !== undefined) return refuse(problem);
        }
      }
      continue;
    }
    if (Array.isArray(value)) {
      // An unknown keyword's array: walked like ajv's traversal does, in case it holds schemas.
      value.forEach((item, i) => stack.push({ value: item, at: `${at}/${i}`, kind: 'schema' }));
      continue;
    }
    if (!isObject(value)) continue;
    for (const keyword of referenceKeywords) {
      const reference = value[keyword];
      if (typeof reference === 'string' && !reference.startsWith('#')) {
        return refuse(`${keyword} at ${at} points outside the schema (${JSON.stringify(reference.slice(0, 200))}); only local "#…" references are allowed`);
      }
    }
    if (at !== '#' && typeof value.$id === 'string' && !value.$id.startsWith('#')) {
      return refuse(`$id at ${at} declares a separate schema resource (${JSON.stringify(value.$id.slice(0, 200))}); only "#anchor" ids are allowed below the root`);
    }
    if (at !== '#' && value.$schema !== undefined) return refuse(`$schema at ${at} is not at the root`);
    if (typeof value.pattern === 'string') {
      const problem = checkPattern(value.pattern, `${at}/pattern`);
      if (problem !== undefined) return refuse(problem);
    }
    for (const [keyword, child] of Object.entries(value)) {
      if (dataValued.has(keyword) || keyword === 'pattern' || referenceKeywords.includes(keyword as (typeof referenceKeywords)[number])) continue;
      if (typeof child !== 'object' || child === null) continue;
      const childAt = `${at}/${pointerToken(keyword)}`;
      if (schemaMaps.has(keyword)) stack.push({ value: child, at: childAt, kind: 'schemaMap' });
      else if (schemaArrays.has(keyword)) stack.push({ value: child, at: childAt, kind: 'schemaArray' });
      else if (schemaValued.has(keyword)) stack.push({ value: child, at: childAt, kind: Array.isArray(child) ? 'schemaArray' : 'schema' });
      else stack.push({ value: child, at: childAt, kind: 'schema' });
    }
  }
  return { ok: true, schema: root, dialect, declared: declaredDialect !== undefined };
}
