// Two of every service give the same results as one. The same script of calls runs against a platform with one
// process per service and against one with two (registry, secret broker, approval, audit projector and tool adapter
// each twice, sharing the streams, consumers and database as replicas do in production): concurrent reads,
// concurrent copies of one non-idempotent write, a conflicting repeat, a rate limit raced by concurrent calls, a
// gated call approved by an operator, then the projections and the audit chain. What each run observed is reduced to
// the same summary, which must be the expected one for both.
import { afterAll, describe, expect, it } from 'vitest';
import { approvalCommandSchemas, auditCommandSchemas, type ApprovalRequested, type InvocationReply, type TenantPolicyInput } from '@toolplane/contracts';
import { FixtureServer, fixtureServerPath } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { agent, e2eTenantPolicy, registerServer, startPlatform, waitFor, waitForTools, type Platform } from './platform-harness.js';

const infra = testScope('replicated');
const started: Platform[] = [];

afterAll(async () => {
  await Promise.all(started.map((platform) => platform.stop()));
});

const reads = 12;
const writeCopies = 4;
const limitedCalls = 5;
const rateLimit = 3;

// WRITE runs without approval here; DESTRUCTIVE is gated.
const policy: TenantPolicyInput = e2eTenantPolicy({
  gateWrites: false,
  rateLimits: [{ tools: 'limited.*', per: 'TOOL', limit: rateLimit, windowMs: 86_400_000 }],
});

/** What one run of the script observed, in a form two runs can be compared in. */
interface Observed {
  readonly readStatuses: string[];
  readonly readExecutions: number;
  readonly writeReplies: { readonly status: string; readonly sameInvocation: boolean };
  readonly writeExecutions: number;
  readonly conflict: string;
  readonly limited: { readonly SUCCESS: number; readonly RATE_LIMITED: number; readonly executions: number };
  readonly gated: { readonly status: string; readonly approval: string; readonly executions: number };
  readonly projectedCalls: Record<string, number>;
  readonly chain: { readonly ok: boolean; readonly entriesAtLeast: boolean };
  readonly servers: number;
}

const expected: Observed = {
  readStatuses: Array.from({ length: reads }, () => 'SUCCESS'),
  readExecutions: reads,
  writeReplies: { status: 'SUCCESS', sameInvocation: true },
  writeExecutions: 1,
  conflict: 'CONFLICT',
  limited: { SUCCESS: rateLimit, RATE_LIMITED: limitedCalls - rateLimit, executions: rateLimit },
  gated: { status: 'SUCCESS', approval: 'Consumed', executions: 1 },
  projectedCalls: { 'reads.count_calls Observed': reads, 'writes.count_calls Observed': 1, 'limited.count_calls Observed': rateLimit, 'limited.count_calls Denied': limitedCalls - rateLimit, 'gated.count_calls Observed': 1 },
  chain: { ok: true, entriesAtLeast: true },
  servers: 4,
};

function data(reply: InvocationReply) {
  if (!reply.ok) throw new Error(`the call was refused: ${reply.error.code}: ${reply.error.message}`);
  return reply.data;
}

