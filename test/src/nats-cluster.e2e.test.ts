// The pipeline on a three-node JetStream cluster (infra/local/cluster.sh) with every stream, bucket and durable
// consumer replicated three times (NATS_STREAM_REPLICAS=3), losing a node under load: the node that leads
// TOOLPLANE_EVENTS is SIGKILLed while calls to a WRITE tool are in flight. Nothing the cluster acknowledged may be
// lost: every call whose request was acknowledged ends (a reply, or a lookup that finds it terminal), the WRITE ran
// at most once per call, every completed call's ToolCallCompleted is in the events stream, and the services,
// reconnected to the surviving nodes, go on answering.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InvocationReply,
  InvocationRequest,
  LifecycleEvent,
  eventFilter,
  invocationReplySubject,
  invocationRequestMsgId,
  invocationRequestSubject,
  isTerminalInvocationState,
  streams,
  type InvocationResult,
  type TenantPolicyInput,
} from '@toolplane/contracts';
import { FixtureServer, fixtureServerPath } from '@toolplane/mcp/testing';
import { connectMessaging, ensureStream, openKv, publish } from '@toolplane/messaging';
import { testScope } from '@toolplane/testing';
import { agent, e2eTenantPolicy, pipelineServices, registerServer, startPlatform, waitFor, waitForTools, type Platform } from './platform-harness.js';

const run = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, '../..');
const clusterScript = path.join(repoRoot, 'infra/local/cluster.sh');
const infra = testScope('cluster');

// WRITE runs without approval here: the load is a WRITE tool's calls.
const policy: TenantPolicyInput = e2eTenantPolicy({ gateWrites: false });

interface ClusterNode {
  readonly name: string;
  readonly pid: number;
  readonly monitorUrl: string;
}

let dir: string;
let natsUrl: string;
let nodes: ClusterNode[];
let platform: Platform;

async function cluster(command: 'start' | 'stop'): Promise<string> {
  const { stdout } = await run('bash', [clusterScript, command, dir], { cwd: repoRoot, timeout: 60_000 });
  return stdout;
}

/** The node that leads `stream`'s replica group, as the cluster's monitoring reports it. */
async function streamLeader(stream: string, among: readonly ClusterNode[]): Promise<string> {
  return waitFor(`a leader of ${stream}`, async () => {
    for (const node of among) {
      try {
        const jsz = (await (await fetch(`${node.monitorUrl}/jsz?streams=true`)).json()) as {
          account_details?: { stream_detail?: { name: string; cluster?: { leader?: string } }[] }[];
        };
        const leader = jsz.account_details?.flatMap((account) => account.stream_detail ?? []).find((detail) => detail.name === stream)?.cluster?.leader;
        if (leader !== undefined && leader !== '') return leader;
      } catch {
        // a node that is down or not answering yet: ask the next one
      }
    }
    return undefined;
  });
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'nats-cluster-'));
  const printed = await cluster('start');
  natsUrl = /^NATS_URL=(.+)$/m.exec(printed)?.[1] ?? '';
  expect(natsUrl.split(',')).toHaveLength(3);
  const monitorUrls = (/^NATS_MONITOR_URLS=(.+)$/m.exec(printed)?.[1] ?? '').split(',');
  const lines = (await readFile(path.join(dir, 'nodes'), 'utf8')).trim().split('\n');
  nodes = lines.map((line, i) => {
    const [name = '', pid = ''] = line.split(' ');
    return { name, pid: Number(pid), monitorUrl: monitorUrls[i] ?? '' };
  });

  platform = await startPlatform(infra, 'cluster', { natsUrl, env: { NATS_STREAM_REPLICAS: '3' } });
  await registerServer(platform, 'writer', [process.execPath, fixtureServerPath(FixtureServer.countingEcho)], { COUNT_FILE: platform.countFile('writer') }, [
    { tool: 'count_calls', flags: ['--effect', 'write', '--risk', 'medium', '--idempotency', 'none'] },
  ]);
  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: ['writer.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
  await platform.putTenantPolicy(policy);
  await waitForTools(platform, ['writer.count_calls']);
}, 240_000);

