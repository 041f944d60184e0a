import { type JsonObject, MAX_JSON_DEPTH, MAX_RESULT_BYTES, ToolplaneError, abortError, canonicalJson, throwIfAborted } from '@toolplane/contracts';
import jsonata from 'jsonata';

// A flow's mappings are JSONata over `{ input, steps }`. Planning a run must be a pure function of the run's history
// (a resumed run plans exactly what the first did), so the language is cut down to its deterministic, bounded part:
// - functions that read a clock or randomness, or evaluate source built at run time ($now, $millis, $random,
//   $shuffle, $eval), are refused when an expression compiles and shadowed by throwing bindings besides;
// - regular-expression literals are refused: JSONata runs them on the backtracking engine, where one pattern over a
//   step's (untrusted) output could block the process past any time box, which is only checked between nodes;
// - every evaluation is time-boxed, its evaluation depth and sequence lengths are bounded, any string it builds is
//   bounded as it is built (so `$s & $s` doubling cannot exhaust memory before the result is checked), and its result
//   must be plain JSON no larger than a tool result (MAX_RESULT_BYTES as canonical JSON) and MAX_JSON_DEPTH deep.
// The time box is the one thing read from a clock: an expression that needs nearly all of it is the problem, and
// planning it fails with a clear message rather than differing silently.
// Expressions name earlier steps as `steps.<id>`, which the validator checks against the flow's order; the context a
// step's expressions see holds only the outputs of steps before it, so no other way of reading `steps` sees more.

/** The bounds every evaluation runs within. */
export interface FlowExpressionLimits {
  /** Wall-clock milliseconds one evaluation may take. */
  readonly timeoutMs: number;
  /** How deeply evaluation may recurse (JSONata's stack guard). */
  readonly maxEvaluationDepth: number;
  /** The longest sequence (array) an evaluation may build. */
  readonly maxSequenceLength: number;
  /** The most UTF-8 bytes the canonical JSON of a result may have; also the longest string an evaluation may build. */
  readonly maxResultBytes: number;
  /** How deeply a result may nest. */
  readonly maxResultDepth: number;
  /** How many compiled expressions are kept, by source. */
  readonly cacheSize: number;
}

/** The bounds used unless a caller sets others. */
export const DEFAULT_FLOW_EXPRESSION_LIMITS: FlowExpressionLimits = {
  timeoutMs: 1000,
  maxEvaluationDepth: 500,
  maxSequenceLength: 100_000,
  maxResultBytes: MAX_RESULT_BYTES,
  maxResultDepth: MAX_JSON_DEPTH,
  cacheSize: 1024,
};

/** A JSON value as an expression may yield it. */
export type FlowJsonValue = null | boolean | number | string | readonly FlowJsonValue[] | { readonly [key: string]: FlowJsonValue };

/** What expressions see: the flow input and the outputs of the steps that succeeded so far. */
export interface FlowExpressionContext {
  readonly input: JsonObject;
  readonly steps: Readonly<Record<string, JsonObject>>;
}

/** A compiled expression and what it reads. */
export interface CompiledFlowExpression {
  readonly source: string;
  /** The step ids it reads as `steps.<id>`, sorted, each once. */
  readonly stepReferences: readonly string[];
}

/** Compiles and evaluates flow expressions within bounds; compiled expressions are cached by source. */
export interface FlowExpressions {
  /** Compiles `source`; a problem is INVALID_ARGUMENT whose message starts with `where` (e.g. `step "lookup" arguments`). */
  compile(source: string, where: string): CompiledFlowExpression;
  /** Evaluates `source`; `undefined` when it yields nothing. Any failure or bound crossed is INVALID_ARGUMENT naming `where`. */
  evaluate(source: string, context: FlowExpressionContext, where: string, signal?: AbortSignal): Promise<FlowJsonValue | undefined>;
  /** Evaluates `source` and requires a JSON object. */
  evaluateObject(source: string, context: FlowExpressionContext, where: string, signal?: AbortSignal): Promise<JsonObject>;
  /** Evaluates `source` as a condition: JSONata's effective boolean value, nothing being false. */
  evaluateCondition(source: string, context: FlowExpressionContext, where: string, signal?: AbortSignal): Promise<boolean>;
}

