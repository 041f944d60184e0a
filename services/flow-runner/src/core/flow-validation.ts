import {
  type ErrorCode,
  FlowDefinitionBody,
  type FlowCallStep,
  type JsonObject,
  type SideEffectClass,
  ToolplaneError,
  canonicalJson,
  isFlowToolId,
  throwIfAborted,
} from '@toolplane/contracts';
import { compileSchema, createSchemaEngine, schemaDialectOf, violationPath, type SchemaDialect, type SchemaEngine } from '@toolplane/json-schema';
import type { ErrorObject } from '@toolplane/json-schema';
import { type FlowExpressions, flowExpressions } from './flow-expressions.js';

// Publishing a Flow version checks the whole body at once and reports every problem in one error, so an operator
// fixes a draft in one round: each expression compiles (within the language's deterministic subset); each
// `steps.<id>` names a step that has settled before the expression runs (an earlier step; never a sibling in the
// same parallel group, which runs at the same time); each call's tool exists; retry is declared only on READ
// tools (only a read can be repeated without repeating an effect); and both JSON Schemas compile the way the tool
// adapter compiles a descriptor's schema (ajv 8 with formats, non-strict, linear-time patterns, no registered ids).

/** What validation needs to know of a step's tool. */
export interface FlowToolInfo {
  readonly sideEffectClass: SideEffectClass;
  readonly inputSchemaJson: string;
}

/** Finds a step's tool (an active descriptor of the workspace); `undefined` when there is none. May throw ToolplaneError. */
export type FlowToolLookup = (toolId: string, toolVersion: string | undefined) => FlowToolInfo | undefined | Promise<FlowToolInfo | undefined>;

/** How validation runs. */
export interface FlowValidationOptions {
  readonly expressions?: FlowExpressions;
  readonly schemas?: FlowSchemas;
  readonly signal?: AbortSignal;
}

/** The most problems one refusal lists (the rest are counted). */
export const MAX_LISTED_PROBLEMS = 20;

interface Problem {
  readonly code: Extract<ErrorCode, 'INVALID_ARGUMENT' | 'NOT_FOUND'>;
  readonly message: string;
}

/**
 * Checks a Flow body for publishing. Throws one ToolplaneError listing every problem: NOT_FOUND when the only
 * problems are unknown tools, else INVALID_ARGUMENT. A lookup failure (e.g. TEMPORARY_UNAVAILABLE) is thrown as is.
 */
export async function validateFlowBody(body: FlowDefinitionBody, lookupTool: FlowToolLookup, options: FlowValidationOptions = {}): Promise<void> {
  const problems: Problem[] = [];
  const invalid = (message: string) => problems.push({ code: 'INVALID_ARGUMENT', message });
  const parsed = FlowDefinitionBody.safeParse(body);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) invalid(`${issue.path.length === 0 ? 'the body' : issue.path.join('.')}: ${issue.message}`);
    throw refusal(problems);
  }
  const expressions = options.expressions ?? flowExpressions();
  const schemas = options.schemas ?? flowSchemas();

  for (const key of ['inputSchema', 'outputSchema'] as const) {
    const compiled = schemas.compile(parsed.data[key]);
    if (!compiled.usable) invalid(`${key}: ${compiled.problem}`);
  }

  const settled = new Set<string>();
  const groups = new Set(parsed.data.steps.filter((step) => step.kind === 'parallel').map((step) => step.id));
  const later = new Set(parsed.data.steps.flatMap((step) => (step.kind === 'parallel' ? step.steps.map((child) => child.id) : [step.id])));
  const checkExpression = (source: string, where: string, siblings: ReadonlySet<string>) => {
    let references: readonly string[];
    try {
      references = expressions.compile(source, where).stepReferences;
    } catch (error) {
      if (!(error instanceof ToolplaneError)) throw error;
      invalid(error.message);
      return;
    }
    for (const id of references) {
      if (settled.has(id)) continue;
      if (siblings.has(id)) invalid(`${where}: steps.${id} is in the same parallel group, which runs at the same time`);
      else if (groups.has(id)) invalid(`${where}: steps.${id} is a parallel group, which has no output of its own; name one of its steps`);
      else if (later.has(id)) invalid(`${where}: steps.${id} has not run yet at this point`);
      else invalid(`${where}: steps.${id} names no step of this flow`);
    }
  };
  const checkCall = async (step: FlowCallStep, where: string, siblings: ReadonlySet<string>) => {
    checkExpression(step.arguments, `${where} arguments`, siblings);
    if (step.when !== undefined) checkExpression(step.when, `${where} when`, siblings);
    throwIfAborted(options.signal, 'validating the flow');
    const named = step.toolVersion === undefined ? step.tool : `${step.tool}@${step.toolVersion}`;
    // A step holds its run while it waits; a flow tool as a step would hold a second run (and an adapter slot) inside
    // the first, so runs could wait on each other without bound. A capability composed of flows is one flow.
    if (isFlowToolId(step.tool)) {
      invalid(`${where}: ${named} is a flow-backed tool; a flow's steps call MCP tools, not other flows`);
      return;
    }
    const tool = await lookupTool(step.tool, step.toolVersion);
    if (tool === undefined) problems.push({ code: 'NOT_FOUND', message: `${where}: the tool ${named} is not an active tool of this workspace` });
    else if (step.retry !== undefined && tool.sideEffectClass !== 'READ') {
      invalid(`${where}: retry is only allowed on READ tools, and ${named} is ${tool.sideEffectClass}`);
    }
  };

  for (const step of parsed.data.steps) {
    if (step.kind === 'call') {
      await checkCall(step, `step "${step.id}"`, new Set());
      settled.add(step.id);
      continue;
    }
    const siblings = new Set(step.steps.map((child) => child.id));
    if (step.when !== undefined) checkExpression(step.when, `step "${step.id}" when`, siblings);
    for (const child of step.steps) await checkCall(child, `step "${child.id}" (in "${step.id}")`, siblings);
    for (const id of siblings) settled.add(id);
  }
  checkExpression(parsed.data.output, 'output', new Set());

  if (problems.length > 0) throw refusal(problems);
}

