// Tenant isolation by NATS itself: a nats-server of this test's own runs with infra/nats/authorization.example.conf
// (the operators' sample, unchanged; passwords from its environment), the adapter connects as its own service user,
// and each tenant's agent runtime as its own user. A runtime of acme cannot publish to globex's request or command
// subjects (the server refuses, the publish fails with AUTHORIZATION_DENIED) and cannot read globex's replies,
// events or inbox traffic (neither `_INBOX.>` nor globex's inbox prefix), while both tenants' own calls, commands and
// JetStream acknowledgements go through their own inbox prefixes (`_INBOX_<tenant>.<workspace>`, the client's default).
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EffectiveToolSet,
  EffectiveToolSetRequest,
  InvocationRequest,
  adapterOperations,
  commandSubject,
  eventFilter,
  invocationReplySubject,
  invocationRequestSubject,
  invocationStateFilter,
  invocationStateStream,
  streams,
  type Scope,
} from '@toolplane/contracts';
import { runCli, type CliIo } from '@toolplane/cli';
import { z } from 'zod';
import { connectMessaging, descriptorBucket, openKv, publish, request, type KvChange, type Messaging } from '@toolplane/messaging';
import { testScope } from '@toolplane/testing';
import { callStreamId } from '../src/mod.js';
import { AdapterHarness, startNatsServer, waitFor, type AdapterProcess, type NatsServer } from './adapter-harness.js';

const configFile = path.resolve(import.meta.dirname, '../../../infra/nats/authorization.example.conf');
// nats-server parses an environment value as a configuration value: a password must read as a string (a letter first).
const password = () => `pw${randomBytes(12).toString('hex')}`;
const passwords = {
  TOOL_ADAPTER_PASSWORD: password(),
  SECRET_BROKER_PASSWORD: password(),
  APPROVAL_PASSWORD: password(),
  REGISTRY_PASSWORD: password(),
  AUDIT_PROJECTOR_PASSWORD: password(),
  FLOW_RUNNER_PASSWORD: password(),
  ACME_RUNTIME_PASSWORD: password(),
  GLOBEX_RUNTIME_PASSWORD: password(),
  MCP_ENDPOINT_PASSWORD: password(),
  CONSOLE_PASSWORD: password(),
};

/** The password setting of each service user of the sample. */
const serviceUserPassword = {
  'tool-adapter': 'TOOL_ADAPTER_PASSWORD',
  approval: 'APPROVAL_PASSWORD',
  registry: 'REGISTRY_PASSWORD',
  'secret-broker': 'SECRET_BROKER_PASSWORD',
  'audit-projector': 'AUDIT_PROJECTOR_PASSWORD',
  'flow-runner': 'FLOW_RUNNER_PASSWORD',
} as const;

let nats: NatsServer;
let harness: AdapterHarness;
let adapter: AdapterProcess;
let acmeRuntime: Messaging;
let globexRuntime: Messaging;
let acme: Scope;
let globex: Scope;

function urlFor(user: string, password: string): string {
  return `nats://${user}:${password}@127.0.0.1:${nats.port}`;
}

/** What @toolplane/client and the CLI use by default; the sample lets a tenant's runtime subscribe to `_INBOX_<tenant>.>`. */
function inboxPrefixOf(scope: Scope): string {
  return `_INBOX_${scope.tenant}.${scope.workspace}`;
}

beforeAll(async () => {
  nats = await startNatsServer({ configFile, env: passwords });
  const { mongoUrl, dbName } = testScope('permissions');
  harness = await AdapterHarness.start({ natsUrl: urlFor('tool-adapter', passwords.TOOL_ADAPTER_PASSWORD), mongoUrl, dbName, tenants: ['acme', 'globex'] });
  adapter = await harness.startAdapter();
  acme = await harness.freshScope('acme');
  globex = await harness.freshScope('globex');
  acmeRuntime = await connectMessaging({ url: urlFor('runtime-acme', passwords.ACME_RUNTIME_PASSWORD), name: 'runtime-acme', timeoutMs: 5_000, inboxPrefix: inboxPrefixOf(acme) });
  globexRuntime = await connectMessaging({ url: urlFor('runtime-globex', passwords.GLOBEX_RUNTIME_PASSWORD), name: 'runtime-globex', timeoutMs: 5_000, inboxPrefix: inboxPrefixOf(globex) });
  for (const scope of [acme, globex]) await harness.bindTool(scope, 'fixture.count', 'count_calls', 'counting');
}, 120_000);

