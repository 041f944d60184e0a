import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';
import type { InvocationCompletion } from './completion.js';
import { ToolplaneError } from './errors.js';
import { jsonProblem } from './json.js';
import { MAX_JSON_DEPTH } from './limits.js';
import type { AgentRevision, ExternalId, JsonObject, Sha256Hex, TenantId, ToolId, ToolVersion, WorkspaceId } from './primitives.js';

/**
 * The RFC 8785 (JSON Canonicalization Scheme) text of a JSON value: sorted keys, no whitespace, ECMAScript
 * number formatting. Anything JSON cannot represent faithfully (NaN, Infinity, `undefined` in an array, a
 * function, a class instance, a lone surrogate, a cycle) is refused with INVALID_ARGUMENT rather than silently
 * changed. Object properties that are `undefined` are left out, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  // One pass that checks and writes at once (the governed path canonicalizes several values per call); whatever it
  // cannot write is handed to the two-pass reference below, which says exactly why it is refused.
  return canonicalText(value, 0) ?? referenceCanonicalJson(value);
}

// With the u flag a well-formed surrogate pair is one code point outside Cs: only a lone surrogate matches.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The canonical text of `value` at nesting `depth`, or undefined when it is not plain JSON (the same values
 * jsonProblem and canonicalize refuse: a cycle is refused by the depth bound it would exceed).
 */
function canonicalText(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case 'string':
      return LONE_SURROGATE.test(value) ? undefined : JSON.stringify(value);
    case 'number':
      // For a finite number String() is JSON.stringify's (and so RFC 8785's) ECMAScript formatting, -0 as 0.
      return Number.isFinite(value) ? String(value) : undefined;
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      break;
    default:
      return undefined;
  }
  if (value === null) return 'null';
  if (depth >= MAX_JSON_DEPTH) return undefined;
  if (Array.isArray(value)) {
    const items = value as readonly unknown[];
    let text = '[';
    for (let i = 0; i < items.length; i += 1) {
      const item = items[i];
      if (item === undefined) return undefined; // a hole or an undefined entry
      const itemText = canonicalText(item, depth + 1);
      if (itemText === undefined) return undefined;
      text += i === 0 ? itemText : `,${itemText}`;
    }
    return `${text}]`;
  }
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return undefined;
  const record = value as Readonly<Record<string, unknown>>;
  // Array.prototype.sort compares UTF-16 code units, which is RFC 8785's key order.
  const keys = Object.keys(record).sort();
  let text = '{';
  let first = true;
  for (const key of keys) {
    const child = record[key];
    if (child === undefined) continue;
    if (LONE_SURROGATE.test(key)) return undefined;
    const childText = canonicalText(child, depth + 1);
    if (childText === undefined) return undefined;
    text += `${first ? '' : ','}${JSON.stringify(key)}:${childText}`;
    first = false;
  }
  return `${text}}`;
}

