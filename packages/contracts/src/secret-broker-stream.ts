import { z } from 'zod';
import { ToolplaneError } from './errors.js';
import { MAX_MESSAGE_BYTES } from './limits.js';
import { IsoDateTime, SUBJECT_TOKEN_PATTERN, type Scope, Uuid } from './primitives.js';
import { SealingKeyId } from './sealed-secrets.js';
import { Connection, SecretLease } from './secret-broker-documents.js';
import type { StreamDefinition } from './streams.js';
import { SUBJECT_PREFIX } from './subjects.js';

// The secret broker's own record, private to it: connections (with their encrypted credentials) and leases, one
// subject per connection and per lease, on a stream no other service reads (NATS permissions give it to the broker
// alone). Nothing here is public: the public side is SecretLeased / SecretLeaseDenied on the events stream.
//
//   tp.v1.sec.{tenant}.{workspace}.connection.{connectionId}   a connection's events
//   tp.v1.sec.{tenant}.{workspace}.lease.{leaseId}             a lease's events
//   tp.v1.sec._dlq.{consumer}                                  dead letters of the broker's own consumers (they carry
//                                                              the payload, so they stay in the private stream)

const MINUTE_MS = 60_000;
const root = `${SUBJECT_PREFIX}.sec`;

/** The secret broker's private stream (direct gets allowed: a connection or lease is read in one round trip). */
export const secretBrokerStream = {
  name: 'TOOLPLANE_SECRETS',
  description: "The secret broker's connections and leases; private to it (encrypted credentials).",
  subjects: [`${root}.>`],
  retention: 'limits',
  storage: 'file',
  duplicateWindowMs: 2 * MINUTE_MS,
  maxMsgSize: MAX_MESSAGE_BYTES,
  maxAgeMs: 0,
  maxBytes: -1,
  allowDirect: true,
} as const satisfies StreamDefinition;

/** The bucket of access tokens the broker obtained for oauth2 connections (encrypted), shared by its replicas. */
export const secretBrokerTokenBucket = { name: 'TOOLPLANE_SECRET_TOKENS', description: 'Access tokens of oauth2 connections, encrypted; private to the secret broker.' } as const;

function scopeTokens(scope: Scope): string {
  for (const [what, value] of [['tenant', scope.tenant], ['workspace', scope.workspace]] as const) {
    if (!SUBJECT_TOKEN_PATTERN.test(value)) throw new ToolplaneError('INVALID_ARGUMENT', `${what} ${JSON.stringify(value)} is not a safe subject token`);
  }
  return `${scope.tenant}.${scope.workspace}`;
}

function idToken(what: string, id: string): string {
  if (!Uuid.safeParse(id).success) throw new ToolplaneError('INVALID_ARGUMENT', `${what} ${JSON.stringify(id)} is not a UUID`);
  return id;
}

/** The subject of one connection's events. */
export function connectionSubject(scope: Scope, connectionId: string): string {
  return `${root}.${scopeTokens(scope)}.connection.${idToken('connection id', connectionId)}`;
}

/** The subject of one lease's events. */
export function leaseSubject(scope: Scope, leaseId: string): string {
  return `${root}.${scopeTokens(scope)}.lease.${idToken('lease id', leaseId)}`;
}

/** Every connection and lease subject (what the broker's projector folds). */
export const secretBrokerAggregateFilters = [`${root}.*.*.connection.*`, `${root}.*.*.lease.*`] as const;

/** Where a consumer of the private stream dead-letters (inside the private stream, never the shared dead-letter stream). */
export function secretBrokerDeadLetterSubject(consumer: string): string {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(consumer)) throw new ToolplaneError('INVALID_ARGUMENT', `consumer ${JSON.stringify(consumer)} is not a safe subject token`);
  return `${root}._dlq.${consumer}`;
}

// Connection events carry the whole connection as it is after the event (the encrypted secret included while it has
// one): a subject's last message is all a reader needs, so a projector that skips messages still writes the right
// document, and the broker can purge a connection's older messages (older ciphertexts) after a rotation, a rewrap or
// a revocation.

const connectionEvent = <T extends string>(type: T) => z.strictObject({ type: z.literal(type), data: z.strictObject({ connection: Connection }) });

/** A connection was created with its first credential (version 1). */
export const ConnectionCreated = connectionEvent('ConnectionCreated');
/** A connection's credential was replaced (secretGeneration + 1). */
export const ConnectionRotated = connectionEvent('ConnectionRotated');
/** A connection's secret was rewrapped under the current key-encryption key (same generation, same ciphertext). */
export const ConnectionSecretRewrapped = connectionEvent('ConnectionSecretRewrapped');
/** A connection was revoked: it has no secret any more and leases nothing again. */
export const ConnectionRevoked = connectionEvent('ConnectionRevoked');

/** What a connection's subject holds. */
export const ConnectionEvent = z.discriminatedUnion('type', [ConnectionCreated, ConnectionRotated, ConnectionSecretRewrapped, ConnectionRevoked]);
export type ConnectionEvent = z.infer<typeof ConnectionEvent>;

/** A lease was granted (its record: who, what, until when; never the value). */
export const LeaseGranted = z.strictObject({
  type: z.literal('LeaseGranted'),
  data: z.strictObject({
    lease: SecretLease,
    /** The version of the connection the lease was decided against. */
    connectionVersion: z.number().int().nonnegative(),
  }),
});
/** A lease ended before or at its expiry: Expired (the sweeper) or Revoked (its connection changed as it was granted). */
export const LeaseEnded = z.strictObject({
  type: z.literal('LeaseEnded'),
  data: z.strictObject({ leaseId: Uuid, state: z.enum(['Expired', 'Revoked']), endedAt: IsoDateTime }),
});

/** What a lease's subject holds. */
export const LeaseEvent = z.discriminatedUnion('type', [LeaseGranted, LeaseEnded]);
export type LeaseEvent = z.infer<typeof LeaseEvent>;

/** Any message of the broker's aggregate subjects (what its projector folds). */
export const SecretBrokerRecord = z.discriminatedUnion('type', [ConnectionCreated, ConnectionRotated, ConnectionSecretRewrapped, ConnectionRevoked, LeaseGranted, LeaseEnded]);
export type SecretBrokerRecord = z.infer<typeof SecretBrokerRecord>;

/** A connection in the `connections` read model: its metadata, never its secret (only the KEK id it is wrapped with). */
export const ConnectionSummary = Connection.omit({ secret: true }).extend({ kekId: SealingKeyId.optional() }).strict();
export type ConnectionSummary = z.infer<typeof ConnectionSummary>;

