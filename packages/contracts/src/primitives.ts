import { z } from 'zod';
import { jsonProblem } from './json.js';

// Patterns stay within what every JSON Schema validator understands (no lookbehind, no \p{…}), because agent
// runtimes in other languages validate against the exported schemas.

/** A subject-token-safe identifier: letters, digits, `_` and `-`, 1–64 characters (no `.`, `*`, `>`, whitespace). */
export const SUBJECT_TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** A tenant id; it is a token of every scoped subject, so NATS permissions can pin it. */
export const TenantId = z.string().regex(SUBJECT_TOKEN_PATTERN).meta({ description: 'Tenant id: [A-Za-z0-9_-]{1,64}.' });
export type TenantId = z.infer<typeof TenantId>;

/** A workspace id (unique within its tenant); a token of every scoped subject. */
export const WorkspaceId = z.string().regex(SUBJECT_TOKEN_PATTERN).meta({ description: 'Workspace id: [A-Za-z0-9_-]{1,64}.' });
export type WorkspaceId = z.infer<typeof WorkspaceId>;

/** Where something lives: always taken from the subject or the stored document, never from a message body. */
export const Scope = z.strictObject({ tenant: TenantId, workspace: WorkspaceId });
export type Scope = z.infer<typeof Scope>;

/** A random id minted by Toolplane (invocations, events, approvals, leases, servers, policy decisions). */
export const Uuid = z.uuid();
export type Uuid = z.infer<typeof Uuid>;

/**
 * An id minted by someone else (a provider's tool-call id, a trace id, a flow run id): printable, no whitespace,
 * at most 128 characters. Never used as a subject token.
 */
export const ExternalId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:@/+=-]{0,127}$/)
  .meta({ description: 'Opaque id: starts with a letter or digit, then [A-Za-z0-9_.:@/+=-], at most 128 characters.' });
export type ExternalId = z.infer<typeof ExternalId>;

/** One physical attempt of a tool call. */
export const InvocationId = Uuid;
/** The logical tool call that survives retries and replays (a provider call id, or derived deterministically). */
export const ToolCallId = ExternalId;
/** Identifies one lifecycle event. */
export const EventId = Uuid;

/**
 * A principal: a human, an agent or a service identity as named by the verified context token or credential
 * (for example `user:alice@example.com`, `svc:tool-adapter`).
 */
export const PrincipalId = z
  .string()
  .regex(/^[!-~]{1,256}$/)
  .meta({ description: 'Principal id: printable ASCII without spaces, at most 256 characters.' });
export type PrincipalId = z.infer<typeof PrincipalId>;

/** A revision of an agent definition (a number, a hash, a tag). */
export const AgentRevision = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,63}$/);
export type AgentRevision = z.infer<typeof AgentRevision>;

/**
 * A governed tool's id: dot-separated segments of `[A-Za-z0-9_-]`, at least two (`namespace.tool`, for example
 * `github.create_issue`), so policies can match by namespace and the id stays safe wherever a token is needed.
 */
export const ToolId = z
  .string()
  .max(200)
  .regex(/^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+$/)
  .meta({ description: 'Tool id: at least two dot-separated segments of [A-Za-z0-9_-], at most 200 characters.' });
export type ToolId = z.infer<typeof ToolId>;

/** An exact, immutable version of a tool descriptor. */
export const ToolVersion = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$/);
export type ToolVersion = z.infer<typeof ToolVersion>;

/** A caller-chosen idempotency key, unique per (tenant, workspace); printable ASCII without spaces. */
export const IdempotencyKey = z.string().regex(/^[!-~]{1,128}$/);
export type IdempotencyKey = z.infer<typeof IdempotencyKey>;

/** A reference to a secret-broker connection (never the secret itself). */
export const ConnectionRef = ExternalId;

/** A UTC instant in ISO 8601 with a `Z` suffix, as `Date.prototype.toISOString` writes it. */
export const IsoDateTime = z.iso.datetime();
export type IsoDateTime = z.infer<typeof IsoDateTime>;

/** A SHA-256 digest as 64 lowercase hex characters. */
export const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);
export type Sha256Hex = z.infer<typeof Sha256Hex>;

/** A non-negative whole number of milliseconds. */
export const DurationMs = z.number().int().nonnegative();

/** A short human-readable text (reasons, summaries), bounded so it cannot carry payloads. */
export function boundedText(maxLength: number) {
  return z.string().min(1).max(maxLength);
}

/**
 * A free-form JSON object (tool arguments, structured results). Checked as plain JSON (finite numbers, bounded
 * depth) without recursion. Never stored as-is: documents keep such values as JSON text.
 */
export const JsonObject = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const problem = jsonProblem(value);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});
export type JsonObject = z.infer<typeof JsonObject>;