/** Functions an expression may not use: they read a clock or randomness, or evaluate source built at run time. */
export const FORBIDDEN_FLOW_FUNCTIONS: readonly string[] = ['eval', 'millis', 'now', 'random', 'shuffle'];

// A binding name JSONata source cannot spell (it has a space), carrying one evaluation's guard state.
const GUARD_BINDING = 'toolplane guard';
const EVALUATE_EXIT = Symbol.for('jsonata.__evaluate_exit');

interface Guard {
  readonly signal: AbortSignal | undefined;
  readonly maxStringLength: number;
}

interface JsonataNode {
  readonly type?: string;
  readonly value?: unknown;
  readonly position?: number;
  readonly steps?: readonly JsonataNode[];
  readonly [key: string]: unknown;
}

interface Entry {
  readonly compiled: CompiledFlowExpression;
  readonly expression: jsonata.Expression;
}

/** Builds an evaluator with its own cache; the bounds default to {@link DEFAULT_FLOW_EXPRESSION_LIMITS}. */
export function flowExpressions(limits: Partial<FlowExpressionLimits> = {}): FlowExpressions {
  const bounds: FlowExpressionLimits = { ...DEFAULT_FLOW_EXPRESSION_LIMITS, ...limits };
  const cache = new Map<string, Entry>();

  const entryFor = (source: string, where: string): Entry => {
    const cached = cache.get(source);
    if (cached !== undefined) {
      // Re-inserting keeps the map in least-recently-used order.
      cache.delete(source);
      cache.set(source, cached);
      return cached;
    }
    const entry = compileEntry(source, where, bounds);
    cache.set(source, entry);
    if (cache.size > bounds.cacheSize) {
      const oldest = cache.keys().next();
      if (oldest.done !== true) cache.delete(oldest.value);
    }
    return entry;
  };

  const evaluate = async (source: string, context: FlowExpressionContext, where: string, signal?: AbortSignal): Promise<FlowJsonValue | undefined> => {
    throwIfAborted(signal, where);
    const { expression } = entryFor(source, where);
    const guard: Guard = { signal, maxStringLength: bounds.maxResultBytes };
    let raw: unknown;
    try {
      raw = await expression.evaluate({ input: context.input, steps: context.steps }, { [GUARD_BINDING]: guard });
    } catch (error) {
      if (signal?.aborted === true) throw abortError(where, signal.reason);
      throw new ToolplaneError('INVALID_ARGUMENT', `${where}: ${describeJsonataError(error)}`);
    }
    return normalizeResult(raw, where, bounds);
  };

  return {
    compile: (source, where) => entryFor(source, where).compiled,
    evaluate,
    async evaluateObject(source, context, where, signal) {
      const value = await evaluate(source, context, where, signal);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new ToolplaneError('INVALID_ARGUMENT', `${where}: must evaluate to a JSON object, not ${describeKind(value)}`);
      }
      return value as JsonObject;
    },
    async evaluateCondition(source, context, where, signal) {
      return effectiveBoolean(await evaluate(source, context, where, signal));
    },
  };
}

function compileEntry(source: string, where: string, bounds: FlowExpressionLimits): Entry {
  let expression: jsonata.Expression;
  try {
    expression = jsonata(source, { timeout: bounds.timeoutMs, stack: bounds.maxEvaluationDepth, sequence: bounds.maxSequenceLength });
  } catch (error) {
    throw new ToolplaneError('INVALID_ARGUMENT', `${where}: the expression does not compile: ${describeJsonataError(error)}`);
  }
  const stepReferences = analyze(expression.ast() as JsonataNode, where);
  for (const name of FORBIDDEN_FLOW_FUNCTIONS) {
    expression.registerFunction(name, () => {
      throw new ToolplaneError('INVALID_ARGUMENT', `$${name} is not available in flow expressions`);
    });
  }
  expression.registerFunction('pad', boundedPad(bounds.maxResultBytes), '<s-ns?:s>');
  (expression as unknown as { assign(name: symbol, value: unknown): void }).assign(EVALUATE_EXIT, guardNode);
  return { compiled: { source, stepReferences }, expression };
}

