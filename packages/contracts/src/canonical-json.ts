import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';
import { ToolplaneError } from './errors.js';
import { jsonProblem } from './json.js';
import type { AgentRevision, ExternalId, JsonObject, Sha256Hex, TenantId, ToolId, ToolVersion, WorkspaceId } from './primitives.js';

/**
 * The RFC 8785 (JSON Canonicalization Scheme) text of a JSON value: sorted keys, no whitespace, ECMAScript
 * number formatting. Anything JSON cannot represent faithfully (NaN, Infinity, `undefined` in an array, a
 * function, a class instance, a lone surrogate, a cycle) is refused with INVALID_ARGUMENT rather than silently
 * changed. Object properties that are `undefined` are left out, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
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

/** What a request hash covers: the scope, the exact tool version and the arguments. */
export interface RequestHashInput {
  readonly tenant: TenantId;
  readonly workspace: WorkspaceId;
  readonly toolId: ToolId;
  /** The exact version the invocation resolved to, not the one the caller maybe named. */
  readonly toolVersion: ToolVersion;
  readonly arguments: JsonObject;
}

/**
 * The hash an invocation is known by: approvals are bound to it, and one idempotency key with two different
 * request hashes is a CONFLICT. SHA-256 over the canonical JSON of `{ purpose, tenant, workspace, toolId,
 * toolVersion, arguments }`.
 */
export function requestHash(input: RequestHashInput): Sha256Hex {
  const { tenant, workspace, toolId, toolVersion, arguments: args } = input;
  return canonicalHash({ purpose: REQUEST_HASH_PURPOSE, tenant, workspace, toolId, toolVersion, arguments: args });
}

/** The inputs from which an idempotency key is derived when the caller gave none. */
export interface IdempotencyKeyInput {
  readonly durableExecutionId: ExternalId;
  readonly agentRevision: AgentRevision;
  readonly toolId: ToolId;
  readonly arguments: JsonObject;
}

/**
 * A deterministic idempotency key for a caller that gave none, so a replayed or resumed durable execution maps
 * to the same logical call instead of a new effect: SHA-256 hex over the canonical JSON of `{ purpose,
 * durableExecutionId, agentRevision, toolId, arguments }`.
 */
export function deriveIdempotencyKey(input: IdempotencyKeyInput): string {
  const { durableExecutionId, agentRevision, toolId, arguments: args } = input;
  return canonicalHash({ purpose: IDEMPOTENCY_KEY_PURPOSE, durableExecutionId, agentRevision, toolId, arguments: args });
}
