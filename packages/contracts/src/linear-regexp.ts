import { RE2JS } from 're2js';

// Every regular expression Toolplane runs over untrusted text (a schema's `pattern`, a command policy) runs on
// RE2 (re2js): matching is linear in the input, so no pattern can hang the service with catastrophic
// backtracking. RE2 has no backreferences or lookaround; a pattern that needs them is refused, never
// approximated.

/** A compiled linear-time regular expression. */
export interface LinearRegExp {
  /** The pattern as written (ECMAScript syntax). */
  readonly source: string;
  /** Whether the pattern matches anywhere in `text` (unanchored, like RegExp.prototype.test). */
  test(text: string): boolean;
}

/** A compiled pattern, or why it cannot be used. */
export type LinearRegExpResult = { readonly ok: true; readonly regExp: LinearRegExp } | { readonly ok: false; readonly problem: string };

/** How a pattern is compiled. */
export interface LinearRegExpOptions {
  readonly caseInsensitive?: boolean;
  /** The longest pattern source accepted, in characters. */
  readonly maxLength?: number;
}

/** The longest pattern accepted by default; longer ones are refused before any parsing. */
export const DEFAULT_MAX_PATTERN_LENGTH = 4096;

function ecmaScriptSyntaxError(source: string, flags: string): string | undefined {
  try {
    new RegExp(source, flags);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Finds constructs RE2 cannot run, outside character classes, to refuse them with a precise reason. */
function unsupportedConstruct(source: string): string | undefined {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') {
      const next = source[i + 1];
      if (!inClass && next === 'k' && source[i + 2] === '<') return 'a named backreference (\\k<…>)';
      if (!inClass && next !== undefined && next >= '1' && next <= '9') return `a backreference (\\${next})`;
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') {
      inClass = true;
      continue;
    }
    if (c === '(' && source[i + 1] === '?') {
      const rest = source.slice(i + 2, i + 4);
      if (rest.startsWith('=') || rest.startsWith('!')) return 'a lookahead ((?=…) or (?!…))';
      if (rest === '<=' || rest === '<!') return 'a lookbehind ((?<=…) or (?<!…))';
    }
  }
  return undefined;
}

/**
 * Compiles an ECMAScript pattern (JSON Schema `pattern` syntax) to a linear-time matcher. Refuses, with a reason,
 * a pattern that is too long, not valid ECMAScript, or that needs backtracking (backreferences, lookaround).
 */
export function compileLinearRegExp(source: string, options: LinearRegExpOptions = {}): LinearRegExpResult {
  const maxLength = options.maxLength ?? DEFAULT_MAX_PATTERN_LENGTH;
  if (source.length > maxLength) return { ok: false, problem: `the pattern is ${source.length} characters long; at most ${maxLength} are accepted` };
  // Parsing only (nothing is matched), so this cannot backtrack; it rejects what ECMAScript itself rejects. Schemas
  // in the wild are written for either mode (`[\w-]` is valid only without `u`), so either is accepted.
  const syntaxError = ecmaScriptSyntaxError(source, 'u') === undefined ? undefined : ecmaScriptSyntaxError(source, '');
  if (syntaxError !== undefined) return { ok: false, problem: `not a valid ECMAScript regular expression: ${syntaxError}` };
  const unsupported = unsupportedConstruct(source);
  if (unsupported !== undefined) return { ok: false, problem: `the pattern uses ${unsupported}, which linear-time matching cannot support` };
  try {
    const compiled = RE2JS.compile(RE2JS.translateRegExp(source), options.caseInsensitive === true ? RE2JS.CASE_INSENSITIVE : 0);
    return { ok: true, regExp: { source, test: (text: string) => compiled.test(text) } };
  } catch (error) {
    return { ok: false, problem: `the pattern is not supported by linear-time matching: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** The options command-policy patterns are compiled with, wherever they are compiled. */
export const COMMAND_PATTERN_OPTIONS: LinearRegExpOptions = { caseInsensitive: true };

/**
 * Compiles a command-policy pattern (a descriptor's `commandPolicy.allow`/`block` or a tenant's blocked commands) the
 * way the tool adapter matches it: linear-time, case-insensitive. The registry refuses at bind time what this refuses.
 */
export function compileCommandPattern(source: string): LinearRegExpResult {
  return compileLinearRegExp(source, COMMAND_PATTERN_OPTIONS);
}
