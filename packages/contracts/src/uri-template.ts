import { RE2JS } from 're2js';

// RFC 6570 URI templates as MCP servers offer them (`resources/templates/list`), for a binding whose every variable is
// one required string: the registry derives a bound template's input schema from its variables, the tool adapter
// expands it with a call's arguments, and the MCP endpoint matches a URI a client asks for against it. One parser for
// all three, so the variables a schema requires are exactly those expansion uses and matching extracts.
//
// Levels 1–3 are supported (every operator: none, `+`, `#`, `.`, `/`, `;`, `?`, `&`). Level 4's modifiers (`:n`
// prefixes and `*` explosion) are refused: a prefix keeps part of a value and an explosion expects a list or a map,
// neither of which a string argument is. Matching runs on RE2 (linear in the URI, as every pattern over untrusted text
// does here). The invariant, for a template that names each variable once: a URI it expands to matches it, and
// expanding what the match extracted gives that URI again, `expand(match(expand(v))) === expand(v)`, even where the
// template is ambiguous (`{a}{b}`) and the extracted values differ from `v`.

/** A parsed URI template whose variables are required strings. */
export interface UriTemplate {
  /** The template as written. */
  readonly template: string;
  /** Its variables, in the order they first appear, each once. */
  readonly variables: readonly string[];
  /** The URI it expands to with these values (RFC 6570 §3; every variable must have one). */
  expand(values: Readonly<Record<string, string>>): string;
  /** The values of a URI it expands to, or undefined when the URI is not one of them. */
  match(uri: string): Record<string, string> | undefined;
}

/** A parsed template, or why it cannot be used. */
export type UriTemplateResult = { readonly ok: true; readonly template: UriTemplate } | { readonly ok: false; readonly problem: string };

/** The most expressions a template may have, and the longest template and URI matched. */
export const URI_TEMPLATE_LIMITS = { maxExpressions: 32, maxLength: 2048 } as const;

interface Operator {
  readonly first: string;
  readonly separator: string;
  /** Whether each value is written `name=value`. */
  readonly named: boolean;
  /** What follows a named variable's name when its value is empty. */
  readonly ifEmpty: string;
  /** Whether reserved characters and pct-encoded triplets are kept as they are (`+` and `#`). */
  readonly reserved: boolean;
}

// RFC 6570 Appendix A.
const operators: Readonly<Record<string, Operator>> = {
  '': { first: '', separator: ',', named: false, ifEmpty: '', reserved: false },
  '+': { first: '', separator: ',', named: false, ifEmpty: '', reserved: true },
  '#': { first: '#', separator: ',', named: false, ifEmpty: '', reserved: true },
  '.': { first: '.', separator: '.', named: false, ifEmpty: '', reserved: false },
  '/': { first: '/', separator: '/', named: false, ifEmpty: '', reserved: false },
  ';': { first: ';', separator: ';', named: true, ifEmpty: '', reserved: false },
  '?': { first: '?', separator: '&', named: true, ifEmpty: '=', reserved: false },
  '&': { first: '&', separator: '&', named: true, ifEmpty: '=', reserved: false },
};

type Part = { readonly literal: string } | { readonly operator: Operator; readonly names: readonly string[] };

