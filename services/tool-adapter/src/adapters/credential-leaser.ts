import type { KeyObject } from 'node:crypto';
import {
  LeasedCredential,
  SecretLeaseReply,
  SecretLeaseRequest,
  commandSubject,
  secretBrokerOperations,
  sleep,
  toWireError,
  ToolplaneError,
  type ConnectionKind,
  type Scope,
  type ToolFailure,
} from '@toolplane/contracts';
import { request, type Messaging } from '@toolplane/messaging';
import { SealingFailure, isSealingFailure, openSealedBox } from '@toolplane/sealing';

// Leases a call's credentials from the secret broker (`secrets.leaseSecret` over request/reply), one lease per
// connection, sealed to this adapter's X25519 key and opened here. The plaintext lives only in the returned objects:
// it is never logged, persisted or put in an error. A refusal carries the broker's code (AUTHORIZATION_DENIED for a
// revoked connection or a tool outside its allow-list, NOT_FOUND …); a broker that does not answer is asked again
// (a lease request is idempotent per invocation and connection) until the call's deadline, then the call is refused
// with TEMPORARY_UNAVAILABLE, retryable: nothing ran, so the caller may try again under a new idempotency key.

/** The key leases are sealed to: its id in the broker's SECRET_BROKER_RECIPIENTS, and the private half. */
export interface LeaseRecipient {
  readonly keyId: string;
  readonly privateKey: KeyObject;
}

/** What one call asks for. */
export interface CredentialRequest {
  readonly invocationId: string;
  readonly toolId: string;
  readonly connectionRefs: readonly string[];
  /** The call's deadline: no lease outlives it, and no waiting goes past it. */
  readonly deadline: Date;
  readonly correlationId?: string | undefined;
}

/** One granted and opened lease. */
export interface LeasedConnection {
  readonly connectionRef: string;
  readonly leaseId: string;
  readonly connectionId: string;
  readonly kind: ConnectionKind;
  readonly expiresAt: string;
  /** The plaintext credential: use it, scrub it, never store or log it. */
  readonly credential: LeasedCredential;
}

/** Every lease of a call, or the first refusal. */
export type CredentialLeaseOutcome = { readonly ok: true; readonly leases: readonly LeasedConnection[] } | { readonly ok: false; readonly failure: ToolFailure };

/** Leases the credentials of one call. */
export interface CredentialLeaser {
  lease(scope: Scope, call: CredentialRequest, signal?: AbortSignal): Promise<CredentialLeaseOutcome>;
}

/** Options of {@link secretBrokerLeaser}. */
export interface SecretBrokerLeaserOptions {
  readonly recipient: LeaseRecipient;
  /** How long one lease request waits for the broker's answer. */
  readonly timeoutMs: number;
  readonly now?: () => number;
}

/** Opens a lease's sealed box into the credential; the box is bound to this lease and invocation. */
export function openLease(recipient: LeaseRecipient, reply: SecretLeaseReply, invocationId: string): LeasedCredential {
  const plaintext = openSealedBox(recipient, reply.sealed, { leaseId: reply.leaseId, invocationId });
  try {
    const parsed = LeasedCredential.safeParse(JSON.parse(plaintext.toString('utf8')));
    // The issues could quote the plaintext: say only that it is not a credential.
    if (!parsed.success) throw new ToolplaneError('INTERNAL', `lease ${reply.leaseId} does not hold a credential`);
    return parsed.data;
  } catch (error) {
    if (error instanceof SyntaxError) throw new ToolplaneError('INTERNAL', `lease ${reply.leaseId} does not hold a credential`);
    throw error;
  } finally {
    plaintext.fill(0);
  }
}

/** The failure a lease request ended with, for a connection; whether to ask again is `retryable`. */
export function leaseFailure(connectionRef: string, error: unknown): ToolFailure {
  const sealing = Object.values(SealingFailure).find((failure) => isSealingFailure(error, failure));
  if (sealing !== undefined) {
    return { code: 'INTERNAL', message: `the lease of connection ${connectionRef} does not open with this adapter's key (${sealing})`, retryable: false };
  }
  const wire = toWireError(error);
  // The broker not answering (no responder, no reply in time) is a dependency being away, not the call timing out.
  if (wire.code === 'TIMEOUT' || wire.code === 'TEMPORARY_UNAVAILABLE') {
    return { code: 'TEMPORARY_UNAVAILABLE', message: `the secret broker did not lease connection ${connectionRef}: ${wire.message}`.slice(0, 4096), retryable: true };
  }
  // The broker's messages name codes, ids and rules, never secret material.
  return { code: wire.code, message: `connection ${connectionRef}: ${wire.message}`.slice(0, 4096), retryable: wire.retryable };
}

/** A leaser that asks the secret broker of the call's scope. */
export function secretBrokerLeaser(messaging: Messaging, options: SecretBrokerLeaserOptions): CredentialLeaser {
  const now = options.now ?? Date.now;

  const leaseOne = async (scope: Scope, call: CredentialRequest, connectionRef: string, signal: AbortSignal | undefined): Promise<LeasedConnection | ToolFailure> => {
    let last: ToolFailure | undefined;
    for (let tries = 0, backoffMs = 100; ; tries += 1, backoffMs = Math.min(backoffMs * 2, 1_000)) {
      const remaining = call.deadline.getTime() - now();
      if (remaining <= 0) return last ?? { code: 'TIMEOUT', message: 'the deadline passed before the credentials were leased', retryable: true };
      try {
        const reply = await request(messaging, {
          subject: commandSubject(scope, 'secrets', secretBrokerOperations.leaseSecret),
          requestSchema: SecretLeaseRequest,
          replySchema: SecretLeaseReply,
          body: {
            invocationId: call.invocationId,
            toolId: call.toolId,
            connectionRef,
            recipientKeyId: options.recipient.keyId,
            // The lease need not outlive the call.
            ttlMs: Math.min(86_400_000, Math.max(1, Math.ceil(remaining))),
            ...(call.correlationId === undefined ? {} : { correlationId: call.correlationId }),
          },
          timeoutMs: Math.max(1, Math.min(options.timeoutMs, remaining)),
          ...(signal ? { signal } : {}),
        });
        return { connectionRef, leaseId: reply.leaseId, connectionId: reply.connectionId, kind: reply.kind, expiresAt: reply.expiresAt, credential: openLease(options.recipient, reply, call.invocationId) };
      } catch (error) {
        last = leaseFailure(connectionRef, error);
        if (!last.retryable || signal?.aborted === true || last.code !== 'TEMPORARY_UNAVAILABLE' || tries >= 4) return last;
      }
      if (call.deadline.getTime() - now() <= backoffMs) return last;
      try {
        await sleep(backoffMs, signal, 'waiting to ask the secret broker again');
      } catch {
        return last;
      }
    }
  };

  return {
    async lease(scope, call, signal) {
      const results = await Promise.all(call.connectionRefs.map((ref) => leaseOne(scope, call, ref, signal)));
      const leases: LeasedConnection[] = [];
      for (const result of results) {
        if ('code' in result) return { ok: false, failure: result };
        leases.push(result);
      }
      return { ok: true, leases };
    },
  };
}
