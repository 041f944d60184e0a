import { ARGUMENT_PREVIEW_MAX_CHARS, ARGUMENT_REDACTION_MARKER, canonicalJson, type ArgumentPreview, type JsonObject } from '@toolplane/contracts';

// What an operator may see of a call's arguments (inspectInvocation): the arguments as canonical JSON with the value
// of every sensitive field replaced by the marker. A field is sensitive when any rule says so, and no rule can make
// it visible again: the tool's input schema marks it (`writeOnly: true` or `format: "password"` at its path), the
// tenant policy names it (`sensitiveArgumentFields`, case-insensitive, at any depth), or it has a well-known
// credential name. The schema is followed conservatively: every branch that could describe a value (allOf, anyOf,
// oneOf, if/then/else, local `$ref`s, every patternProperties entry, since matching them would mean running the
// tool author's regular expressions) counts, so a branch that marks a field redacts it whichever branch validated.

/** Credential names (lowercase, `-` and `_` removed) whose values are never shown, whatever the schema and policy say. */
export const WELL_KNOWN_CREDENTIAL_NAMES: ReadonlySet<string> = new Set([
  'password',
  'passwd',
  'secret',
  'token',
  'apikey',
  'accesstoken',
  'refreshtoken',
  'authorization',
  'credential',
  'credentials',
  'privatekey',
  'clientsecret',
  'cookie',
  'sessionid',
]);

// The contract's bounds of the `redacted` list: a preview with more redactions names the first ones only.
const MAX_REDACTED_POINTERS = 256;
const MAX_POINTER_CHARS = 1024;
// Schema branches followed per value: enough for any real schema, and a bound on a hostile one.
const MAX_SCHEMA_NODES = 64;

type SchemaNode = Readonly<Record<string, unknown>>;

function isSchemaNode(value: unknown): value is SchemaNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A reference's pointer token as a key (percent-decoded, then RFC 6901); undefined when malformed. */
function decodedToken(token: string): string | undefined {
  try {
    return decodeURIComponent(token).replaceAll('~1', '/').replaceAll('~0', '~');
  } catch {
    return undefined;
  }
}

/** The node a local reference (`#`, `#/$defs/x`, `#/definitions/x` …) points to in `root`, if any. */
function resolveLocalRef(root: unknown, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const token of ref.slice(2).split('/')) {
    const key = decodedToken(token);
    if (key === undefined) return undefined;
    if (!isSchemaNode(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** The nodes that describe one value: `nodes` with every combinator branch and local reference expanded (bounded). */
function expand(root: unknown, nodes: readonly unknown[]): SchemaNode[] {
  const seen = new Set<SchemaNode>();
  const pending = [...nodes];
  while (pending.length > 0 && seen.size < MAX_SCHEMA_NODES) {
    const node = pending.shift();
    if (!isSchemaNode(node) || seen.has(node)) continue;
    seen.add(node);
    if (typeof node['$ref'] === 'string') pending.push(resolveLocalRef(root, node['$ref']));
    for (const keyword of ['allOf', 'anyOf', 'oneOf'] as const) {
      const branches = node[keyword];
      if (Array.isArray(branches)) pending.push(...(branches as unknown[]));
    }
    pending.push(node['if'], node['then'], node['else']);
  }
  return [...seen];
}

function marksSensitive(nodes: readonly SchemaNode[]): boolean {
  return nodes.some((node) => node['writeOnly'] === true || node['format'] === 'password');
}

/** The nodes describing property `key` of an object described by `nodes`. */
function propertyNodes(nodes: readonly SchemaNode[], key: string): unknown[] {
  const children: unknown[] = [];
  for (const node of nodes) {
    const properties = node['properties'];
    const declared = isSchemaNode(properties) && Object.hasOwn(properties, key);
    if (declared) children.push(properties[key]);
    const patterns = node['patternProperties'];
    if (isSchemaNode(patterns)) children.push(...Object.values(patterns));
    if (!declared) children.push(node['additionalProperties']);
  }
  return children;
}

/** The nodes describing item `index` of an array described by `nodes` (2020-12 prefixItems/items, draft-07 tuples). */
function itemNodes(nodes: readonly SchemaNode[], index: number): unknown[] {
  const children: unknown[] = [];
  for (const node of nodes) {
    const items = node['items'];
    const prefix = node['prefixItems'];
    if (Array.isArray(prefix)) children.push(index < prefix.length ? prefix[index] : items);
    else if (Array.isArray(items)) children.push(index < items.length ? items[index] : node['additionalItems']);
    else children.push(items);
  }
  return children;
}

function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

function normalizedCredentialName(key: string): string {
  return key.toLowerCase().replace(/[-_]/g, '');
}

/**
 * The preview of `args` for an operator: canonical JSON in which every sensitive field's value (of any type, an
 * object or array included) is ARGUMENT_REDACTION_MARKER, the JSON pointers of those fields (the first 256, in text
 * order), and the text cut at ARGUMENT_PREVIEW_MAX_CHARS. `inputSchema` is the tool's input JSON Schema, undefined when the
 * descriptor is gone (then names alone decide); `sensitiveFields` is the tenant policy's `sensitiveArgumentFields`.
 */
export function argumentPreview(args: JsonObject, inputSchema: unknown, sensitiveFields: readonly string[]): ArgumentPreview {
  const named = new Set(sensitiveFields.map((name) => name.toLowerCase()));
  const redacted: string[] = [];
  const isSensitiveName = (key: string) => named.has(key.toLowerCase()) || WELL_KNOWN_CREDENTIAL_NAMES.has(normalizedCredentialName(key));
  const redact = (pointer: string): unknown => {
    if (redacted.length < MAX_REDACTED_POINTERS) redacted.push(pointer.slice(0, MAX_POINTER_CHARS));
    return ARGUMENT_REDACTION_MARKER;
  };

  const visit = (value: unknown, nodes: readonly SchemaNode[], pointer: string): unknown => {
    if (Array.isArray(value)) {
      return value.map((item, index) => {
        const childNodes = expand(inputSchema, itemNodes(nodes, index));
        const childPointer = `${pointer}/${index}`;
        return marksSensitive(childNodes) ? redact(childPointer) : visit(item, childNodes, childPointer);
      });
    }
    if (typeof value !== 'object' || value === null) return value;
    const copy: Record<string, unknown> = {};
    // In canonical key order (UTF-16 code units, as RFC 8785 sorts), so `redacted` lists fields in text order.
    for (const [key, child] of Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const childNodes = expand(inputSchema, propertyNodes(nodes, key));
      const childPointer = `${pointer}/${pointerToken(key)}`;
      copy[key] = isSensitiveName(key) || marksSensitive(childNodes) ? redact(childPointer) : visit(child, childNodes, childPointer);
    }
    return copy;
  };

  const rootNodes = expand(inputSchema, [inputSchema]);
  const shown = marksSensitive(rootNodes) ? redact('') : visit(args, rootNodes, '');
  const full = canonicalJson(shown);
  if (full.length <= ARGUMENT_PREVIEW_MAX_CHARS) return { text: full, redacted, truncated: false };
  // Never end on half a surrogate pair: the cut text stays well-formed.
  let end = ARGUMENT_PREVIEW_MAX_CHARS;
  const last = full.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return { text: full.slice(0, end), redacted, truncated: true };
}
