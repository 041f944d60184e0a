import { z } from 'zod';
import { sha256Hex } from './canonical-json.js';
import { MAX_MESSAGE_BYTES } from './limits.js';
import { LifecycleEvent } from './lifecycle-event.js';
import { IdempotencyKey, InvocationId, IsoDateTime, SUBJECT_TOKEN_PATTERN, Sha256Hex, type Scope } from './primitives.js';
import type { StreamDefinition } from './streams.js';
import { SUBJECT_PREFIX, type ScopeFilter } from './subjects.js';
import { ToolInvocation } from './tool-invocation-document.js';
import { ToolplaneError } from './errors.js';

// The tool adapter's private record of its ToolInvocation aggregate: one subject per logical call, keyed by scope
// and idempotency key, appended to with the expected last subject sequence (the write path). Its messages hold
// arguments and results, so only the tool adapter may read or write these subjects: no runtime, projector or other
// service is granted them (infra/nats/authorization.example.conf).
//
//   tp.v1.ivs.{tenant}.{workspace}.call.{callId}           a call's transitions    (stream TOOLPLANE_INVOCATION_STATE)
//   tp.v1.ivs.{tenant}.{workspace}.toolcall.{sha256(id)}   ToolCallId → callId     (same stream, written once)

const MINUTE_MS = 60_000;

/** The stream of the tool adapter's invocation state (private to the adapter; direct gets read a call in one round trip). */
export const invocationStateStream = {
  name: 'TOOLPLANE_INVOCATION_STATE',
  description: 'The tool adapter\u2019s ToolInvocation aggregate (arguments and results included): private to the adapter.',
  subjects: [`${SUBJECT_PREFIX}.ivs.>`],
  retention: 'limits',
  storage: 'file',
  duplicateWindowMs: 2 * MINUTE_MS,
  maxMsgSize: MAX_MESSAGE_BYTES,
  maxAgeMs: 0,
  maxBytes: -1,
  allowDirect: true,
} as const satisfies StreamDefinition;

function scopeToken(what: string, value: string): string {
  if (!SUBJECT_TOKEN_PATTERN.test(value)) throw new ToolplaneError('INVALID_ARGUMENT', `${what} ${JSON.stringify(value)} is not a safe subject token`);
  return value;
}

function scopePrefix(scope: Scope): string {
  return `${SUBJECT_PREFIX}.ivs.${scopeToken('tenant', scope.tenant)}.${scopeToken('workspace', scope.workspace)}`;
}

/** The id of the logical call holding `idempotencyKey` in `scope` (the last token of its subject). */
export const InvocationCallId = Sha256Hex;

/** The subject of one logical call's transitions (`callId` from the scope and idempotency key). */
export function invocationStateSubject(scope: Scope, callId: string): string {
  if (!/^[0-9a-f]{64}$/.test(callId)) throw new ToolplaneError('INVALID_ARGUMENT', 'a call id is a SHA-256 hex digest');
  return `${scopePrefix(scope)}.call.${callId}`;
}

/** The subject that names the call of a ToolCallId (the id hashed: ToolCallIds need not be subject tokens). */
export function toolCallIndexSubject(scope: Scope, toolCallId: string): string {
  return `${scopePrefix(scope)}.toolcall.${sha256Hex(toolCallId)}`;
}

/** A filter over the invocation state of a scope (or of every scope). */
export function invocationStateFilter(filter: ScopeFilter = {}): string {
  return `${SUBJECT_PREFIX}.ivs.${filter.tenant ?? '*'}.${filter.workspace ?? '*'}.>`;
}

/**
 * A transition of a call: the call as it now is, the public lifecycle events the transition produced (published
 * after the append with their deterministic ids, and again from here after a crash), and the processing lease of
 * the handler that wrote it (absent once the call is settled: ended, or parked for an approval). A record after the
 * first may leave out `argumentsJson`: the arguments never change within a call, and are stored once. A record that
 * parks the call for an approval keeps the W3C trace context it was written in (`traceContext`), when it was
 * traced: the decision, maybe hours later, resumes the call in that trace.
 */
export const InvocationRecorded = z.strictObject({
  type: z.literal('InvocationRecorded'),
  data: z.strictObject({
    invocation: ToolInvocation.extend({ argumentsJson: z.string().optional() }),
    events: z.array(LifecycleEvent).max(16),
    leaseUntil: IsoDateTime.optional(),
    traceContext: z
      .strictObject({
        traceparent: z.string().regex(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/, 'must be a W3C traceparent'),
        tracestate: z.string().max(512).optional(),
      })
      .optional(),
  }),
});
export type InvocationRecorded = z.infer<typeof InvocationRecorded>;

/** The handler executing a call renewed its processing lease (appended at the version it last wrote). */
export const InvocationLeaseRenewed = z.strictObject({
  type: z.literal('InvocationLeaseRenewed'),
  data: z.strictObject({ invocationId: InvocationId, leaseUntil: IsoDateTime }),
});
export type InvocationLeaseRenewed = z.infer<typeof InvocationLeaseRenewed>;

/** An event of the ToolInvocation aggregate (private to the tool adapter). */
export const InvocationStateEvent = z.discriminatedUnion('type', [InvocationRecorded, InvocationLeaseRenewed]);
export type InvocationStateEvent = z.infer<typeof InvocationStateEvent>;

/** The one event of a ToolCallId's index subject: which call (subject) holds it. */
export const ToolCallIndexed = z.strictObject({
  type: z.literal('ToolCallIndexed'),
  data: z.strictObject({ callId: InvocationCallId, idempotencyKey: IdempotencyKey }),
});
export type ToolCallIndexed = z.infer<typeof ToolCallIndexed>;