// Runs after every node: stops an aborted evaluation and any string growing past the bound as soon as it is built.
function guardNode(_node: unknown, _input: unknown, environment: jsonata.Environment, result: unknown): void {
  const guard = environment.lookup(GUARD_BINDING) as Guard | undefined;
  if (guard === undefined) return;
  throwIfAborted(guard.signal, 'the expression');
  if (typeof result === 'string' && result.length > guard.maxStringLength) {
    throw new ToolplaneError('INVALID_ARGUMENT', `the expression built a string longer than ${guard.maxStringLength} characters`);
  }
}

// JSONata's $pad builds its padding before anything can check it: the same function, with the width bounded first.
function boundedPad(maxLength: number) {
  return (text: string | undefined, width: number, fill?: string): string | undefined => {
    if (text === undefined) return undefined;
    const target = Math.abs(Math.trunc(width));
    if (target > maxLength) throw new ToolplaneError('INVALID_ARGUMENT', `$pad to ${target} characters is longer than the bound of ${maxLength}`);
    const characters = Array.from(text);
    const missing = target - characters.length;
    if (missing <= 0) return text;
    const fillCharacters = Array.from(fill === undefined || fill.length === 0 ? ' ' : fill);
    const padding = Array.from({ length: missing }, (_, i) => fillCharacters[i % fillCharacters.length]).join('');
    return width > 0 ? text + padding : padding + text;
  };
}

// Walks the syntax tree once: refuses what flows may not use, and collects the `steps.<id>` references.
function analyze(root: JsonataNode, where: string): readonly string[] {
  const references = new Set<string>();
  const refuse = (node: JsonataNode, problem: string): never => {
    throw new ToolplaneError('INVALID_ARGUMENT', `${where}: ${problem}${node.position === undefined ? '' : ` (at position ${node.position})`}`);
  };
  const stack: JsonataNode[] = [root];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (node.type === 'variable' && typeof node.value === 'string' && FORBIDDEN_FLOW_FUNCTIONS.includes(node.value)) {
      refuse(node, `$${node.value} is not available in flow expressions (they must be deterministic)`);
    }
    if (node.type === 'regex') refuse(node, 'regular expressions are not available in flow expressions (they could run without bound)');
    if (node.type === 'path' && node.steps !== undefined) {
      // `$.steps.x` and `$$.steps.x` read the same as `steps.x` at the top level.
      const leading = node.steps[0];
      const first = leading?.type === 'variable' && (leading.value === '' || leading.value === '$') ? 1 : 0;
      const head = node.steps[first];
      const next = node.steps[first + 1];
      if (head?.type === 'name' && head.value === 'steps' && next?.type === 'name' && typeof next.value === 'string' && head.stages === undefined) {
        references.add(next.value);
      }
    }
    stack.push(...childNodes(node));
  }
  return [...references].sort();
}

// The nodes directly below `node`, wherever the parser put them (operands, arguments, pairs of an object
// constructor, sort terms, stages, predicates, groups).
function childNodes(node: JsonataNode): JsonataNode[] {
  const found: JsonataNode[] = [];
  const pending: unknown[] = Object.entries(node)
    .filter(([key]) => key !== 'value' || isNode(node.value))
    .map(([, value]) => value);
  const seen = new Set<object>();
  for (let value = pending.pop(); value !== undefined || pending.length > 0; value = pending.pop()) {
    if (value === null || typeof value !== 'object' || value instanceof RegExp || seen.has(value)) continue;
    seen.add(value);
    if (isNode(value)) found.push(value);
    else pending.push(...(Array.isArray(value) ? (value as unknown[]) : Object.values(value as Record<string, unknown>)));
  }
  return found;
}

