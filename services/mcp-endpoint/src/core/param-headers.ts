// SEP-2243 (MCP 2026-07-28, Streamable HTTP "custom headers from tool parameters"): a tool may mark a parameter of its
// input schema `x-mcp-header: "<Name>"`, and a client then mirrors that argument of each tools/call into an
// `Mcp-Param-<Name>` header, so a load balancer or gateway can route on it without reading the body. Since an
// intermediary may act on the header alone, a server must refuse a call whose headers say something else than its
// arguments. Pure: what a schema declares, how a header value decodes, and whether a call's headers agree.

/** A parameter type that may be mirrored into a header. */
export type ParamHeaderType = 'string' | 'integer' | 'number' | 'boolean';

/** One `x-mcp-header` declaration: the header's name part, where its argument sits, and the parameter's type. */
export interface ParamHeader {
  /** The part after `Mcp-Param-`, as the schema spells it. */
  readonly name: string;
  /** The chain of `properties` keys from the arguments object to the parameter. */
  readonly path: readonly string[];
  readonly type: ParamHeaderType;
}

/** What a tool's input schema declares: its headers, or why the declarations are invalid (then none is checked). */
export type ParamHeaderDeclarations = { readonly valid: true; readonly headers: readonly ParamHeader[] } | { readonly valid: false; readonly reason: string };

/** Whether a call's headers agree with its arguments, or the first header that does not and why. */
export type ParamHeaderCheck = { readonly ok: true } | { readonly ok: false; readonly header: string; readonly reason: string };

/** The prefix of every header a parameter is mirrored into. */
export const PARAM_HEADER_PREFIX = 'Mcp-Param-';

const X_MCP_HEADER = 'x-mcp-header';

// The spec admits string, integer and boolean; number is accepted too, as the SDK's server and other SDKs do (clients
// mirror number-typed parameters, and a mirrored header is checked rather than left to disagree unseen).
const mirrorableTypes: ReadonlySet<string> = new Set<ParamHeaderType>(['string', 'integer', 'number', 'boolean']);

/** RFC 9110 §5.6.2 `token` (1*tchar): a valid header field name, no spaces, controls or delimiters. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

// Keywords whose subschemas are not reached by a chain of `properties` keys: an argument under them may be absent,
// repeated or conditional, so it has no one value to mirror, and an annotation there makes the declarations invalid.
const unreachableLists = ['prefixItems', 'allOf', 'anyOf', 'oneOf'] as const;
const unreachableSchemas = ['items', 'contains', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'propertyNames', 'not', 'if', 'then', 'else'] as const;
const unreachableMaps = ['patternProperties', 'dependentSchemas', '$defs', 'definitions'] as const;

type SchemaNode = Readonly<Record<string, unknown>>;

function isNode(value: unknown): value is SchemaNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The subschemas of a node that a chain of `properties` keys does not reach, each with the keyword it is under. */
function unreachableChildren(node: SchemaNode): { readonly keyword: string; readonly schema: SchemaNode }[] {
  const children: { keyword: string; schema: unknown }[] = [];
  for (const keyword of unreachableLists) if (Array.isArray(node[keyword])) for (const schema of node[keyword] as unknown[]) children.push({ keyword, schema });
  for (const keyword of unreachableSchemas) children.push({ keyword, schema: node[keyword] });
  for (const keyword of unreachableMaps) if (isNode(node[keyword])) for (const schema of Object.values(node[keyword])) children.push({ keyword, schema });
  return children.filter((child): child is { keyword: string; schema: SchemaNode } => isNode(child.schema));
}

/**
 * The `x-mcp-header` declarations of a tool's input schema. Valid only if every annotation sits on a property reached
 * from the root by `properties` keys alone, names an RFC 9110 token unique regardless of case, and marks a primitive
 * parameter; anything else makes the tool's declarations invalid, and an invalid tool gets no header checked (a
 * conforming client does not mirror it either: the tool is what it is, and the pipeline still validates its arguments).
 */
