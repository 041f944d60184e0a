import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PLATFORM_ADMIN_ROLE,
  POLICY_ADMIN_ROLE,
  type McpServer,
  registryCommandSchemas,
} from '@toolplane/contracts';
import { generateSigningKeyPair, issueToken } from '@toolplane/auth';
import { realServerPath } from '@toolplane/mcp/testing';
import type { Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import { testScope } from '@toolplane/testing';
import { call, codeOf, connectClient, freshScope, operatorKey, operatorToken, startRegistry, storedEvents, testOperator } from './harness.js';

// Who may ask the registry what: every human operation needs an operator token of the subject's scope; changes
// need the policy-admin role, an authentication exception the platform-admin role; `getServer` (the tool
// adapter's) needs none. What is recorded as the actor is the token's principal, never a body's `actor`.

const scope = testScope('registry_tokens');
const here = freshScope('tokens');
const everythingStdio = { executable: process.execPath, args: [realServerPath('everything'), 'stdio'] };
const remoteUrl = 'http://0.0.0.0:9/mcp';
const unknownId = '5d7b0a2e-6c1f-4c3b-9a8e-0f1e2d3c4b5a';

const schemas = registryCommandSchemas;

let registry: RunningService;
let client: Messaging;
/** Discovered, with `echo` bound by the default operator (Active). */
let discovered: McpServer;
/** Registered only, reachable beyond the local process (an exception can be granted to it). */
let remote: McpServer;

/** Every human operation once, on the servers above, sent with `token` (null: none). */
function humanOperations(token: string | null) {
  const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
  return [
    ['register', () => call(client, here, 'register', schemas.register, { name: 'intruder', stdio: everythingStdio }, 30_000, token)],
    ['discover', () => call(client, here, 'discover', schemas.discover, { serverId: discovered.serverId }, 30_000, token)],
    ['bind', () => call(client, here, 'bind', schemas.bind, { serverId: discovered.serverId, toolName: 'get-sum', sideEffectClass: 'READ', riskClass: 'LOW' }, 30_000, token)],
    ['unbind', () => call(client, here, 'unbind', schemas.unbind, { serverId: discovered.serverId, toolName: 'echo' }, 30_000, token)],
    ['retire', () => call(client, here, 'retire', schemas.retire, { serverId: discovered.serverId }, 30_000, token)],
    ['grantException', () => call(client, here, 'grantException', schemas.grantException, { serverId: remote.serverId, reason: 'pilot', expiresAt }, 30_000, token)],
    ['listServers', () => call(client, here, 'listServers', schemas.listServers, {}, 30_000, token)],
    ['listTools', () => call(client, here, 'listTools', schemas.listTools, {}, 30_000, token)],
    ['getDescriptor', () => call(client, here, 'getDescriptor', schemas.getDescriptor, { toolId: 'everything.echo' }, 30_000, token)],
  ] as const;
}

/** Everything a refused command could have changed: the servers, the bound tools and the events of the scope. */
async function snapshot() {
  const servers = await call(client, here, 'listServers', schemas.listServers, {});
  const tools = await call(client, here, 'listTools', schemas.listTools, {});
  return { servers, tools, events: (await storedEvents(client, here)).map((event) => event.metadata.eventId) };
}

beforeAll(async () => {
  registry = await startRegistry(scope, { REGISTRY_WATCH: 'off' });
  client = await connectClient(scope, 'tokens');
  const registered = await call(client, here, 'register', schemas.register, { name: 'everything', stdio: everythingStdio });
  await call(client, here, 'discover', schemas.discover, { serverId: registered.server.serverId });
  await call(client, here, 'bind', schemas.bind, { serverId: registered.server.serverId, toolName: 'echo', sideEffectClass: 'READ', riskClass: 'LOW' });
  discovered = (await call(client, here, 'getServer', schemas.getServer, { serverId: registered.server.serverId })).server;
  remote = (await call(client, here, 'register', schemas.register, { name: 'remote', endpointUrl: remoteUrl })).server;
}, 120_000);

afterAll(async () => {
  await client?.drain();
  await registry?.stop();
});

describe('a command without a valid operator token of its scope', () => {
  it('is AUTHENTICATION_FAILED, for every human operation, and changes nothing', async () => {
    const before = await snapshot();
    const forger = await generateSigningKeyPair(operatorKey.kid);
    const roles = [POLICY_ADMIN_ROLE, PLATFORM_ADMIN_ROLE];
    const tokens = {
      none: null,
      // The trusted kid, another key: the signature does not verify.
      forged: await issueToken({ kind: 'human', tenant: here.tenant, workspaces: [here.workspace], principal: 'user:mallory', roles }, forger.privateKey, { kid: forger.kid, expiresIn: '5m' }),
      'of another workspace': await operatorToken(here, { workspaces: ['elsewhere'] }),
      'of another tenant': await operatorToken({ tenant: `${here.tenant}x`, workspace: here.workspace }),
      // Issued two minutes ago for one minute: past the verifier's 30 s tolerance.
      expired: await issueToken({ kind: 'human', tenant: here.tenant, workspaces: [here.workspace], principal: testOperator, roles }, operatorKey.privateKey, {
        kid: operatorKey.kid,
        expiresIn: '1m',
        now: new Date(Date.now() - 120_000),
      }),
      "an agent's": await issueToken({ kind: 'agent', tenant: here.tenant, workspace: here.workspace, principal: testOperator, agentId: 'agent-1', agentRevision: '1' }, operatorKey.privateKey, {
        kid: operatorKey.kid,
        expiresIn: '5m',
      }),
    };
    const codes: Record<string, string> = {};
    for (const [kind, token] of Object.entries(tokens)) {
      for (const [operation, work] of humanOperations(token)) codes[`${operation} with ${kind} token`] = await codeOf(work());
    }
    expect(Object.entries(codes).filter(([, code]) => code !== 'AUTHENTICATION_FAILED')).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });

  it('names the problem without quoting the token', async () => {
    const token = await operatorToken(here, { workspaces: ['elsewhere'] });
    const refusal = await call(client, here, 'listServers', schemas.listServers, {}, 30_000, token).then(
      () => undefined,
      (error: unknown) => (error as Error).message,
    );
    expect(refusal).toBe(`token refused: it does not cover workspace ${here.workspace}`);
    const none = await call(client, here, 'listServers', schemas.listServers, {}, 30_000, null).then(
      () => undefined,
      (error: unknown) => (error as Error).message,
    );
    expect(none).toBe('no operator token: send one as "Authorization: Bearer <token>"');
  });

  it('except getServer, the tool adapter\'s read, which NATS permissions guard', async () => {
    expect((await call(client, here, 'getServer', schemas.getServer, { serverId: discovered.serverId }, 30_000, null)).server.serverId).toBe(discovered.serverId);
    expect(await codeOf(call(client, here, 'getServer', schemas.getServer, { serverId: unknownId }, 30_000, null))).toBe('NOT_FOUND');
  });
});

describe('an operator without the role an operation needs', () => {
  it('reads, but every change is AUTHORIZATION_DENIED and changes nothing', async () => {
    const before = await snapshot();
    const reader = await operatorToken(here, { principal: 'user:reader', roles: ['approver'] });
    const codes = Object.fromEntries(await Promise.all(humanOperations(reader).map(async ([operation, work]) => [operation, await codeOf(work())] as const)));
    expect(codes).toEqual({
      register: 'AUTHORIZATION_DENIED',
      discover: 'AUTHORIZATION_DENIED',
      bind: 'AUTHORIZATION_DENIED',
      unbind: 'AUTHORIZATION_DENIED',
      retire: 'AUTHORIZATION_DENIED',
      grantException: 'AUTHORIZATION_DENIED',
      listServers: 'OK',
      listTools: 'OK',
      getDescriptor: 'OK',
    });
    expect(await snapshot()).toEqual(before);
  });

  it('a policy admin cannot grant an authentication exception: that is a platform admin\'s', async () => {
    const policyAdmin = await operatorToken(here, { principal: 'user:policy', roles: [POLICY_ADMIN_ROLE] });
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const refusal = await call(client, here, 'grantException', schemas.grantException, { serverId: remote.serverId, reason: 'pilot', expiresAt }, 30_000, policyAdmin).catch(
      (error: unknown) => error as Error & { code: string },
    );
    expect(refusal).toMatchObject({ code: 'AUTHORIZATION_DENIED', message: `operator user:policy lacks the role ${PLATFORM_ADMIN_ROLE} this operation needs` });
    const after = await call(client, here, 'getServer', schemas.getServer, { serverId: remote.serverId });
    expect(after.server.authenticationException).toBeUndefined();
    expect(after.server.version).toBe(remote.version);
  });
});

describe('the recorded actor', () => {
  it("is the token's principal, whatever the body's actor or grantedBy says", async () => {
    const alice = await operatorToken(here, { principal: 'user:alice', roles: [POLICY_ADMIN_ROLE, PLATFORM_ADMIN_ROLE] });
    const mallory = 'user:mallory';
    const earlier = new Set((await storedEvents(client, here)).map((event) => event.metadata.eventId));

    const registered = await call(client, here, 'register', schemas.register, { name: 'second', stdio: everythingStdio, actor: mallory }, 30_000, alice);
    expect(registered.server.registeredBy).toBe('user:alice');
    const serverId = registered.server.serverId;
    await call(client, here, 'discover', schemas.discover, { serverId, actor: mallory }, 30_000, alice);
    const bound = await call(client, here, 'bind', schemas.bind, { serverId, toolName: 'echo', sideEffectClass: 'READ', riskClass: 'LOW', actor: mallory }, 30_000, alice);
    expect(bound.descriptor.boundBy).toBe('user:alice');
    await call(client, here, 'unbind', schemas.unbind, { serverId, toolName: 'echo', actor: mallory }, 30_000, alice);
    await call(client, here, 'retire', schemas.retire, { serverId, actor: mallory }, 30_000, alice);
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const granted = await call(client, here, 'grantException', schemas.grantException, { serverId: remote.serverId, reason: 'pilot', expiresAt, grantedBy: mallory }, 30_000, alice);
    expect(granted.server.authenticationException?.grantedBy).toBe('user:alice');

    const events = (await storedEvents(client, here)).filter((event) => !earlier.has(event.metadata.eventId));
    expect(new Set(events.map((event) => event.type))).toEqual(
      new Set(['McpServerRegistered', 'McpCapabilitiesDiscovered', 'McpServerStateChanged', 'ToolDescriptorActivated', 'ToolDescriptorRetired']),
    );
    expect(new Set(events.map((event) => ('actor' in event.metadata ? event.metadata.actor : undefined)))).toEqual(new Set(['user:alice']));
    expect(JSON.stringify(events)).not.toContain(mallory);
  });
});