function refusal(problems: readonly Problem[]): ToolplaneError {
  const code = problems.every((problem) => problem.code === 'NOT_FOUND') ? 'NOT_FOUND' : 'INVALID_ARGUMENT';
  const listed = problems.slice(0, MAX_LISTED_PROBLEMS).map((problem) => clip(problem.message, 300));
  const more = problems.length - listed.length;
  const what = code === 'NOT_FOUND' ? 'the flow calls tools that do not exist' : 'the flow is not valid';
  return new ToolplaneError(code, clip(`${what}: ${listed.join('; ')}${more > 0 ? `; and ${more} more` : ''}`, 4096));
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

// --- JSON Schemas --------------------------------------------------------------------------------------------------

/** A compiled flow schema, or why it cannot be used. */
export type CompiledFlowSchema =
  | { readonly usable: true; validate(value: unknown): readonly string[] }
  | { readonly usable: false; readonly problem: string };

/** Compiles flow input/output JSON Schemas (cached by canonical text) the way the tool adapter compiles schemas. */
export interface FlowSchemas {
  compile(schema: JsonObject): CompiledFlowSchema;
}

/** How the schema compiler behaves. */
export interface FlowSchemaOptions {
  /** The most compiled schemas kept; default 256. */
  readonly maxEntries?: number;
  /** The longest `pattern`, in characters. */
  readonly maxPatternLength?: number;
  /** The most violations a validation reports; default 5. */
  readonly maxViolations?: number;
}

// ajv keeps compiled helpers in an instance-wide scope that removing a schema does not free: instances are renewed.
const COMPILATIONS_PER_ENGINE = 500;

/** Builds a schema compiler with its own cache. */
export function flowSchemas(options: FlowSchemaOptions = {}): FlowSchemas {
  const maxEntries = options.maxEntries ?? 256;
  const maxPatternLength = options.maxPatternLength ?? 4096;
  const maxViolations = options.maxViolations ?? 5;
  const engines = new Map<SchemaDialect, SchemaEngine>();
  const cache = new Map<string, { readonly compiled: CompiledFlowSchema; readonly release: () => void }>();
  let nextId = 1;

  const engineFor = (dialect: SchemaDialect): SchemaEngine => {
    let engine = engines.get(dialect);
    if (engine === undefined || engine.compilations >= COMPILATIONS_PER_ENGINE) {
      engine = createSchemaEngine(dialect, maxPatternLength);
      engines.set(dialect, engine);
    }
    return engine;
  };

  const build = (schema: JsonObject): { readonly compiled: CompiledFlowSchema; readonly release: () => void } => {
    const unusable = (problem: string) => ({ compiled: { usable: false, problem } as const, release: () => undefined });
    const { $schema: declared, $id: _id, ...root } = schema;
    let dialect: SchemaDialect = '2020-12';
    if (declared !== undefined) {
      const known = typeof declared === 'string' ? schemaDialectOf(declared) : undefined;
      if (known === undefined) return unusable(`unsupported $schema ${clip(JSON.stringify(declared), 200)}: use draft-07, 2019-09 or 2020-12`);
      dialect = known;
    }
    const compiled = compileSchema(engineFor(dialect), root, `urn:toolplane:flow-schema:${nextId++}`);
    if ('problem' in compiled) return unusable(compiled.problem);
    const { validate } = compiled;
    const release = () => compiled.engine.ajv.removeSchema(compiled.schema);
    const check = (value: unknown): readonly string[] => {
      let valid: boolean;
      try {
        valid = validate(value);
      } catch {
        return ['validating against the schema fails unexpectedly'];
      }
      if (valid) return [];
      const messages = [...new Set((validate.errors ?? []).map(violationOf))];
      const shown = messages.slice(0, maxViolations);
      return messages.length > shown.length ? [...shown, `and ${messages.length - shown.length} more`] : shown;
    };
    return { compiled: { usable: true, validate: check }, release };
  };

  return {
    compile(schema) {
      const key = canonicalJson(schema);
      const cached = cache.get(key);
      if (cached !== undefined) {
        cache.delete(key);
        cache.set(key, cached);
        return cached.compiled;
      }
      const entry = build(schema);
      cache.set(key, entry);
      if (cache.size > maxEntries) {
        const [oldestKey, oldest] = cache.entries().next().value ?? [];
        if (oldestKey !== undefined && oldest !== undefined) {
          cache.delete(oldestKey);
          oldest.release();
        }
      }
      return entry.compiled;
    },
  };
}

function violationOf(error: ErrorObject): string {
  return clip(`${violationPath(error)} ${error.message ?? `fails ${error.keyword}`}`, 300);
}