afterAll(async () => {
  await acmeRuntime?.close();
  await globexRuntime?.close();
  await adapter?.stop();
  await harness?.close();
  await nats?.stop();
});

/** A core subscription that records what it gets and the error the server closes it with, if any. */
function watch(runtime: Messaging, subject: string) {
  const received: string[] = [];
  const errors: Error[] = [];
  runtime.connection.subscribe(subject, {
    callback: (error, message) => {
      if (error !== null) errors.push(error);
      else received.push(message.subject);
    },
  });
  return { received, errors };
}

describe('NATS permissions from infra/nats/authorization.example.conf', () => {
  it('lets each tenant’s runtime call through the adapter and read its own replies and events', async () => {
    for (const [runtime, scope] of [
      [acmeRuntime, acme],
      [globexRuntime, globex],
    ] as const) {
      const events = watch(runtime, eventFilter(scope));
      await runtime.connection.flush();
      const call = await harness.send(scope, { toolId: 'fixture.count', arguments: {}, idempotencyKey: `own-${scope.tenant}` }, undefined, runtime);
      const reply = await call.reply(30_000);
      expect(reply.ok && reply.data.status).toBe('SUCCESS');
      await waitFor(`${scope.tenant}'s ToolCallCompleted`, () => events.received.some((subject) => subject.endsWith('.ToolCallCompleted')));
      expect(events.errors).toEqual([]);
      expect(await harness.executions(scope)).toBe(1);
    }
  });

  it('refuses a publish to another tenant’s request subject: AUTHORIZATION_DENIED, nothing stored, nothing run', async () => {
    const message = InvocationRequest.parse({
      toolId: 'fixture.count',
      arguments: {},
      idempotencyKey: 'from-acme',
      correlationId: 'run-1',
      contextToken: await harness.contextToken(acme),
      replyInbox: 'inbox_cross',
    });
    const before = await harness.messaging.manager.streams.info(streams.invocations.name);
    await expect(publish(acmeRuntime, { subject: invocationRequestSubject(globex), schema: InvocationRequest, message, msgId: randomUUID(), timeoutMs: 5_000 })).rejects.toMatchObject({ code: 'AUTHORIZATION_DENIED' });
    const after = await harness.messaging.manager.streams.info(streams.invocations.name);
    expect(after.state.last_seq).toBe(before.state.last_seq);
    expect(await harness.stored(globex, 'from-acme')).toBeUndefined();
    expect(await harness.executions(globex)).toBe(1);
  });

  it('refuses a command on another tenant’s subject with AUTHORIZATION_DENIED', async () => {
    await expect(
      request(acmeRuntime, {
        subject: commandSubject(globex, 'adapter', adapterOperations.effectiveTools),
        requestSchema: EffectiveToolSetRequest,
        replySchema: EffectiveToolSet,
        body: { contextToken: await harness.contextToken(acme) },
        timeoutMs: 5_000,
      }),
    ).rejects.toMatchObject({ code: 'AUTHORIZATION_DENIED' });
  });

  it('never delivers another tenant’s replies, events or inbox traffic to a runtime, however it subscribes', async () => {
    const snoops = [
      invocationReplySubject(globex, 'inbox_snooped'),
      `tp.v1.rpl.globex.>`,
      eventFilter({ tenant: 'globex' }),
      'tp.v1.evt.>',
      'tp.v1.>',
      '>',
      '_INBOX.>',
      '_INBOX_globex.>',
      `${inboxPrefixOf(globex)}.>`,
      '*.>',
    ].map((subject) => ({ subject, ...watch(acmeRuntime, subject) }));
    await acmeRuntime.connection.flush();
    // The server refuses each subscription (an error on it), and keeps refusing to deliver.
    await waitFor('every subscription to be refused', () => snoops.every((snoop) => snoop.errors.length > 0));
    for (const snoop of snoops) expect(snoop.errors[0]?.message).toMatch(/permissions violation/i);

    // globex's own runtime sees its reply and events, at the inbox acme tried to listen on.
    const globexEvents = watch(globexRuntime, eventFilter(globex));
    await globexRuntime.connection.flush();
    // Its publish is acknowledged and its command answered under its own inbox prefix, which acme tried to read too.
    const globexInbox = watch(globexRuntime, `${inboxPrefixOf(globex)}.>`);
    await globexRuntime.connection.flush();
    const call = await harness.send(globex, { toolId: 'fixture.count', arguments: {}, idempotencyKey: 'snooped' }, undefined, globexRuntime);
    const reply = await call.reply(30_000);
    expect(reply.ok && reply.data.status).toBe('SUCCESS');
    await expect(effectiveToolsOf(globexRuntime, globex)).resolves.toEqual(['fixture.count']);
    await waitFor('globex’s ToolCallCompleted', () => globexEvents.received.some((subject) => subject.endsWith('.ToolCallCompleted')));
    await globexRuntime.connection.flush();
    // The acknowledgement of the request and the command's reply, at least.
    expect(globexInbox.received.length).toBeGreaterThanOrEqual(2);
    await acmeRuntime.connection.flush();
    expect(snoops.flatMap((snoop) => snoop.received)).toEqual([]);
  });

  it('answers a runtime’s own commands and acknowledges its requests through its inbox prefix', async () => {
    await expect(effectiveToolsOf(acmeRuntime, acme)).resolves.toEqual(['fixture.count']);
    // Without its prefix a runtime gets no replies at all: the server refuses it `_INBOX.…` for its JetStream check at connect.
    await expect(connectMessaging({ url: urlFor('runtime-acme', passwords.ACME_RUNTIME_PASSWORD), name: 'runtime-acme-no-prefix', timeoutMs: 5_000 })).rejects.toMatchObject({ code: 'AUTHORIZATION_DENIED' });
  });

  it('runs the CLI as a runtime of acme on its default inbox prefix: effective tools, and an invocation acknowledged and answered', { timeout: 60_000 }, async () => {
    const url = urlFor('runtime-acme', passwords.ACME_RUNTIME_PASSWORD);
    const effective = await toolplane(url, acme, 'tools', 'effective');
    expect(effective.err).toBe('');
    expect((JSON.parse(effective.out) as EffectiveToolSet).tools.map((tool) => tool.toolId)).toEqual(['fixture.count']);
    const invoked = await toolplane(url, acme, 'invoke', 'fixture.count', '--args', '{}', '--key', 'cli-acme');
    expect(invoked.err).toBe('');
    expect((JSON.parse(invoked.out) as { status: string }).status).toBe('SUCCESS');
    expect((await harness.stored(acme, 'cli-acme'))?.state).toBe('Observed');
  });

  it('keeps the invocation state (arguments and results) to the tool adapter: another service may not read, consume, append to or purge it', { timeout: 60_000 }, async () => {
    const call = await harness.send(acme, { toolId: 'fixture.count', arguments: { note: 'private' }, idempotencyKey: 'private-state' });
    const reply = await call.reply(30_000);
    expect(reply.ok && reply.data.status).toBe('SUCCESS');
    const subject = callStreamId(acme, 'private-state');
    // The adapter's own user reads the call's record.
    expect((await harness.messaging.manager.direct.getMessage(invocationStateStream.name, { last_by_subj: subject }))?.subject).toBe(subject);

    for (const user of ['approval', 'registry', 'secret-broker', 'audit-projector', 'flow-runner'] as const) {
      const other = await connectMessaging({ url: urlFor(user, passwords[serviceUserPassword[user]]), name: `${user}-snoop`, timeoutMs: 5_000 });
      try {
        await expect(other.manager.direct.getMessage(invocationStateStream.name, { last_by_subj: subject })).rejects.toThrow(/permission|timeout/i);
        await expect(other.manager.streams.getMessage(invocationStateStream.name, { last_by_subj: subject })).rejects.toThrow(/permission|timeout/i);
        await expect(other.manager.consumers.add(invocationStateStream.name, { filter_subject: subject })).rejects.toThrow(/permission|timeout/i);
        await expect(other.manager.streams.purge(invocationStateStream.name)).rejects.toThrow(/permission|timeout/i);
        await expect(other.jetstream.publish(subject, '{}', { timeout: 2_000 })).rejects.toThrow(/permission|timeout/i);
        const snoop = watch(other, invocationStateFilter());
        await other.connection.flush();
        await waitFor(`${user}'s subscription to be refused`, () => snoop.errors.length > 0);
        expect(snoop.errors[0]?.message).toMatch(/permissions violation/i);
      } finally {
        await other.close();
      }
    }
    // Nothing was appended or removed by the attempts.
    expect((await harness.messaging.manager.direct.getMessage(invocationStateStream.name, { last_by_subj: subject }))?.subject).toBe(subject);
  });

  it('refuses a runtime a JetStream consumer on the events stream', async () => {
    await expect(acmeRuntime.manager.consumers.add(streams.events.name, { filter_subject: eventFilter({ tenant: 'globex' }) })).rejects.toThrow(/permission/i);
  });

  it('lets the MCP endpoint’s user call as any tenant’s agent on its own inbox prefix, and nothing else', { timeout: 60_000 }, async () => {
    const endpoint = await connectMessaging({ url: urlFor('mcp-endpoint', passwords.MCP_ENDPOINT_PASSWORD), name: 'mcp-endpoint', timeoutMs: 5_000, inboxPrefix: '_INBOX_mcp_endpoint' });
    try {
      for (const scope of [acme, globex]) {
        await expect(effectiveToolsOf(endpoint, scope)).resolves.toEqual(['fixture.count']);
        const call = await harness.send(scope, { toolId: 'fixture.count', arguments: {}, idempotencyKey: `endpoint-${scope.tenant}` }, undefined, endpoint);
        const reply = await call.reply(30_000);
        expect(reply.ok && reply.data.status).toBe('SUCCESS');
      }
      // No events, no other service's traffic, no stream reads, no other service's commands.
      const snoops = [eventFilter({ tenant: 'acme' }), 'tp.v1.evt.>', invocationStateFilter(), '_INBOX.>', `${inboxPrefixOf(acme)}.>`, '>'].map((subject) => ({ subject, ...watch(endpoint, subject) }));
      await endpoint.connection.flush();
      await waitFor('every subscription to be refused', () => snoops.every((snoop) => snoop.errors.length > 0));
      for (const snoop of snoops) expect(snoop.errors[0]?.message).toMatch(/permissions violation/i);
      await expect(endpoint.manager.direct.getMessage(invocationStateStream.name, { last_by_subj: callStreamId(acme, 'endpoint-acme') })).rejects.toThrow(/permission|timeout/i);
      await expect(
        request(endpoint, {
          subject: commandSubject(acme, 'approval', 'approve'),
          requestSchema: EffectiveToolSetRequest,
          replySchema: EffectiveToolSet,
          body: { contextToken: await harness.contextToken(acme) },
          timeoutMs: 5_000,
        }),
      ).rejects.toMatchObject({ code: 'AUTHORIZATION_DENIED' });
    } finally {
      await endpoint.close();
    }
  });

  it('lets the MCP endpoint’s user watch the descriptor, profile, policy and policy-bundle buckets, and neither write them nor read another bucket', { timeout: 60_000 }, async () => {
    const endpoint = await connectMessaging({ url: urlFor('mcp-endpoint', passwords.MCP_ENDPOINT_PASSWORD), name: 'mcp-endpoint', timeoutMs: 5_000, inboxPrefix: '_INBOX_mcp_endpoint' });
    const controller = new AbortController();
    try {
      const seen: KvChange<unknown>[][] = toolSetBuckets.map(() => []);
      await Promise.all(
        toolSetBuckets.map(async (spec, index) => {
          const kv = await openKv(endpoint, spec, z.unknown(), { signal: controller.signal });
          const watch = await kv.watch({ signal: controller.signal });
          void (async () => {
            for await (const change of watch) seen[index]?.push(change);
          })();
        }),
      );
      await waitFor('every watch to deliver its bucket', () => seen.every((changes) => changes.some((change) => change.kind === 'ready')));
      // A profile written by the adapter's user after the watch started reaches it.
      const scope = await harness.freshScope('acme');
      await waitFor('the new profile to reach the endpoint’s watch', () => seen[1]?.some((change) => change.kind === 'put' && change.key.startsWith(`${scope.tenant}.${scope.workspace}.`)));

      const profiles = await openKv(endpoint, toolSetBuckets[1], z.unknown());
      await expect(profiles.put(`${scope.tenant}.${scope.workspace}.intruder`, { forged: true })).rejects.toThrow(/permission|timeout|denied/i);
      await expect(profiles.delete(`${scope.tenant}.${scope.workspace}.intruder`)).rejects.toThrow(/permission|timeout|denied/i);
      // Another service's bucket stays closed to it (not even its stream info).
      await expect(openKv(endpoint, { name: 'TOOL_ADAPTER_RATE_COUNTERS' }, z.unknown())).rejects.toThrow(/permission|timeout|denied/i);
      await expect(endpoint.manager.streams.info(invocationStateStream.name)).rejects.toThrow(/permission|timeout/i);
    } finally {
      controller.abort();
      await endpoint.close();
    }
  });

  it('lets the console’s user follow the events and send the operator queries and decisions, and nothing else', { timeout: 60_000 }, async () => {
    const consoleUser = await connectMessaging({ url: urlFor('console', passwords.CONSOLE_PASSWORD), name: 'console', timeoutMs: 5_000, inboxPrefix: '_INBOX_console' });
    try {
      // The live approvals page: an ordered consumer of a workspace's events, created and read on its inbox prefix.
      const consumer = await consoleUser.jetstream.consumers.get(streams.events.name, { filter_subjects: [eventFilter(acme)], deliver_policy: 'new' });
      const messages = await consumer.consume();
      const seen: string[] = [];
      void (async () => {
        for await (const message of messages) seen.push(message.subject);
      })();
      await waitFor('the ordered consumer to exist', async () => (await consumer.info(true).catch(() => undefined)) !== undefined);
      const call = await harness.send(acme, { toolId: 'fixture.count', arguments: {}, idempotencyKey: 'console-events' }, undefined, acmeRuntime);
      expect((await call.reply(30_000)).ok).toBe(true);
      await waitFor('acme’s ToolCallCompleted to reach the console', () => seen.some((subject) => subject.endsWith('.ToolCallCompleted')));
      await messages.close();

      // An operator query reaches the adapter and its answer the console's inbox: refused for want of a token, not by NATS.
      await expect(
        request(consoleUser, { subject: commandSubject(acme, 'adapter', adapterOperations.inspectInvocation), requestSchema: z.unknown(), replySchema: z.unknown(), body: { toolCallId: 'x' }, timeoutMs: 5_000 }),
      ).rejects.toMatchObject({ code: 'AUTHENTICATION_FAILED' });
      // Not the tool adapter's own approval operation, no invocation requests, no other adapter command, no raw reads.
      for (const subject of [commandSubject(acme, 'approval', 'consume'), commandSubject(acme, 'adapter', adapterOperations.putTenantPolicy), commandSubject(acme, 'registry', 'bindTool')]) {
        await expect(request(consoleUser, { subject, requestSchema: z.unknown(), replySchema: z.unknown(), body: {}, timeoutMs: 5_000 })).rejects.toMatchObject({ code: 'AUTHORIZATION_DENIED' });
      }
      await expect(publish(consoleUser, { subject: invocationRequestSubject(acme), schema: z.unknown(), message: {}, msgId: randomUUID(), timeoutMs: 5_000 })).rejects.toMatchObject({ code: 'AUTHORIZATION_DENIED' });
      await expect(consoleUser.manager.streams.info(invocationStateStream.name)).rejects.toThrow(/permission|timeout/i);
      const snoops = ['tp.v1.evt.>', '_INBOX.>', `${inboxPrefixOf(acme)}.>`].map((subject) => ({ subject, ...watch(consoleUser, subject) }));
      await consoleUser.connection.flush();
      await waitFor('every subscription to be refused', () => snoops.every((snoop) => snoop.errors.length > 0));
    } finally {
      await consoleUser.close();
    }
  });
});