export function paramHeadersOf(inputSchema: unknown): ParamHeaderDeclarations {
  const headers: ParamHeader[] = [];
  const seen = new Map<string, string>();
  const invalid = (reason: string): ParamHeaderDeclarations => ({ valid: false, reason });

  const visit = (node: SchemaNode, path: readonly string[], reachable: boolean): ParamHeaderDeclarations | undefined => {
    const where = path.length === 0 ? 'the schema root' : path.join('.');
    if (X_MCP_HEADER in node) {
      const name = node[X_MCP_HEADER];
      if (!reachable || path.length === 0) return invalid(`${X_MCP_HEADER} at ${where} is not on a property reached by properties keys alone`);
      if (typeof name !== 'string' || !TOKEN.test(name)) return invalid(`${X_MCP_HEADER} of ${where} is not an HTTP header name (an RFC 9110 token)`);
      const type = node.type;
      if (typeof type !== 'string' || !mirrorableTypes.has(type)) return invalid(`${X_MCP_HEADER} of ${where} marks a parameter of type ${type === undefined ? '(none)' : JSON.stringify(type)}, not string, integer, number or boolean`);
      const earlier = seen.get(name.toLowerCase());
      if (earlier !== undefined) return invalid(`${X_MCP_HEADER} '${name}' of ${where} repeats '${earlier}' (header names are case-insensitive)`);
      seen.set(name.toLowerCase(), name);
      headers.push({ name, path, type: type as ParamHeaderType });
    }
    const properties = isNode(node.properties) ? Object.entries(node.properties) : [];
    for (const [key, child] of properties) {
      const fault = isNode(child) ? visit(child, [...path, key], reachable) : undefined;
      if (fault !== undefined) return fault;
    }
    for (const { keyword, schema } of unreachableChildren(node)) {
      const fault = visit(schema, [...path, `(${keyword})`], false);
      if (fault !== undefined) return fault;
    }
    return undefined;
  };

  if (!isNode(inputSchema)) return { valid: true, headers };
  return visit(inputSchema, [], true) ?? { valid: true, headers };
}

const BASE64_OPEN = '=?base64?';
const BASE64_CLOSE = '?=';
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The value a `Mcp-Param-*` header stands for. A value wrapped whole in `=?base64?…?=` is base64 of UTF-8 (how a
 * client sends what a header cannot carry: non-ASCII, controls, edge whitespace); it must be canonical (the one
 * encoding of its bytes: standard alphabet, exact padding, no stray bits) and valid UTF-8, else undefined (refused).
 * Anything not wrapped whole, a lone prefix or suffix included, is the literal value.
 */
export function decodeParamHeaderValue(value: string): string | undefined {
  if (value.length < BASE64_OPEN.length + BASE64_CLOSE.length || !value.startsWith(BASE64_OPEN) || !value.endsWith(BASE64_CLOSE)) return value;
  const encoded = value.slice(BASE64_OPEN.length, value.length - BASE64_CLOSE.length);
  // Node's decoder skips what is not base64; the round trip is what tells a canonical encoding from any other.
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.toString('base64') !== encoded) return undefined;
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** A JSON number as JSON writes it (RFC 8259 §6), compared by value: `42.0` and `42` are the same argument. */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** A value as an error message shows it: JSON, cut short (a message names the disagreement, it does not echo a payload). */
function shown(value: unknown): string {
  const text = JSON.stringify(value);
  return text.length <= 80 ? text : `${text.slice(0, 79)}…`;
}

/** The argument at `path`, or undefined when a step is missing or not an object. */
function argumentAt(args: Readonly<Record<string, unknown>>, path: readonly string[]): unknown {
  let node: unknown = args;
  for (const key of path) {
    if (!isNode(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/**
 * How a client writes an argument into its header; undefined for one it mirrors into none: absent, null, not a
 * primitive, or an integer past 2^53 (no client can write it exactly).
 */
function headerFormOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number' && Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value))) return String(value);
  return undefined;
}

/**
 * Whether a call's `Mcp-Param-*` headers agree with its arguments. For each declared parameter the call carries (an
 * argument absent or null expects no header, and a header sent anyway is not looked at), the header must be there and
 * decode to the argument: numerically for an integer or number parameter whose header is a JSON number, else as the
 * text a client writes (`true`/`false` for a boolean). The first disagreement, in schema order, is the answer.
 * `headerOf` reads a request header by name, case-insensitively.
 */
export function checkParamHeaders(headers: readonly ParamHeader[], args: Readonly<Record<string, unknown>>, headerOf: (name: string) => string | undefined): ParamHeaderCheck {
  for (const declared of headers) {
    const argument = argumentAt(args, declared.path);
    const expected = headerFormOf(argument);
    if (expected === undefined) continue;
    const header = `${PARAM_HEADER_PREFIX}${declared.name}`;
    const where = declared.path.join('.');
    const sent = headerOf(header);
    if (sent === undefined) return { ok: false, header, reason: `the arguments carry ${where}=${shown(argument)} but the ${header} header is absent` };
    const decoded = decodeParamHeaderValue(sent);
    if (decoded === undefined) return { ok: false, header, reason: `the ${header} header is not canonical base64 of UTF-8 inside its =?base64?…?= wrapper` };
    const numeric = (declared.type === 'integer' || declared.type === 'number') && typeof argument === 'number' && JSON_NUMBER.test(decoded);
    if (numeric ? Number(decoded) !== argument : decoded !== expected) {
      return { ok: false, header, reason: `the ${header} header says ${shown(decoded)} but the arguments carry ${where}=${shown(argument)}` };
    }
  }
  return { ok: true };
}

