import { canonicalJson, type ToolFailure } from '@toolplane/contracts';
import { Ajv, type AnySchema, type CodeOptions, type ErrorObject, type FuncKeywordDefinition, type Options, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import { compileLinearRegExp } from './linear-regexp.js';
import { LruCache } from './lru-cache.js';
import { defaultSchemaLimits, inspectInputSchema, type SchemaDialect, type SchemaLimits } from './schema-guard.js';

// Argument validation against a descriptor's input schema (ajv 8). Each schema is compiled once per (toolId,
// toolVersion, definitionHash) and kept in an LRU cache, refusals included, so a bad schema costs one attempt,
// not one per call. A schema that cannot be used makes its tool unusable (CONFLICT) and never crashes anything.

/** What a descriptor contributes to argument validation. */
export interface InputSchemaSource {
  readonly toolId: string;
  readonly toolVersion: string;
  readonly definitionHash: string;
  readonly inputSchemaJson: string;
}

/** One way the arguments miss the schema: where (a JSON Pointer into the arguments), which keyword, what is wanted. */
export interface SchemaViolation {
  readonly path: string;
  readonly keyword: string;
  readonly message: string;
}

/** Whether arguments fit the schema; a refusal carries the failure to end the call with. */
export type ArgumentCheck =
  | { readonly valid: true }
  | {
      readonly valid: false;
      /** INVALID_ARGUMENT for arguments that miss the schema; CONFLICT when the tool's schema itself is unusable. */
      readonly failure: ToolFailure;
      readonly violations: readonly SchemaViolation[];
      /** How many further violations were left out of `violations`. */
      readonly omitted: number;
    };

/** Whether a descriptor's input schema can be used. */
export type SchemaStatus = { readonly usable: true } | { readonly usable: false; readonly problem: string };

/** How the validator cache behaves. */
export interface ArgumentValidatorOptions {
  /** The most compiled schemas kept; default 1,000. */
  readonly maxEntries?: number;
  readonly limits?: SchemaLimits;
  /** The most violations reported per call; default 20. */
  readonly maxViolations?: number;
  /**
   * After this many compilations an ajv instance is retired for a fresh one (default 500): ajv keeps compiled
   * helpers in an instance-wide scope that removing a schema does not free, so instances must not live forever.
   */
  readonly compilationsPerEngine?: number;
}

const MAX_PATH_LENGTH = 256;
const MAX_MESSAGE_LENGTH = 200;

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
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
 * a large array of objects in the arguments could stall the service.
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
        continue; // not JSON: the request schema already refused such arguments
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

// ajv-formats is CommonJS with a default export; which of the two shapes arrives depends on the loader.
const addFormats = ((addFormatsPlugin as unknown as { default?: unknown }).default ?? addFormatsPlugin) as (ajv: unknown, options: { mode: 'fast' }) => void;

/** One ajv instance of one dialect, counting what it compiled. */
interface SchemaEngine {
  readonly ajv: Ajv | Ajv2019 | Ajv2020;
  compilations: number;
}

function createEngine(dialect: SchemaDialect, maxPatternLength: number): SchemaEngine {
  const options: Options = {
    strict: false,
    allErrors: true,
    allowUnionTypes: true,
    logger: false,
    // Compiled schemas are not registered by id: tools cannot see, shadow or collide with each other's schemas.
    addUsedSchema: false,
    code: { regExp: linearRegExpEngine(maxPatternLength) },
  };
  const ajv = dialect === '2020-12' ? new Ajv2020(options) : dialect === '2019-09' ? new Ajv2019(options) : new Ajv(options);
  addFormats(ajv, { mode: 'fast' });
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword(uniqueItemsKeyword());
  return { ajv, compilations: 0 };
}

type Compiled =
  | { readonly usable: true; readonly schemaText: string; readonly validate: ValidateFunction; readonly engine: SchemaEngine; readonly schema: AnySchema }
  | { readonly usable: false; readonly schemaText: string; readonly problem: string };

// Values a schema that recurses into itself without consuming input overflows the stack on.
const probes: readonly unknown[] = [{}, [], '', 0, null, true];

function compileWith(engine: SchemaEngine, schema: AnySchema, id: string): { validate: ValidateFunction; schema: AnySchema; engine: SchemaEngine } | { problem: string } {
  const rooted = typeof schema === 'boolean' ? schema : { ...schema, $id: id };
  engine.compilations++;
  let validate: ValidateFunction;
  try {
    validate = engine.ajv.compile(rooted);
  } catch (error) {
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

function violationOf(error: ErrorObject): SchemaViolation {
  let path = error.instancePath === '' ? '' : error.instancePath;
  const params = error.params as Record<string, unknown>;
  // The offending or missing property is part of where the problem is, and is a name, not an argument value.
  const property = params.additionalProperty ?? params.unevaluatedProperty ?? params.missingProperty;
  if (typeof property === 'string') path = `${path}/${property.replaceAll('~', '~0').replaceAll('/', '~1')}`;
  return { path: clip(path === '' ? '/' : path, MAX_PATH_LENGTH), keyword: error.keyword, message: clip(error.message ?? `fails ${error.keyword}`, MAX_MESSAGE_LENGTH) };
}

/** Validates invocation arguments against descriptor input schemas, compiling each schema once. */
export class ArgumentValidators {
  readonly #limits: SchemaLimits;
  readonly #maxViolations: number;
  readonly #compilationsPerEngine: number;
  readonly #engines = new Map<SchemaDialect, SchemaEngine>();
  readonly #cache: LruCache<string, Compiled>;
  #nextId = 1;

  constructor(options: ArgumentValidatorOptions = {}) {
    this.#limits = options.limits ?? defaultSchemaLimits;
    this.#maxViolations = options.maxViolations ?? 20;
    this.#compilationsPerEngine = options.compilationsPerEngine ?? 500;
    this.#cache = new LruCache(options.maxEntries ?? 1000, (_key, compiled) => {
      if (compiled.usable) compiled.engine.ajv.removeSchema(compiled.schema);
    });
  }

  /** How many compiled schemas (and refusals) are cached. */
  get size(): number {
    return this.#cache.size;
  }

  /** Whether the source's schema is usable; compiles it (once) if needed. */
  schemaStatus(source: InputSchemaSource): SchemaStatus {
    const compiled = this.#compiled(source);
    return compiled.usable ? { usable: true } : { usable: false, problem: compiled.problem };
  }

  /** Checks `args` against the source's input schema. Never throws; never echoes argument values. */
  validate(source: InputSchemaSource, args: unknown): ArgumentCheck {
    const compiled = this.#compiled(source);
    if (!compiled.usable) return this.#unusable(source, compiled.problem);
    let valid: boolean;
    try {
      valid = compiled.validate(args);
    } catch (error) {
      const problem = error instanceof RangeError ? 'validation exhausted the stack (the schema recurses endlessly)' : 'validating against the schema fails unexpectedly';
      this.#cache.set(this.#key(source), { usable: false, schemaText: source.inputSchemaJson, problem });
      return this.#unusable(source, problem);
    }
    if (valid) return { valid: true };
    const seen = new Set<string>();
    const violations: SchemaViolation[] = [];
    let total = 0;
    for (const error of compiled.validate.errors ?? []) {
      const violation = violationOf(error);
      const key = `${violation.path}\u0000${violation.message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      total++;
      if (violations.length < this.#maxViolations) violations.push(violation);
    }
    const shown = violations.slice(0, 5).map((v) => `${v.path} ${v.message}`);
    const more = total - shown.length;
    const message = clip(
      `the arguments do not match the input schema of ${source.toolId}@${source.toolVersion}: ${shown.join('; ')}${more > 0 ? `; and ${more} more` : ''}`,
      4096,
    );
    return { valid: false, failure: { code: 'INVALID_ARGUMENT', message, retryable: false }, violations, omitted: total - violations.length };
  }

  #unusable(source: InputSchemaSource, problem: string): ArgumentCheck {
    const message = clip(`the tool ${source.toolId}@${source.toolVersion} cannot be called: its input schema is unusable (${problem})`, 4096);
    return { valid: false, failure: { code: 'CONFLICT', message, retryable: false }, violations: [], omitted: 0 };
  }

  #key(source: InputSchemaSource): string {
    return `${source.toolId}\u0000${source.toolVersion}\u0000${source.definitionHash}`;
  }

  #compiled(source: InputSchemaSource): Compiled {
    const key = this.#key(source);
    const cached = this.#cache.get(key);
    // The text is compared too: a key must never serve a schema other than the one the descriptor holds.
    if (cached !== undefined && cached.schemaText === source.inputSchemaJson) return cached;
    const compiled = this.#compile(source.inputSchemaJson);
    this.#cache.set(key, compiled);
    return compiled;
  }

  #compile(schemaText: string): Compiled {
    const inspected = inspectInputSchema(schemaText, this.#limits);
    if (!inspected.ok) return { usable: false, schemaText, problem: inspected.problem };
    const attempt = (dialect: SchemaDialect) => compileWith(this.#engine(dialect), inspected.schema, `urn:toolplane:input-schema:${this.#nextId++}`);
    let result = attempt(inspected.dialect);
    // MCP assumes 2020-12 when a schema names no dialect, but many servers still write draft-07 schemas unlabelled.
    if ('problem' in result && !inspected.declared) {
      const fallback = attempt('draft-07');
      if (!('problem' in fallback)) result = fallback;
    }
    if ('problem' in result) return { usable: false, schemaText, problem: result.problem };
    return { usable: true, schemaText, validate: result.validate, schema: result.schema, engine: result.engine };
  }

  #engine(dialect: SchemaDialect): SchemaEngine {
    let engine = this.#engines.get(dialect);
    if (engine === undefined || engine.compilations >= this.#compilationsPerEngine) {
      engine = createEngine(dialect, this.#limits.maxPatternLength);
      this.#engines.set(dialect, engine);
    }
    return engine;
  }
}
