import type { ToolFailure } from '@toolplane/contracts';
import { compileSchema, createSchemaEngine, violationPath, type SchemaDialect, type SchemaEngine } from '@toolplane/json-schema';
import type { AnySchema, ErrorObject, ValidateFunction } from '@toolplane/json-schema';
import { LruCache } from './lru-cache.js';
import { defaultSchemaLimits, inspectInputSchema, type SchemaLimits } from './schema-guard.js';

// Argument validation against a descriptor's input schema, and result validation against its output schema (ajv 8).
// Each schema is compiled once per (toolId, toolVersion, definitionHash) and kept in an LRU cache, refusals included,
// so a bad schema costs one attempt, not one per call. A schema that cannot be used makes its tool unusable
// (CONFLICT, before the tool runs: an output schema that could not check the result refuses the call too) and never
// crashes anything.

/** What a descriptor contributes to argument validation. */
export interface InputSchemaSource {
  readonly toolId: string;
  readonly toolVersion: string;
  readonly definitionHash: string;
  readonly inputSchemaJson: string;
  /** The JSON Schema its structured results must match, when it declares one (see {@link outputSchemaOf}). */
  readonly outputSchemaJson?: string | undefined;
}

/** What a descriptor contributes to result validation. */
export type OutputSchemaSource = Pick<InputSchemaSource, 'toolId' | 'toolVersion' | 'definitionHash'> & { readonly outputSchemaJson: string };

/** Whether a result's structured content fits the tool's output schema; a miss names its violations (never values). */
export type OutputCheck =
  | { readonly valid: true }
  | {
      readonly valid: false;
      /** What is wrong, starting with the first violation: no structured content, a violation, or an unusable schema. */
      readonly problem: string;
      readonly violations: readonly SchemaViolation[];
      readonly omitted: number;
    };

/** Checks structured results against output schemas: what the SANITIZE stage is given (see the pipeline). */
export interface OutputValidator {
  validateOutput(source: OutputSchemaSource, structuredContent: unknown): OutputCheck;
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

/** Whether a descriptor's schemas can be used; an unusable one is named (input unless said otherwise). */
export type SchemaStatus = { readonly usable: true } | { readonly usable: false; readonly problem: string; readonly schema?: 'input' | 'output' };

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

type Compiled =
  | { readonly usable: true; readonly schemaText: string; readonly validate: ValidateFunction; readonly engine: SchemaEngine; readonly schema: AnySchema }
  | { readonly usable: false; readonly schemaText: string; readonly problem: string };

function violationOf(error: ErrorObject): SchemaViolation {
  return { path: clip(violationPath(error), MAX_PATH_LENGTH), keyword: error.keyword, message: clip(error.message ?? `fails ${error.keyword}`, MAX_MESSAGE_LENGTH) };
}

/** Validates invocation arguments against descriptor input schemas and results against output schemas, compiling each schema once. */
export class ArgumentValidators implements OutputValidator {
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

  /** Whether the source's schemas (input, and output when it declares one) are usable; compiles them (once) if needed. */
  schemaStatus(source: InputSchemaSource): SchemaStatus {
    const compiled = this.#compiled(source, 'input', source.inputSchemaJson);
    if (!compiled.usable) return { usable: false, problem: compiled.problem };
    if (source.outputSchemaJson === undefined) return { usable: true };
    const output = this.#compiled(source, 'output', source.outputSchemaJson);
    return output.usable ? { usable: true } : { usable: false, problem: output.problem, schema: 'output' };
  }

  /**
   * Checks `args` against the source's input schema, and that its output schema (if any) is usable, so a result that
   * could not be checked is refused before the tool runs. Never throws; never echoes argument values.
   */
  validate(source: InputSchemaSource, args: unknown): ArgumentCheck {
    const outcome = this.#run(source, 'input', source.inputSchemaJson, args);
    if (outcome.kind === 'unusable') return this.#unusable(source, 'input', outcome.problem);
    if (outcome.kind === 'invalid') {
      const message = clip(`the arguments do not match the input schema of ${source.toolId}@${source.toolVersion}: ${outcome.summary}`, 4096);
      return { valid: false, failure: { code: 'INVALID_ARGUMENT', message, retryable: false }, violations: outcome.violations, omitted: outcome.omitted };
    }
    if (source.outputSchemaJson !== undefined) {
      const output = this.#compiled(source, 'output', source.outputSchemaJson);
      if (!output.usable) return this.#unusable(source, 'output', output.problem);
    }
    return { valid: true };
  }

