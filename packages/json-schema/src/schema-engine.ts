import { canonicalJson, compileLinearRegExp } from '@toolplane/contracts';
import { Ajv, type AnySchema, type CodeOptions, type ErrorObject, type FuncKeywordDefinition, type Options, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';

// Schemas come from outside (MCP servers, flow authors): every service compiles them with the one ajv setup below, so
// a pattern cannot run in more than linear time, a large array cannot make `uniqueItems` quadratic, and no schema can
// see, shadow or collide with another's by id.

/** The JSON Schema dialects a schema may declare, with the `$schema` URIs that name them. */
export const SCHEMA_DIALECTS = {
  'draft-07': ['http://json-schema.org/draft-07/schema'],
  '2019-09': ['https://json-schema.org/draft/2019-09/schema'],
  '2020-12': ['https://json-schema.org/draft/2020-12/schema'],
} as const;

/** One of {@link SCHEMA_DIALECTS}. */
export type SchemaDialect = keyof typeof SCHEMA_DIALECTS;

/** The dialect a `$schema` URI names (a trailing `#` and http/https spelled either way are accepted), if known. */
export function schemaDialectOf(uri: string): SchemaDialect | undefined {
  const normalized = uri.replace(/#$/, '').replace(/^http:\/\/json-schema\.org\/draft\/(2019-09|2020-12)/, 'https://json-schema.org/draft/$1');
  const withHttp = normalized.replace(/^https:\/\/json-schema\.org\/draft-07\//, 'http://json-schema.org/draft-07/');
  for (const [dialect, uris] of Object.entries(SCHEMA_DIALECTS) as [SchemaDialect, readonly string[]][]) {
    if (uris.includes(withHttp)) return dialect;
  }
  return undefined;
}

/**
 * One ajv instance of one dialect, counting what it compiled: ajv keeps compiled helpers in an instance-wide scope
 * that removing a schema does not free, so an owner retires an engine after enough compilations.
 */
export interface SchemaEngine {
  readonly ajv: Ajv | Ajv2019 | Ajv2020;
  compilations: number;
}

/** A schema compiled and probed, ready to validate with; `schema` is what to remove from `engine` when evicted. */
export interface CompiledSchema {
  readonly validate: ValidateFunction;
  readonly schema: AnySchema;
  readonly engine: SchemaEngine;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

// ajv-formats is CommonJS with a default export; which of the two shapes arrives depends on the loader.
const addFormats = ((addFormatsPlugin as unknown as { default?: unknown }).default ?? addFormatsPlugin) as (ajv: unknown, options: { mode: 'fast' }) => void;

/** A fresh engine for `dialect` whose `pattern`s run on RE2 and may be at most `maxPatternLength` characters. */
export function createSchemaEngine(dialect: SchemaDialect, maxPatternLength: number): SchemaEngine {
  const options: Options = {
    strict: false,
    allErrors: true,
    allowUnionTypes: true,
    logger: false,
    // Compiled schemas are not registered by id: schemas cannot see, shadow or collide with each other.
    addUsedSchema: false,
    code: { regExp: linearRegExpEngine(maxPatternLength) },
  };
  const ajv = dialect === '2020-12' ? new Ajv2020(options) : dialect === '2019-09' ? new Ajv2019(options) : new Ajv(options);
  addFormats(ajv, { mode: 'fast' });
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword(uniqueItemsKeyword());
  return { ajv, compilations: 0 };
}

// Values a schema that recurses into itself without consuming input overflows the stack on.
const probes: readonly unknown[] = [{}, [], '', 0, null, true];

/**
 * Compiles `schema` under the id `id` and validates a few probe values with it, so a schema that recurses endlessly
 * is refused here rather than on a caller's value. A refusal says why in words; it never throws.
 */
export function compileSchema(engine: SchemaEngine, schema: AnySchema, id: string): CompiledSchema | { readonly problem: string } {
  const rooted = typeof schema === 'boolean' ? schema : { ...schema, $id: id };
  engine.compilations++;
  let validate: ValidateFunction;
  try {
    validate = engine.ajv.compile(rooted);
  } catch (error) {
    if (error instanceof RangeError) return { problem: 'the schema refers to itself without consuming input (endless recursion)' };
    return { problem: `the schema does not compile: ${clip(error instanceof Error ? error.message : String(error), 512)}` };
  }
  try {
    for (const probe of probes) validate(probe);
  } catch (error) {
    engine.ajv.removeSchema(rooted);
    return {
      problem:
        error instanceof RangeError ? 'the schema refers to itself without consuming input (endless recursion)' : 'validating against the schema fails unexpectedly',
    };
  }
  return { validate, schema: rooted, engine };
}

/**
 * Where an ajv error is, as a JSON Pointer into the value: the offending or missing property is part of the place
 * (it is a name, not a value, so it can be shown).
 */
export function violationPath(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  const property = params.additionalProperty ?? params.unevaluatedProperty ?? params.missingProperty;
  const path = `${error.instancePath}${typeof property === 'string' ? `/${property.replaceAll('~', '~0').replaceAll('/', '~1')}` : ''}`;
  return path === '' ? '/' : path;
}

/** ajv's `code.regExp`: every schema `pattern` runs on RE2 (linear time); one it cannot compile fails compilation. */
function linearRegExpEngine(maxPatternLength: number): NonNullable<CodeOptions['regExp']> {
  const engine = (pattern: string) => {
    const compiled = compileLinearRegExp(pattern, { maxLength: maxPatternLength });
    if (!compiled.ok) throw new Error(`pattern ${JSON.stringify(clip(pattern, 100))}: ${compiled.problem}`);
    // ajv shares compiled patterns by their toString(): it must differ between patterns.
    return { test: (text: string) => compiled.regExp.test(text), toString: () => `linear:${JSON.stringify(pattern)}` };
  };
  return Object.assign(engine, { code: 'toolplane.linearRegExp' });
}

/**
 * `uniqueItems` by canonical JSON in linear time. ajv's own keyword compares object items pairwise (quadratic), so
 * a large array of objects could stall the service.
 */
function uniqueItemsKeyword(): FuncKeywordDefinition {
  const validate = (unique: boolean, data: unknown): boolean => {
    validate.errors = [];
    if (!unique || !Array.isArray(data)) return true;
    const seen = new Map<string, number>();
    for (let j = 0; j < data.length; j++) {
      let key: string;
      try {
        key = canonicalJson(data[j]);
      } catch {
        continue; // not JSON: the request schema already refused such values
      }
      const i = seen.get(key);
      if (i !== undefined) {
        validate.errors = [{ keyword: 'uniqueItems', message: `must NOT have duplicate items (items ## ${i} and ${j} are identical)`, params: { i, j } }];
        return false;
      }
      seen.set(key, j);
    }
    return true;
  };
  validate.errors = [] as Partial<ErrorObject>[];
  return { keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate };
}
