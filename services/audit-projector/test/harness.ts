// Integration-test support: projector replicas started in-process against the harness's NATS and FerretDB,
// each test file on its own database and its own durable consumer (filtered to its own tenants), a client
// connection, publishing of events, typed audit calls, and reads of the stored projections.
import type { z } from 'zod';
import {
  DeadLetter,
  LifecycleEvent,
  auditCommandSchemas,
  auditOperations,
  commandSubject,
  deadLetterSubject,
  eventMsgId,
  PLATFORM_ADMIN_ROLE,
  hasErrorCode,
  streams,
  subjectOfEvent,
  type Scope,
} from '@toolplane/contracts';
import { bearerHeaders, generateSigningKeyPair, issueToken } from '@toolplane/auth';
import { connectMessaging, ensureStream, publish, request, type Messaging } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { connectStore, type Store } from '@toolplane/store';
import { uniqueName, type TestScope } from '@toolplane/testing';
import { auditProjectorService } from '../src/service.js';

/** What a test file works with: its servers, database, consumer name and tenant. */
export interface ProjectorScope extends TestScope {
  readonly consumer: string;
  readonly tenant: string;
}

/** A consumer name and tenant of the test file's own, on top of its test scope. */
export function projectorScope(scope: TestScope, label: string): ProjectorScope {
  return { ...scope, consumer: uniqueName(`ap_${label}`), tenant: uniqueName(label).slice(0, 60) };
}

/** The key operator tokens of the tests are signed with; replicas started here trust it for the test's tenant. */
export const operatorKey = await generateSigningKeyPair('audit-test-operators');

/** An operator token of `tenant` for `workspaces`, with the platform-admin role unless `roles` says otherwise. */
export function operatorToken(tenant: string, workspaces: readonly string[], roles: readonly string[] = [PLATFORM_ADMIN_ROLE]): Promise<string> {
  return issueToken({ kind: 'human', tenant, workspaces: [...workspaces], principal: 'user:auditor@example.com', roles: [...roles] }, operatorKey.privateKey, {
    kid: operatorKey.kid,
    expiresIn: '1h',
  });
}

/** Starts a projector replica in this process; `overrides` sets or replaces environment settings. */
export function startProjector(scope: ProjectorScope, overrides: Record<string, string> = {}): Promise<RunningService> {
  return startService(auditProjectorService, {
    NATS_URL: scope.natsUrl,
    MONGODB_URL: scope.mongoUrl,
    MONGODB_DATABASE: scope.dbName,
    HTTP_PORT: '0',
    // Set AUDIT_TEST_LOG_LEVEL=debug to see what the replicas do.
    LOG_LEVEL: process.env['AUDIT_TEST_LOG_LEVEL'] ?? 'silent',
    AUDIT_PROJECTOR_CONSUMER: scope.consumer,
    AUDIT_PROJECTOR_TENANT: scope.tenant,
    AUDIT_PROJECTOR_RETRY_DELAY_MS: '200',
    AUDIT_PROJECTOR_STOP_GRACE_MS: '200',
    AUDIT_REBUILD_POLL_MS: '200',
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [scope.tenant]: [operatorKey.publicJwk] }),
    ...overrides,
  });
}

/** A client connection for the test itself. */
export function connectClient(scope: TestScope, label: string): Promise<Messaging> {
  return connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_${label}` });
}

/** The test's own view of the database the projector writes. */
export function openStore(scope: TestScope): Promise<Store> {
  return connectStore({ url: scope.mongoUrl, dbName: scope.dbName, appName: 'audit-projector-test' });
}

/**
 * Publishes events on their own subjects. JetStream drops a repeated Nats-Msg-Id, so a `copy` label gives the
 * duplicates a test injects ids of their own: they reach the projector as a redelivered event would.
 */
export async function publishEvents(m: Messaging, events: readonly LifecycleEvent[], copy?: string): Promise<void> {
  for (const event of events) {
    await publish(m, { subject: subjectOfEvent(event), schema: LifecycleEvent, message: event, msgId: copy === undefined ? eventMsgId(event) : `${eventMsgId(event)}#${copy}` });
  }
}

/**
 * Sends one audit command in a scope and returns its reply (or throws the service's typed error). It carries an
 * operator token of the scope with the platform-admin role, unless `token` names another one (null: none at all).
 */
export async function call<O extends keyof typeof auditCommandSchemas>(
  m: Messaging,
  scope: Scope,
  operation: O,
  body: z.input<(typeof auditCommandSchemas)[O]['request']>,
  timeoutMs = 30_000,
  token?: string | null,
): Promise<z.output<(typeof auditCommandSchemas)[O]['reply']>> {
  const schemas = auditCommandSchemas[operation];
  const bearer = token === undefined ? await operatorToken(scope.tenant, [scope.workspace]) : token;
  return request(m, {
    subject: commandSubject(scope, 'audit', auditOperations[operation]),
    requestSchema: schemas.request as z.ZodType,
    replySchema: schemas.reply as z.ZodType,
    body,
    timeoutMs,
    ...(bearer === null ? {} : { headers: bearerHeaders(bearer) }),
  }) as Promise<z.output<(typeof auditCommandSchemas)[O]['reply']>>;
}

/** The taxonomy code a promise fails with ('OK' if it does not). */
export async function codeOf(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (error) {
    if (hasErrorCode(error)) return error.code;
    throw error;
  }
  return 'OK';
}

/**
 * Collects the dead letters of a consumer from now on (the DLQ stream keeps them; this reads them as they come).
 * It declares the dead-letter stream it reads, so it works before any projector (or another test file) has.
 */
export async function watchDeadLetters(m: Messaging, consumer: string): Promise<{ letters: DeadLetter[]; stop: () => Promise<void> }> {
  await ensureStream(m, streams.deadLetters);
  const letters: DeadLetter[] = [];
  const ordered = await m.jetstream.consumers.get(streams.deadLetters.name, { filter_subjects: [deadLetterSubject(streams.events.name, consumer)] });
  const messages = await ordered.consume();
  const done = (async () => {
    for await (const message of messages) letters.push(DeadLetter.parse(message.json()));
  })();
  return {
    letters,
    stop: async () => {
      await messages.close();
      await done;
    },
  };
}

export { eventually } from '@toolplane/testing';