function isNode(value: unknown): value is JsonataNode {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && typeof (value as { type?: unknown }).type === 'string';
}

/** JSONata's effective boolean value ($boolean), with nothing (`undefined`) counting as false. */
export function effectiveBoolean(value: FlowJsonValue | undefined): boolean {
  if (value === undefined || value === null) return false;
  if (Array.isArray(value)) return value.some((item: FlowJsonValue) => effectiveBoolean(item));
  if (typeof value === 'object') return Object.keys(value).length > 0;
  if (typeof value === 'string') return value.length > 0;
  if (typeof value === 'number') return value !== 0;
  return value === true;
}

// JSONata yields sequences (arrays with flags), objects without a prototype, functions and `undefined`: copy what is
// JSON into plain values, refuse the rest, then bound the depth and the canonical size.
function normalizeResult(raw: unknown, where: string, bounds: FlowExpressionLimits): FlowJsonValue | undefined {
  if (raw === undefined) return undefined;
  const refuse = (problem: string): never => {
    throw new ToolplaneError('INVALID_ARGUMENT', `${where}: the result ${problem}`);
  };
  const copy = (value: unknown, path: string, depth: number): FlowJsonValue | undefined => {
    if (value === undefined) return undefined;
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
    if (typeof value === 'number') return Number.isFinite(value) ? value : refuse(`has ${String(value)} at ${path}, which JSON cannot represent`);
    if (typeof value === 'function' || typeof value !== 'object' || isJsonataFunction(value)) return refuse(`has a function at ${path}, which JSON cannot represent`);
    if (depth >= bounds.maxResultDepth) return refuse(`nests deeper than ${bounds.maxResultDepth} levels`);
    if (Array.isArray(value)) {
      const items: FlowJsonValue[] = [];
      value.forEach((item: unknown, i) => {
        const copied = copy(item, `${path}[${i}]`, depth + 1);
        if (copied !== undefined) items.push(copied);
      });
      return items;
    }
    const prototype = Object.getPrototypeOf(value) as unknown;
    if (prototype !== Object.prototype && prototype !== null) return refuse(`has a ${describeKind(value)} at ${path}, which JSON cannot represent`);
    const object: Record<string, FlowJsonValue> = {};
    for (const [key, item] of Object.entries(value)) {
      const copied = copy(item, `${path}.${key}`, depth + 1);
      if (copied !== undefined) object[key] = copied;
    }
    return object;
  };
  const value = copy(raw, '$', 0);
  if (value === undefined) return undefined;
  const bytes = new TextEncoder().encode(canonicalJson(value)).length;
  if (bytes > bounds.maxResultBytes) refuse(`is ${bytes} bytes of JSON, more than the bound of ${bounds.maxResultBytes}`);
  return value;
}

// JSONata's lambdas and built-in functions are objects carrying a JS function (parsed JSON never does).
function isJsonataFunction(value: object): boolean {
  const { apply, implementation } = value as { apply?: unknown; implementation?: unknown };
  return typeof apply === 'function' || typeof implementation === 'function';
}

function describeKind(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof RegExp) return 'regular expression';
  return `a ${typeof value}`;
}

// JSONata throws plain objects {code, message, position, token}; a ToolplaneError thrown by a guard keeps its text.
function describeJsonataError(error: unknown): string {
  if (error instanceof ToolplaneError) return error.message;
  if (error !== null && typeof error === 'object') {
    const { code, message, position } = error as { code?: unknown; message?: unknown; position?: unknown };
    const text = typeof message === 'string' && message.length > 0 ? message : 'evaluation failed';
    const at = typeof position === 'number' ? ` (at position ${position})` : '';
    const tag = typeof code === 'string' ? ` [${code}]` : '';
    return `${text}${at}${tag}`.slice(0, 1024);
  }
  return String(error).slice(0, 1024);
}
