// What the secret broker's integration tests share: keys and settings for a broker, operator tokens, a client that
// speaks its request/reply contracts, the tool adapter's side of a lease, and a recorder of the events it publishes.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import {
  ConnectionEvent,
  LeasedCredential,
  LifecycleEvent,
  connectionSubject,
  secretBrokerStream,
  POLICY_ADMIN_ROLE,
  commandSubject,
  eventFilter,
  secretBrokerContracts,
  type Scope,
  type SecretLeaseReply,
  type SecretLeaseRequest,
} from '@toolplane/contracts';
import { bearerHeaders, generateSigningKeyPair, issueToken } from '@toolplane/auth';
import { readSubject, request, type Messaging } from '@toolplane/messaging';
import { generateKek, generateRecipientKeyPair, openSealedBox, type EncodedKeyPair } from '@toolplane/sealing';
import type { TestScope } from '@toolplane/testing';
import { storedAppendSchema } from '@toolplane/event-store';
import { connectionIdOfName } from '../src/core/aggregate-ids.js';

/** The keys of a test broker: one KEK, and the tool adapter's recipient key pair. */
export interface BrokerKeys {
  readonly kek: string;
  readonly adapter: EncodedKeyPair;
}

/** Fresh keys for one test file. */
export function brokerKeys(): BrokerKeys {
  return { kek: generateKek(), adapter: generateRecipientKeyPair() };
}

/** The key operator tokens of the tests are signed with (loaded once per test file). */
export const operatorKey = await generateSigningKeyPair('broker-test-operators');

/** Who the tests act as, unless they say otherwise. */
export const testOperator = 'user:ops@example.com';

/** An operator token for `scope`: by default the test operator, in the scope's workspace, with the policy-admin role. */
export function operatorToken(scope: Scope, options: { principal?: string; roles?: readonly string[]; workspaces?: readonly string[] } = {}): Promise<string> {
  return issueToken(
    {
      kind: 'human',
      tenant: scope.tenant,
      workspaces: [...(options.workspaces ?? [scope.workspace])],
      principal: options.principal ?? testOperator,
      roles: [...(options.roles ?? [POLICY_ADMIN_ROLE])],
    },
    operatorKey.privateKey,
    { kid: operatorKey.kid, expiresIn: '1h' },
  );
}

/** The tenants a test broker trusts the operator key for: the file's (`scope.prefix`) and a second one (`…_x`). */
export function trustedTenants(scope: TestScope): string[] {
  return [scope.prefix, `${scope.prefix}_x`];
}

/** The environment of a broker replica over the test servers. */
export function brokerEnv(scope: TestScope, keys: BrokerKeys, extra: Record<string, string> = {}): Record<string, string> {
  return {
    NATS_URL: scope.natsUrl,
    MONGODB_URL: scope.mongoUrl,
    MONGODB_DATABASE: scope.dbName,
    HTTP_PORT: '0',
    LOG_LEVEL: 'warn',
    SECRET_BROKER_KEKS: JSON.stringify({ current: 'k1', keys: { k1: keys.kek } }),
    SECRET_BROKER_RECIPIENTS: JSON.stringify({ 'tool-adapter': keys.adapter.publicKey }),
    SECRET_BROKER_ALLOW_HTTP_TOKEN_ENDPOINTS: 'true',
    SECRET_BROKER_SWEEP_INTERVAL_MS: '250',
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify(Object.fromEntries(trustedTenants(scope).map((tenant) => [tenant, [operatorKey.publicJwk]]))),
    ...extra,
  };
}

type Operation = keyof typeof secretBrokerContracts;

/** The headers of a call: an operator token of the scope for connection management, none for a lease (the adapter sends none). */
async function headersOf(scope: Scope, operation: Operation, token: string | null | undefined): Promise<{ headers?: Record<string, string> }> {
  const bearer = token === undefined ? (operation === 'leaseSecret' ? null : await operatorToken(scope)) : token;
  return bearer === null ? {} : { headers: bearerHeaders(bearer) };
}

/**
 * Calls one broker operation in a scope, with the typed contracts (the body is validated before sending). Connection
 * management carries an operator token of the scope with the policy-admin role unless `token` names another one
 * (null: none at all).
 */
