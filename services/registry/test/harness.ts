// Integration-test support: the registry started in-process against the harness's NATS and FerretDB, a client
// connection, typed command calls with an operator token, and reads of what the registry published.
import type { z } from 'zod';
import {
  LifecycleEvent,
  PLATFORM_ADMIN_ROLE,
  POLICY_ADMIN_ROLE,
  commandSubject,
  hasErrorCode,
  registryOperations,
  streams,
  type Scope,
} from '@toolplane/contracts';
import { bearerHeaders, generateSigningKeyPair, issueToken } from '@toolplane/auth';
import { connectMessaging, request, type Messaging } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { uniqueName, type TestScope } from '@toolplane/testing';
import { registryService } from '../src/service.js';

// Trusted keys are per tenant and fixed at start, so every scope of a test file is a workspace of one tenant of its
// own (this module is loaded once per test file).
const fileTenant = uniqueName('registry').slice(0, 60);

/** The key operator tokens of the tests are signed with; registries started here trust it for the file's tenant. */
export const operatorKey = await generateSigningKeyPair('registry-test-operators');

/** Who the tests act as, unless they say otherwise. */
export const testOperator = 'user:operator@example.com';

/** What an operator token says: by default the test operator, in the scope's workspace, with the policy-admin and platform-admin roles. */
export interface OperatorTokenOptions {
  readonly principal?: string;
  readonly roles?: readonly string[];
  readonly workspaces?: readonly string[];
}

/** An operator token for `scope`, signed with the key the registries started here trust. */
export function operatorToken(scope: Scope, options: OperatorTokenOptions = {}): Promise<string> {
  return issueToken(
    {
      kind: 'human',
      tenant: scope.tenant,
      workspaces: [...(options.workspaces ?? [scope.workspace])],
      principal: options.principal ?? testOperator,
      roles: [...(options.roles ?? [POLICY_ADMIN_ROLE, PLATFORM_ADMIN_ROLE])],
    },
    operatorKey.privateKey,
    { kid: operatorKey.kid, expiresIn: '1h' },
  );
}

/** Starts a registry replica in this process; `overrides` sets or replaces environment settings. */
export function startRegistry(scope: TestScope, overrides: Record<string, string> = {}): Promise<RunningService> {
  return startService(registryService, {
    NATS_URL: scope.natsUrl,
    MONGODB_URL: scope.mongoUrl,
    MONGODB_DATABASE: scope.dbName,
    HTTP_PORT: '0',
    LOG_LEVEL: 'silent',
    REGISTRY_HEALTH_INTERVAL_MS: '400',
    REGISTRY_HEALTH_TIMEOUT_MS: '3000',
    REGISTRY_WATCH_LEASE_MS: '8000',
    REGISTRY_HEALTH_FAILURE_THRESHOLD: '2',
    REGISTRY_DISCOVERY_INTERVAL_MS: '1500',
    MCP_HANDSHAKE_TIMEOUT_MS: '10000',
    MCP_REQUEST_TIMEOUT_MS: '10000',
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [fileTenant]: [operatorKey.publicJwk] }),
    ...overrides,
  });
}

/** A client connection for the test itself. */
export function connectClient(scope: TestScope, label: string): Promise<Messaging> {
  return connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_${label}` });
}

/** A workspace (of the test file's tenant) no other test uses. */
export function freshScope(label: string): Scope {
  return { tenant: fileTenant, workspace: uniqueName(label).slice(0, 64) };
}

/**
 * Sends one registry command in a scope and returns its reply (or throws the registry's typed error). It carries an
 * operator token of the scope with the policy-admin and platform-admin roles, unless `token` names another one
 * (null: none at all).
 */
export async function call<Req extends z.ZodType, Res extends z.ZodType>(
  m: Messaging,
  scope: Scope,
  operation: keyof typeof registryOperations,
  schemas: { readonly request: Req; readonly reply: Res },
  body: z.input<Req>,
  timeoutMs = 30_000,
  token?: string | null,
): Promise<z.output<Res>> {
  const bearer = token === undefined ? await operatorToken(scope) : token;
  return request(m, {
    subject: commandSubject(scope, 'registry', registryOperations[operation]),
    requestSchema: schemas.request,
    replySchema: schemas.reply,
    body,
    timeoutMs,
    ...(bearer === null ? {} : { headers: bearerHeaders(bearer) }),
  });
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

/** Every event stored in the events stream for a scope, in stream order (duplicates dropped by JetStream are not there). */
export async function storedEvents(m: Messaging, scope: Scope): Promise<LifecycleEvent[]> {
  const consumer = await m.jetstream.consumers.get(streams.events.name, { filter_subjects: [`tp.v1.evt.${scope.tenant}.${scope.workspace}.>`] });
  const events: LifecycleEvent[] = [];
  try {
    // What is stored now, counted before reading: the read then ends as soon as it has them all.
    let pending = (await consumer.info()).num_pending;
    while (pending > 0) {
      const batch = await consumer.fetch({ max_messages: Math.min(pending, 500), expires: 5_000 });
      let received = 0;
      for await (const message of batch) {
        received++;
        events.push(LifecycleEvent.parse(message.json()));
      }
      if (received === 0) throw new Error(`the events stream did not deliver ${pending} stored events`);
      pending -= received;
    }
  } finally {
    await consumer.delete().catch(() => undefined);
  }
  return events;
}

export { eventually } from '@toolplane/testing';