  /** Checks a result's structured content against the source's output schema. Never throws; never echoes values. */
  validateOutput(source: OutputSchemaSource, structuredContent: unknown): OutputCheck {
    if (structuredContent === undefined) return { valid: false, problem: 'it declares an output schema but returned no structured content (a JSON object)', violations: [], omitted: 0 };
    const outcome = this.#run(source, 'output', source.outputSchemaJson, structuredContent);
    if (outcome.kind === 'unusable') return { valid: false, problem: `its output schema is unusable (${outcome.problem})`, violations: [], omitted: 0 };
    if (outcome.kind === 'invalid') return { valid: false, problem: `its structured content does not match its output schema: ${outcome.summary}`, violations: outcome.violations, omitted: outcome.omitted };
    return { valid: true };
  }

  #run(
    source: Pick<InputSchemaSource, 'toolId' | 'toolVersion' | 'definitionHash'>,
    role: 'input' | 'output',
    schemaText: string,
    value: unknown,
  ):
    | { readonly kind: 'valid' }
    | { readonly kind: 'unusable'; readonly problem: string }
    | { readonly kind: 'invalid'; readonly summary: string; readonly violations: SchemaViolation[]; readonly omitted: number } {
    const compiled = this.#compiled(source, role, schemaText);
    if (!compiled.usable) return { kind: 'unusable', problem: compiled.problem };
    let valid: boolean;
    try {
      valid = compiled.validate(value);
    } catch (error) {
      const problem = error instanceof RangeError ? 'validation exhausted the stack (the schema recurses endlessly)' : 'validating against the schema fails unexpectedly';
      this.#cache.set(this.#key(source, role), { usable: false, schemaText, problem });
      return { kind: 'unusable', problem };
    }
    if (valid) return { kind: 'valid' };
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
    return { kind: 'invalid', summary: `${shown.join('; ')}${more > 0 ? `; and ${more} more` : ''}`, violations, omitted: total - violations.length };
  }

  #unusable(source: InputSchemaSource, role: 'input' | 'output', problem: string): ArgumentCheck {
    const message = clip(`the tool ${source.toolId}@${source.toolVersion} cannot be called: its ${role} schema is unusable (${problem})`, 4096);
    return { valid: false, failure: { code: 'CONFLICT', message, retryable: false }, violations: [], omitted: 0 };
  }

  #key(source: Pick<InputSchemaSource, 'toolId' | 'toolVersion' | 'definitionHash'>, role: 'input' | 'output'): string {
    return `${source.toolId}\u0000${source.toolVersion}\u0000${source.definitionHash}${role === 'input' ? '' : '\u0000output'}`;
  }

  #compiled(source: Pick<InputSchemaSource, 'toolId' | 'toolVersion' | 'definitionHash'>, role: 'input' | 'output', schemaText: string): Compiled {
    const key = this.#key(source, role);
    const cached = this.#cache.get(key);
    // The text is compared too: a key must never serve a schema other than the one the descriptor holds.
    if (cached !== undefined && cached.schemaText === schemaText) return cached;
    const compiled = this.#compile(schemaText);
    this.#cache.set(key, compiled);
    return compiled;
  }

  #compile(schemaText: string): Compiled {
    const inspected = inspectInputSchema(schemaText, this.#limits);
    if (!inspected.ok) return { usable: false, schemaText, problem: inspected.problem };
    const attempt = (dialect: SchemaDialect) => compileSchema(this.#engine(dialect), inspected.schema, `urn:toolplane:input-schema:${this.#nextId++}`);
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
      engine = createSchemaEngine(dialect, this.#limits.maxPatternLength);
      this.#engines.set(dialect, engine);
    }
    return engine;
  }
}