/** The buckets the MCP endpoint watches to learn whose tool sets may have changed (only their keys matter to it). */
const toolSetBuckets = [descriptorBucket, { name: 'TOOL_ADAPTER_AGENT_PROFILES' }, { name: 'TOOL_ADAPTER_TENANT_POLICIES' }, { name: 'TOOL_ADAPTER_POLICY_BUNDLES' }] as const;

/** The ids of the tools `scope`'s agent may see, asked over `runtime` (request/reply on its inbox prefix). */
async function effectiveToolsOf(runtime: Messaging, scope: Scope): Promise<string[]> {
  const set = await request(runtime, {
    subject: commandSubject(scope, 'adapter', adapterOperations.effectiveTools),
    requestSchema: EffectiveToolSetRequest,
    replySchema: EffectiveToolSet,
    body: { contextToken: await harness.contextToken(scope) },
    timeoutMs: 10_000,
  });
  return set.tools.map((tool) => tool.toolId);
}

/** `toolplane --json …` as the agent of `scope`, connected with `url`, with the defaults of everything else. */
async function toolplane(url: string, scope: Scope, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readStdin: () => Promise.resolve(''), env: { TOOLPLANE_AGENT_TOKEN: await harness.contextToken(scope) } };
  const code = await runCli(['--nats', url, '--tenant', scope.tenant, '--workspace', scope.workspace, '--json', '--timeout', '15000', ...argv], io);
  return { code, out, err };
}