async function provision(platform: Platform): Promise<void> {
  const node = process.execPath;
  const counting = (name: string, flags: readonly string[]) =>
    registerServer(platform, name, [node, fixtureServerPath(FixtureServer.countingEcho)], { COUNT_FILE: platform.countFile(name) }, [{ tool: 'count_calls', flags }]);
  await counting('reads', ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural']);
  await counting('writes', ['--effect', 'write', '--risk', 'medium', '--idempotency', 'none']);
  await counting('limited', ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural']);
  await counting('gated', ['--effect', 'destructive', '--risk', 'high', '--idempotency', 'none']);
  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: ['reads.*', 'writes.*', 'limited.*', 'gated.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
  await platform.putTenantPolicy(policy);
  await waitForTools(platform, ['reads.count_calls', 'writes.count_calls', 'limited.count_calls', 'gated.count_calls']);
}

/** The script: the same calls, in the same order, whatever the number of replicas. */
async function runScript(platform: Platform): Promise<Observed> {
  const readReplies = await Promise.all(Array.from({ length: reads }, (_, i) => platform.invoke({ toolId: 'reads.count_calls', arguments: { i }, idempotencyKey: `read-${i}` })));

  // Copies of one request with their own message ids (JetStream's duplicate window does not hide them) and inboxes:
  // replicas race for the key, one executes, every copy gets the one outcome.
  const writes = await Promise.all(
    Array.from({ length: writeCopies }, (_, copy) => platform.invoke({ toolId: 'writes.count_calls', arguments: { n: 1 }, idempotencyKey: 'write-once' }, { msgId: `write-once-${copy}` })),
  );
  const writeResults = writes.map(data);
  const conflict = await platform.invoke({ toolId: 'writes.count_calls', arguments: { n: 2 }, idempotencyKey: 'write-once' });

  const limited = (await Promise.all(Array.from({ length: limitedCalls }, (_, i) => platform.invoke({ toolId: 'limited.count_calls', arguments: { i }, idempotencyKey: `limited-${i}` })))).map(data);

  const recorder = await platform.recordEvents();
  const gatedReply = platform.invoke({ toolId: 'gated.count_calls', arguments: {}, idempotencyKey: 'gated-1' }, { timeoutMs: 90_000 });
  const requested = await waitFor('ApprovalRequested', () => recorder.events.find((event): event is ApprovalRequested => event.type === 'ApprovalRequested'));
  recorder.stop();
  const { approvalId } = requested.data;
  await waitFor('the approval to be pending', async () => (await platform.command('approval', 'show', approvalCommandSchemas.show, { approvalId }).catch(() => undefined))?.approval.state === 'Pending');
  const approved = await platform.toolplane('approvals', 'approve', approvalId, '--reason', 'replicated run');
  if (approved.code !== 0) throw new Error(`approve exited ${approved.code}: ${approved.err}`);
  const gated = data(await gatedReply);
  const approval = await waitFor('the approval to be consumed', async () => {
    const shown = await platform.command('approval', 'show', approvalCommandSchemas.show, { approvalId });
    return shown.approval.state === 'Consumed' ? shown.approval.state : undefined;
  });

  // Every call once in the projection, in its final state (projections catch up; nothing waits for them).
  const totalCalls = reads + 1 + limitedCalls + 1;
  const projected = await waitFor(
    'every call in the projection, settled',
    async () => {
      const listed = await platform.command('audit', 'listCalls', auditCommandSchemas.listCalls, { limit: 200 });
      const settled = listed.items.filter((call) => ['Observed', 'Denied', 'Failed', 'Uncertain', 'Cancelled'].includes(call.state));
      return listed.items.length === totalCalls && settled.length === totalCalls ? listed.items : undefined;
    },
    60_000,
  );
  const projectedCalls: Record<string, number> = {};
  for (const call of projected) projectedCalls[`${call.toolId} ${call.state}`] = (projectedCalls[`${call.toolId} ${call.state}`] ?? 0) + 1;
  const chain = await platform.command('audit', 'verifyChain', auditCommandSchemas.verifyChain, {});
  const servers = await platform.toolplaneJson<{ items: unknown[] }>('servers', 'list');

  const firstWrite = writeResults[0];
  return {
    readStatuses: readReplies.map((reply) => data(reply).status),
    readExecutions: await platform.executions('reads', 'count_calls'),
    writeReplies: { status: firstWrite?.status ?? 'none', sameInvocation: writeResults.every((result) => result.receipt.invocationId === firstWrite?.receipt.invocationId && result.status === firstWrite.status) },
    writeExecutions: await platform.executions('writes', 'count_calls'),
    conflict: conflict.ok ? 'accepted' : conflict.error.code,
    limited: {
      SUCCESS: limited.filter((result) => result.status === 'SUCCESS').length,
      RATE_LIMITED: limited.filter((result) => result.receipt.failure?.code === 'RATE_LIMITED').length,
      executions: await platform.executions('limited', 'count_calls'),
    },
    gated: { status: gated.status, approval, executions: await platform.executions('gated', 'count_calls') },
    projectedCalls,
    // Received, started and terminal facts of every call are chained, so there are at least three entries per call.
    chain: { ok: chain.ok, entriesAtLeast: chain.entries >= totalCalls * 3 },
    servers: servers.items.length,
  };
}

const observed = new Map<number, Observed>();

describe.each([1, 2])('a platform with %i process(es) of every service', (replicas) => {
  it('runs the script with the expected results', { timeout: 600_000 }, async () => {
    // A database of each run's own, so the second run's read models start as empty as the first's.
    const platform = await startPlatform({ ...infra, dbName: `${infra.dbName}_${replicas}` }, `replicas${replicas}`, { replicas });
    started.push(platform);
    try {
      await provision(platform);
      const result = await runScript(platform);
      observed.set(replicas, result);
      expect(result).toEqual(expected);
    } catch (error) {
      throw new Error(`${String(error)}\n${(['tool-adapter', 'approval'] as const).map((name) => platform.logs(name, 20)).join('\n')}`, { cause: error });
    } finally {
      await platform.stop();
      started.splice(started.indexOf(platform), 1);
    }
  });
});

describe('replicas', () => {
  it('give the same results as one process of every service', () => {
    expect(observed.size).toBe(2);
    expect(observed.get(2)).toEqual(observed.get(1));
  });
});