export async function call<K extends Operation>(
  m: Messaging,
  scope: Scope,
  operation: K,
  body: z.input<(typeof secretBrokerContracts)[K]['request']>,
  token?: string | null,
): Promise<z.output<(typeof secretBrokerContracts)[K]['reply']>> {
  const contract = secretBrokerContracts[operation];
  return request(m, {
    subject: commandSubject(scope, 'secrets', operation),
    requestSchema: contract.request,
    replySchema: contract.reply,
    body,
    timeoutMs: 15_000,
    ...(await headersOf(scope, operation, token)),
  }) as Promise<z.output<(typeof secretBrokerContracts)[K]['reply']>>;
}

/** Sends any body, unvalidated, as a malicious or broken client would (with the token `call` would send). */
export async function callRaw(m: Messaging, scope: Scope, operation: Operation, body: unknown): Promise<unknown> {
  return request(m, { subject: commandSubject(scope, 'secrets', operation), requestSchema: z.unknown(), replySchema: z.unknown(), body, timeoutMs: 15_000, ...(await headersOf(scope, operation, undefined)) });
}

/** A lease request of the tool adapter for a fresh invocation. */
export function leaseRequest(connectionRef: string, toolId: string, extra: Partial<SecretLeaseRequest> = {}): SecretLeaseRequest {
  return { invocationId: randomUUID(), toolId, connectionRef, recipientKeyId: 'tool-adapter', ...extra };
}

/** Opens a lease as the tool adapter does: with its private key, for that lease and invocation. */
export function openLease(keys: BrokerKeys, reply: SecretLeaseReply, invocationId: string): LeasedCredential {
  const plaintext = openSealedBox({ keyId: 'tool-adapter', privateKey: keys.adapter.privateKey }, reply.sealed, { leaseId: reply.leaseId, invocationId });
  return LeasedCredential.parse(JSON.parse(plaintext.toString('utf8')));
}

/** The error a promise rejects with (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error('expected a rejection');
}

/** Records the lifecycle events of one tenant as core NATS delivers them. */
export interface EventRecorder {
  readonly events: LifecycleEvent[];
  /** Resolves with the first recorded event (past or future) that matches, or rejects after the deadline. */
  waitFor(match: (event: LifecycleEvent) => boolean, timeoutMs?: number): Promise<LifecycleEvent>;
  stop(): void;
}

/** Starts recording the events of `tenant`. */
export async function recordEvents(m: Messaging, tenant: string): Promise<EventRecorder> {
  const events: LifecycleEvent[] = [];
  const waiters = new Set<() => void>();
  const subscription = m.connection.subscribe(eventFilter({ tenant }), {
    callback: (error, msg) => {
      if (error) return;
      events.push(LifecycleEvent.parse(JSON.parse(new TextDecoder().decode(msg.data))));
      for (const wake of waiters) wake();
    },
  });
  await m.connection.flush();
  return {
    events,
    waitFor: (match, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (found === undefined) return false;
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(found);
          return true;
        };
        const wake = () => void check();
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(new Error(`no matching event within ${timeoutMs} ms; saw ${events.map((event) => event.type).join(', ') || 'none'}`));
        }, timeoutMs);
        waiters.add(wake);
        check();
      }),
    stop: () => subscription.unsubscribe(),
  };
}

/** Polls `read` until `done` holds for its value or the deadline passes (for state with no event, e.g. expiry). */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not reached within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The events of a connection (by name) as the broker's private stream holds them: its record, ciphertexts included. */
export async function connectionRecord(m: Messaging, scope: Scope, name: string): Promise<ConnectionEvent[]> {
  const log = await readSubject(m, { stream: secretBrokerStream.name, subject: connectionSubject(scope, connectionIdOfName(scope, name)), schema: storedAppendSchema(ConnectionEvent) });
  return log.entries.flatMap((entry) => entry.value.events);
}

/** How many messages each subject of a scope holds in the private stream: equal before and after means nothing was appended. */
export async function recordCounts(m: Messaging, scope: Scope): Promise<Record<string, number>> {
  const info = await m.manager.streams.info(secretBrokerStream.name, { subjects_filter: `tp.v1.sec.${scope.tenant}.${scope.workspace}.>` });
  return { ...(info.state.subjects ?? {}) };
}