afterAll(async () => {
  await platform?.stop();
  if (dir !== undefined) {
    await cluster('stop').catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
});

/** How one call of the load went. */
interface CallOutcome {
  readonly key: string;
  /** Whether JetStream acknowledged the request (after retries of the same message id, if the first publish failed). */
  readonly acknowledged: boolean;
  /** The terminal result, from the reply or else from a lookup. */
  readonly result?: InvocationResult;
  readonly via?: 'reply' | 'lookup';
  readonly startedAt: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One call as a careful runtime makes it: publish with the request's message id, again with the same id until
 * JetStream acknowledges it (a node's loss can time a publish out), wait for the reply, and when the reply does not
 * come (it is core NATS, lost if the connection that carried it went down) look the call up by its key.
 */
async function call(key: string): Promise<CallOutcome> {
  const startedAt = Date.now();
  const { messaging, scope } = platform;
  const replyInbox = `inbox_${randomUUID().replaceAll('-', '')}`;
  const message = InvocationRequest.parse({ correlationId: 'cluster-load', toolId: 'writer.count_calls', arguments: {}, idempotencyKey: key, contextToken: await platform.agentToken(), replyInbox });
  const subscription = messaging.connection.subscribe(invocationReplySubject(scope, replyInbox), { max: 1, timeout: 20_000 });
  const reply = (async () => {
    try {
      for await (const received of subscription) return InvocationReply.parse(JSON.parse(received.string()));
    } catch {
      // no reply in time: the lookup below decides
    }
    return undefined;
  })();
  let acknowledged = false;
  for (const deadline = Date.now() + 30_000; !acknowledged && Date.now() < deadline; ) {
    try {
      await messaging.connection.flush();
      await publish(messaging, { subject: invocationRequestSubject(scope), schema: InvocationRequest, message, msgId: invocationRequestMsgId(scope, message) });
      acknowledged = true;
    } catch {
      await sleep(250);
    }
  }
  if (!acknowledged) {
    subscription.unsubscribe();
    return { key, acknowledged, startedAt };
  }
  const replied = await reply;
  if (replied?.ok === true) return { key, acknowledged, result: replied.data, via: 'reply', startedAt };
  const looked = await waitFor(
    `call ${key} to end`,
    async () => {
      try {
        const found = await platform.lookup(key);
        return isTerminalInvocationState(found.state) && found.result !== undefined ? found.result : undefined;
      } catch {
        return undefined;
      }
    },
    60_000,
  ).catch(() => undefined);
  return { key, acknowledged, ...(looked === undefined ? {} : { result: looked, via: 'lookup' as const }), startedAt };
}

/** Whether a node answers its monitoring's /healthz with 200: JetStream up and current with a meta leader. */
async function healthy(node: ClusterNode): Promise<boolean> {
  try {
    return (await fetch(`${node.monitorUrl}/healthz`)).status === 200;
  } catch {
    return false;
  }
}

/** Every lifecycle event of the platform's scope in TOOLPLANE_EVENTS, read from its first sequence. */
async function storedEvents(): Promise<LifecycleEvent[]> {
  const consumer = await platform.messaging.jetstream.consumers.get(streams.events.name, { filter_subjects: [eventFilter(platform.scope)] });
  const events: LifecycleEvent[] = [];
  const messages = await consumer.consume();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void messages.close();
  }, 15_000);
  let complete = false;
  try {
    for await (const received of messages) {
      events.push(LifecycleEvent.parse(received.json()));
      if (received.info.pending === 0) {
        complete = true;
        break;
      }
    }
  } finally {
    clearTimeout(timer);
    await messages.close();
  }
  // A read cut short is no answer: the caller asks again rather than count a partial read as lost events.
  if (!complete) throw new Error(`reading ${streams.events.name} ${timedOut ? 'timed out' : 'ended early'} after ${events.length} events`);
  return events;
}

describe('a three-node cluster', () => {
  it('holds every stream and durable consumer on all three nodes, and refuses a declaration with fewer replicas', { timeout: 60_000 }, async () => {
    const { manager } = platform.messaging;
    for (const stream of [streams.invocations.name, streams.events.name, 'KV_TOOL_ADAPTER_TENANT_POLICIES']) {
      const info = await manager.streams.info(stream);
      expect(info.config.num_replicas, stream).toBe(3);
      expect(info.cluster?.replicas ?? [], stream).toHaveLength(2);
    }
    const consumer = await manager.consumers.info(streams.invocations.name, 'tool-adapter');
    expect(consumer.cluster?.replicas ?? []).toHaveLength(2);

    // A service started without NATS_STREAM_REPLICAS=3 would declare the streams with one replica: refused, not applied.
    const single = await connectMessaging({ url: natsUrl, name: 'cluster-e2e-r1' });
    try {
      await expect(ensureStream(single, streams.events)).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('has 3 replicas and is declared with 1') as unknown });
      await expect(openKv(single, { name: 'TOOL_ADAPTER_TENANT_POLICIES' }, LifecycleEvent)).rejects.toMatchObject({ code: 'CONFLICT' });
    } finally {
      await single.close();
    }
    expect((await manager.streams.info(streams.events.name)).config.num_replicas).toBe(3);
  });

  it('scales a stream and a bucket made with one replica up to three when they are declared with three', { timeout: 60_000 }, async () => {
    const name = `SCALE_${randomUUID().slice(0, 8)}`;
    const spec = { name, subjects: [`scale.${name}.>`], retention: 'limits', storage: 'file' } as const;
    const [single, triple] = await Promise.all([
      connectMessaging({ url: natsUrl, name: 'cluster-e2e-r1' }),
      connectMessaging({ url: natsUrl, name: 'cluster-e2e-r3', streamReplicas: 3 }),
    ]);
    try {
      expect(await ensureStream(single, spec)).toEqual({ action: 'created', changed: [] });
      await openKv(single, { name }, LifecycleEvent);
      expect((await triple.manager.streams.info(name)).config.num_replicas).toBe(1);
      expect(await ensureStream(triple, spec)).toEqual({ action: 'updated', changed: ['num_replicas'] });
      await openKv(triple, { name }, LifecycleEvent);
      expect((await triple.manager.streams.info(name)).config.num_replicas).toBe(3);
      expect((await triple.manager.streams.info(`KV_${name}`)).config.num_replicas).toBe(3);
    } finally {
      // The streams stay: the cluster and its data are thrown away after this file.
      await Promise.all([single.close(), triple.close()]);
    }
  });

  it('loses no acknowledged call or event when the node leading TOOLPLANE_EVENTS is killed under load', { timeout: 180_000 }, async () => {
    const total = 200;
    const concurrency = 4;
    const killAfter = 70;
    const label = randomUUID().slice(0, 8);
    const outcomes: CallOutcome[] = [];
    let next = 0;
    let killedAt: number | undefined;
    let victim: ClusterNode | undefined;

    const kill = async () => {
      const leader = await streamLeader(streams.events.name, nodes);
      victim = nodes.find((node) => node.name === leader);
      if (victim === undefined) throw new Error(`the leader ${leader} of ${streams.events.name} is not one of ${nodes.map((node) => node.name).join(', ')}`);
      process.kill(victim.pid, 'SIGKILL');
      killedAt = Date.now();
    };
    const worker = async () => {
      while (next < total) {
        const index = next++;
        if (index === killAfter) await kill();
        outcomes.push(await call(`load-${label}-${index}`));
      }
    };
    await Promise.all(Array.from({ length: concurrency }, () => worker()));
    expect(victim, 'a node was killed').toBeDefined();
    const survivors = nodes.filter((node) => node !== victim);

    // Nothing acknowledged is lost: each acknowledged call ended, by its reply or by a lookup.
    const acknowledged = outcomes.filter((outcome) => outcome.acknowledged);
    expect(acknowledged).toHaveLength(total);
    const unfinished = acknowledged.filter((outcome) => outcome.result === undefined).map((outcome) => outcome.key);
    expect(unfinished, `acknowledged calls that never ended:\n${platform.logs('tool-adapter', 30)}`).toEqual([]);

    // The WRITE ran at most once per call: every successful call ran it once, and only an Uncertain one may have run
    // it unseen. Uncertain is the one other outcome allowed, and only for a call in flight when the node died: its
    // adapter could not get the outcome acknowledged and, the tool not being idempotent, does not run it again.
    const byStatus = (status: InvocationResult['status']) => acknowledged.filter((outcome) => outcome.result?.status === status).length;
    const succeeded = byStatus('SUCCESS');
    const uncertain = byStatus('UNCERTAIN');
    const executions = await platform.executions('writer', 'count_calls');
    const uncertainWhy = acknowledged.filter((o) => o.result?.status === 'UNCERTAIN').map((o) => `${o.key}: ${o.result?.receipt.failure?.message ?? ''}`);
    const summary = `SUCCESS ${succeeded}, UNCERTAIN ${uncertain} [${uncertainWhy.join('; ')}], executions ${executions}, by lookup ${acknowledged.filter((o) => o.via === 'lookup').length}`;
    expect(executions, summary).toBeGreaterThanOrEqual(succeeded);
    expect(executions, summary).toBeLessThanOrEqual(succeeded + uncertain);
    expect(succeeded + uncertain, summary).toBe(total);
    expect(uncertain, summary).toBeLessThanOrEqual(concurrency);

    // Every call's terminal event is in the events stream, once: ToolCallCompleted, or ToolEffectUncertain. Reading it
    // creates a consumer, which takes a meta leader: the killed node may have been it, and the survivors may still be
    // electing one. An event whose publish failed in the failover is published again when its request is redelivered
    // (the request is acked only once its events are stored), so it may arrive after the reply: wait for it.
    await waitFor('the surviving nodes to be healthy', async () => (await Promise.all(survivors.map(healthy))).every(Boolean), 60_000);
    const terminalType = (status: InvocationResult['status'] | undefined) => (status === 'SUCCESS' ? 'ToolCallCompleted' : 'ToolEffectUncertain');
    const terminalCounts = (events: readonly LifecycleEvent[]) => {
      const terminal = new Map<string, number>();
      for (const event of events) {
        if ((event.type !== 'ToolCallCompleted' && event.type !== 'ToolEffectUncertain') || !('invocationId' in event.metadata)) continue;
        const key = `${event.type} ${event.metadata.invocationId}`;
        terminal.set(key, (terminal.get(key) ?? 0) + 1);
      }
      return terminal;
    };
    const terminalOf = (o: CallOutcome) => `${terminalType(o.result?.status)} ${o.result?.receipt.invocationId ?? ''}`;
    let stored: LifecycleEvent[] = [];
    await waitFor(
      'every terminal event in the events stream',
      async () => {
        stored = (await storedEvents().catch(() => undefined)) ?? stored;
        const terminal = terminalCounts(stored);
        return acknowledged.every((o) => o.result === undefined || (terminal.get(terminalOf(o)) ?? 0) >= 1);
      },
      90_000,
    ).catch(() => undefined); // the assertion below says which are missing
    const terminal = terminalCounts(stored);
    const missing = acknowledged.filter((o) => o.result !== undefined && terminal.get(terminalOf(o)) !== 1);
    const eventsOf = (invocationId: string) => stored.filter((event) => 'invocationId' in event.metadata && event.metadata.invocationId === invocationId).map((event) => event.type);
    const why = missing.map((o) => `${o.key} (${o.result?.status} via ${o.via}): ${eventsOf(o.result?.receipt.invocationId ?? '').join(', ')}`).join('\n');
    expect(missing.map((o) => o.key), `calls whose terminal event is not in ${streams.events.name} exactly once:\n${why}\n${platform.logs('tool-adapter', 30)}`).toEqual([]);

    // The calls made after the kill succeeded too, and the services, reconnected, still answer: fresh calls get replies.
    expect(acknowledged.filter((outcome) => killedAt !== undefined && outcome.startedAt > killedAt).length).toBeGreaterThan(total - killAfter - concurrency * 2);
    for (let i = 0; i < 5; i++) {
      const reply = await platform.invoke({ toolId: 'writer.count_calls', arguments: {}, idempotencyKey: `after-${label}-${i}` }, { timeoutMs: 20_000 });
      expect(reply.ok && reply.data.status).toBe('SUCCESS');
    }
    for (const name of pipelineServices) expect(platform.service(name).child.exitCode, `${name} exited`).toBeNull();
    // The events stream got a new leader among the survivors and still has three replicas configured.
    expect(survivors.map((node) => node.name)).toContain(await streamLeader(streams.events.name, survivors));
  });
});