/** The reference: jsonProblem's check, then the canonicalize package's text (property-tested equal to canonicalText). */
function referenceCanonicalJson(value: unknown): string {
  const problem = jsonProblem(value);
  if (problem !== undefined) throw new ToolplaneError('INVALID_ARGUMENT', `not canonicalizable JSON: ${problem}`);
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (error) {
    // canonicalize refuses lone surrogates, which jsonProblem does not look for.
    throw new ToolplaneError('INVALID_ARGUMENT', `not canonicalizable JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (text === undefined) throw new ToolplaneError('INVALID_ARGUMENT', 'not canonicalizable JSON: no value');
  return text;
}

/** SHA-256 of a string (as UTF-8) or of bytes, as 64 lowercase hex characters. */
export function sha256Hex(data: string | Uint8Array): Sha256Hex {
  return createHash('sha256').update(data).digest('hex');
}

/** SHA-256 of the canonical JSON of a value: the hash of arguments, results and receipts. */
export function canonicalHash(value: unknown): Sha256Hex {
  return sha256Hex(canonicalJson(value));
}

// Each derived hash commits to what it is for, so a hash made for one purpose can never be passed off as another.
const REQUEST_HASH_PURPOSE = 'toolplane/v1/request-hash';
const IDEMPOTENCY_KEY_PURPOSE = 'toolplane/v1/idempotency-key';

/** What a request hash covers: the scope, the exact tool version, the arguments and the completion asked for. */
export interface RequestHashInput {
  readonly tenant: TenantId;
  readonly workspace: WorkspaceId;
  readonly toolId: ToolId;
  /** The exact version the invocation resolved to, not the one the caller maybe named. */
  readonly toolVersion: ToolVersion;
  readonly arguments: JsonObject;
  /** A completion's argument and partial value; absent for every other call, whose hash it leaves as it was. */
  readonly completion?: InvocationCompletion | undefined;
}

/**
 * The hash an invocation is known by: approvals are bound to it, and one idempotency key with two different
 * request hashes is a CONFLICT. SHA-256 over the canonical JSON of `{ purpose, tenant, workspace, toolId,
 * toolVersion, arguments }`, and `completion` for a completion (so two partial values are two requests).
 */
export function requestHash(input: RequestHashInput): Sha256Hex {
  const { tenant, workspace, toolId, toolVersion, arguments: args, completion } = input;
  return canonicalHash({ purpose: REQUEST_HASH_PURPOSE, tenant, workspace, toolId, toolVersion, arguments: args, completion });
}

/**
 * {@link requestHash} and the canonical JSON of the arguments (what an invocation stores as `argumentsJson`) from one
 * canonicalization: the arguments' text is cut out of the request hash's canonical text, where it comes first
 * ("arguments" sorts before every other key) and is followed by the other keys' string values. Refuses exactly what
 * requestHash refuses.
 */
export function requestHashAndArgumentsJson(input: RequestHashInput): { readonly requestHash: Sha256Hex; readonly argumentsJson: string } {
  const { tenant, workspace, toolId, toolVersion, arguments: args, completion } = input;
  const text = canonicalJson({ purpose: REQUEST_HASH_PURPOSE, tenant, workspace, toolId, toolVersion, arguments: args, completion });
  // "completion" sorts between "arguments" and "purpose".
  const completionText = completion === undefined ? '' : `,"completion":${canonicalJson(completion)}`;
  const rest = `${completionText},"purpose":${canonicalJson(REQUEST_HASH_PURPOSE)},"tenant":${canonicalJson(tenant)},"toolId":${canonicalJson(toolId)},"toolVersion":${canonicalJson(toolVersion)},"workspace":${canonicalJson(workspace)}}`;
  return { requestHash: sha256Hex(text), argumentsJson: text.slice(ARGUMENTS_KEY.length, text.length - rest.length) };
}

const ARGUMENTS_KEY = '{"arguments":';

/** The inputs from which an idempotency key is derived when the caller gave none. */
export interface IdempotencyKeyInput {
  readonly durableExecutionId: ExternalId;
  readonly agentRevision: AgentRevision;
  readonly toolId: ToolId;
  readonly arguments: JsonObject;
  /** A completion's argument and partial value; absent for every other call. */
  readonly completion?: InvocationCompletion | undefined;
}

/**
 * A deterministic idempotency key for a caller that gave none, so a replayed or resumed durable execution maps
 * to the same logical call instead of a new effect: SHA-256 hex over the canonical JSON of `{ purpose,
 * durableExecutionId, agentRevision, toolId, arguments }`, and `completion` for a completion.
 */
export function deriveIdempotencyKey(input: IdempotencyKeyInput): string {
  const { durableExecutionId, agentRevision, toolId, arguments: args, completion } = input;
  return canonicalHash({ purpose: IDEMPOTENCY_KEY_PURPOSE, durableExecutionId, agentRevision, toolId, arguments: args, completion });
}