const UNRESERVED = /[A-Za-z0-9\-._~]/;
const RESERVED = /[:/?#[\]@!$&'()*+,;=]/;
const VARIABLE_NAME = /^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+(?:\.(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+)*$/;
// What one value's expansion consists of. Elsewhere than `+` and `#`: unreserved characters, and every other character
// as the upper-case triplets of its UTF-8 encoding (never an unreserved character's, which expansion writes as it is,
// never bytes that are not UTF-8), so text another expression wrote is not taken for this one's. With `+` and `#`:
// reserved characters too, and any triplet (kept as written).
const CONTINUATION = '%[89AB][0-9A-F]';
const ENCODED_CHARACTER = [
  '%(?:[01][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-DF])',
  `%(?:C[2-9A-F]|D[0-9A-F])${CONTINUATION}`,
  `%E0%[AB][0-9A-F]${CONTINUATION}`,
  `%E[1-9A-CEF]${CONTINUATION}${CONTINUATION}`,
  `%ED%[89][0-9A-F]${CONTINUATION}`,
  `%F0%[9AB][0-9A-F]${CONTINUATION}${CONTINUATION}`,
  `%F[1-3]${CONTINUATION}${CONTINUATION}${CONTINUATION}`,
  `%F4%8[0-9A-F]${CONTINUATION}${CONTINUATION}`,
].join('|');
const UNRESERVED_VALUE = String.raw`(?:[A-Za-z0-9\-._~]|${ENCODED_CHARACTER})*`;
const RESERVED_VALUE = String.raw`(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*`;

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function pctEncode(character: string): string {
  return [...utf8.encode(character)].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

/** A value as an expression writes it: what it may not contain pct-encoded (UTF-8), a reserved expansion's triplets kept. */
function encodeValue(value: string, reserved: boolean): string {
  let out = '';
  const characters = [...value];
  for (let i = 0; i < characters.length; i++) {
    const character = characters[i]!;
    if (UNRESERVED.test(character) || (reserved && RESERVED.test(character))) out += character;
    else if (reserved && character === '%' && /^[0-9A-Fa-f]{2}$/.test(characters.slice(i + 1, i + 3).join(''))) out += character;
    else out += pctEncode(character);
  }
  return out;
}

function parseParts(template: string): Part[] | string {
  const parts: Part[] = [];
  let expressions = 0;
  let at = 0;
  while (at < template.length) {
    const open = template.indexOf('{', at);
    const close = template.indexOf('}', at);
    if (close !== -1 && (open === -1 || close < open)) return `a "}" at ${close} closes no expression`;
    if (open === -1) {
      parts.push({ literal: template.slice(at) });
      break;
    }
    if (open > at) parts.push({ literal: template.slice(at, open) });
    const end = template.indexOf('}', open);
    if (end === -1) return `the expression at ${open} is not closed`;
    if (++expressions > URI_TEMPLATE_LIMITS.maxExpressions) return `more than ${URI_TEMPLATE_LIMITS.maxExpressions} expressions`;
    const body = template.slice(open + 1, end);
    const symbol = body.slice(0, 1);
    const operator = symbol in operators && symbol !== '' ? operators[symbol]! : undefined;
    if (operator === undefined && /^[=,!@|]/.test(body)) return `the operator "${symbol}" is reserved by RFC 6570`;
    const names = (operator === undefined ? body : body.slice(1)).split(',');
    for (const name of names) {
      if (name.endsWith('*') || /:\d+$/.test(name)) {
        return `the variable ${JSON.stringify(name)} has a level-4 modifier (a prefix or an explosion); a bound variable is one whole string`;
      }
      if (!VARIABLE_NAME.test(name)) return `${JSON.stringify(name)} is not a variable name`;
    }
    parts.push({ operator: operator ?? operators['']!, names });
    at = end + 1;
  }
  return parts;
}

function expandParts(parts: readonly Part[], values: Readonly<Record<string, string>>): string {
  let uri = '';
  for (const part of parts) {
    if ('literal' in part) {
      uri += part.literal;
      continue;
    }
    const { operator } = part;
    const items = part.names.map((name) => {
      const value = values[name];
      if (value === undefined) throw new TypeError(`no value for the variable ${name}`);
      if (!operator.named) return encodeValue(value, operator.reserved);
      return value === '' ? `${name}${operator.ifEmpty}` : `${name}=${encodeValue(value, operator.reserved)}`;
    });
    uri += operator.first + items.join(operator.separator);
  }
  return uri;
}

/** The RE2 pattern a URI must match whole, and which variable each capturing group holds (one group per occurrence). */
function matcherOf(parts: readonly Part[]): { readonly pattern: string; readonly groups: readonly { name: string; operator: Operator }[] } {
  let pattern = '';
  const groups: { name: string; operator: Operator }[] = [];
  for (const part of parts) {
    if ('literal' in part) {
      pattern += RE2JS.quote(part.literal);
      continue;
    }
    const { operator } = part;
    const value = operator.reserved ? RESERVED_VALUE : UNRESERVED_VALUE;
    const items = part.names.map((name) => {
      groups.push({ name, operator });
      if (!operator.named) return `(${value})`;
      // `;name` for an empty value, `;name=value` otherwise; `?name=` and `&name=` always carry the `=`.
      return operator.ifEmpty === '' ? `${RE2JS.quote(name)}(?:=(${value.slice(0, -1)}+))?` : `${RE2JS.quote(name)}=(${value})`;
    });
    pattern += RE2JS.quote(operator.first) + items.join(RE2JS.quote(operator.separator));
  }
  return { pattern, groups };
}

/**
 * A reserved expansion's captured text as the value it was expanded from. Expansion keeps a value's pct-encoded
 * triplets as written and encodes (in upper case) only what is neither reserved nor unreserved, so exactly those
 * triplets are decoded: `%20` is a space, while `%2F` stays `%2F` (decoding it would make it a path separator) and a
 * `%25` stays as written where two hex digits follow it (decoded, it would start a triplet of its own).
 */
function decodeReserved(text: string): string {
  return text.replace(/(?:%[0-9A-F]{2})+/g, (run: string, offset: number) => {
    let decoded: string;
    try {
      decoded = strictUtf8.decode(Uint8Array.from(run.slice(1).split('%'), (hex) => Number.parseInt(hex, 16)));
    } catch {
      return run;
    }
    let out = '';
    let bytes = 0;
    for (const character of decoded) {
      const written = run.slice(bytes * 3, (bytes + utf8.encode(character).length) * 3);
      bytes += written.length / 3;
      const next = text.slice(offset + bytes * 3, offset + bytes * 3 + 2);
      const kept = UNRESERVED.test(character) || RESERVED.test(character) || (character === '%' && /^[0-9A-Fa-f]{2}$/.test(next));
      out += kept ? written : character;
    }
    return out;
  });
}

/** A captured value as the argument it was expanded from. */
function decodeValue(text: string, operator: Operator): string | undefined {
  if (operator.reserved) return decodeReserved(text);
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * Parses an RFC 6570 template (levels 1–3) whose variables are bound as required strings; refuses, with a reason, one
 * that is malformed, longer than URI_TEMPLATE_LIMITS allow, or uses level-4 modifiers.
 */
export function parseUriTemplate(template: string): UriTemplateResult {
  const { maxLength } = URI_TEMPLATE_LIMITS;
  if (template.length > maxLength) return { ok: false, problem: `the template is longer than ${maxLength} characters` };
  const parts = parseParts(template);
  if (typeof parts === 'string') return { ok: false, problem: parts };
  const variables = [...new Set(parts.flatMap((part) => ('names' in part ? part.names : [])))];
  const { pattern, groups } = matcherOf(parts);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern);
  } catch (error) {
    return { ok: false, problem: `the template cannot be matched: ${error instanceof Error ? error.message : String(error)}` };
  }
  return {
    ok: true,
    template: {
      template,
      variables,
      expand: (values) => expandParts(parts, values),
      match(uri) {
        if (uri.length > URI_TEMPLATE_LIMITS.maxLength) return undefined;
        const matcher = compiled.matcher(uri);
        if (!matcher.matches()) return undefined;
        const values: Record<string, string> = {};
        for (const [index, group] of groups.entries()) {
          const value = decodeValue(matcher.group(index + 1) ?? '', group.operator);
          // A variable written twice must have been given one value.
          if (value === undefined || (Object.hasOwn(values, group.name) && values[group.name] !== value)) return undefined;
          values[group.name] = value;
        }
        return values;
      },
    },
  };
}
