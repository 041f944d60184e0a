import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliIo } from '@toolplane/cli';
import type { FlowJournalReply, ListCallsReply, ProjectionStatusReply, RuntimeToolCallView, VerifyChainReply } from '@toolplane/contracts';
import type { Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import type { Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { chainEntryId } from '../src/audit-chain.js';
import { auditChain, runtimeToolCallsCollection } from '../src/collections.js';
import { callEvents } from './events.js';
import { connectClient, eventually, openStore, operatorToken, projectorScope, publishEvents, startProjector } from './harness.js';

// The operator CLI, run in-process against a running projector: calls, FlowRun journals, chain verification
// (intact, then with an entry edited and one deleted) and a rebuild, in text and --json.

const scope = projectorScope(testScope('projector_cli'), 'cli');
const tenant = scope.tenant;
let client: Messaging;
let store: Store;
let projector: RunningService;
/** The operator token the CLI sends (TOOLPLANE_TOKEN): the test's workspaces, platform-admin for the rebuild. */
let token: string;

const start = Date.parse('2026-03-01T09:00:00.000Z');
const calls = [
  callEvents({ tenant, workspace: 'dev', toolCallId: 'retried', agentId: 'planner', flowRunId: 'run-7', attempts: [{ outcome: 'Uncertain' }, { outcome: 'Completed', sandbox: true }], startMs: start }),
  callEvents({ tenant, workspace: 'dev', toolCallId: 'failed', agentId: 'planner', flowRunId: 'run-7', toolId: 'slack.post_message', attempts: [{ outcome: 'Failed' }], startMs: start + 600_000 }),
  callEvents({ tenant, workspace: 'dev', toolCallId: 'denied', agentId: 'writer', attempts: [{ outcome: 'Denied' }], startMs: start + 1_200_000 }),
  callEvents({ tenant, workspace: 'dev', toolCallId: 'approved', agentId: 'writer', attempts: [{ outcome: 'Completed', approval: true }], startMs: start + 1_800_000 }),
  callEvents({ tenant, workspace: 'prod', toolCallId: 'elsewhere', attempts: [{ outcome: 'Completed' }], startMs: start }),
];
const events = calls.flat();

beforeAll(async () => {
  token = await operatorToken(tenant, ['dev', 'prod']);
  client = await connectClient(scope, 'client');
  store = await openStore(scope);
  projector = await startProjector(scope);
  await publishEvents(client, [...events].reverse());
  const collection = store.collection(runtimeToolCallsCollection(1));
  await eventually('the calls to be projected', async () => ((await collection.raw.countDocuments({ tenant })) === calls.length ? true : undefined));
  await eventually('the events to be chained', async () => ((await store.collection(auditChain).raw.countDocuments({ tenant })) === events.length ? true : undefined));
}, 120_000);

afterAll(async () => {
  await projector?.stop();
  await client?.drain();
  await store?.db.dropDatabase();
  await store?.close();
});

interface Run {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

async function toolplane(...argv: string[]): Promise<Run> {
  let out = '';
  let err = '';
  const io: CliIo = { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readStdin: () => Promise.resolve(''), env: { TOOLPLANE_TOKEN: token } };
  const code = await runCli(['--nats', scope.natsUrl, '--tenant', tenant, '--timeout', '30000', ...argv], io);
  return { code, out, err };
}

async function json<T>(...argv: string[]): Promise<T> {
  const run = await toolplane('--json', ...argv);
  expect(run.err).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.out) as T;
}

describe('toolplane calls, flows, audit and projector', () => {
  it('shows a call retried after an uncertain attempt: one record, two attempts, the latest state and duration', async () => {
    const call = await json<RuntimeToolCallView>('--workspace', 'dev', 'calls', 'show', 'retried');
    const completed = events.find((event) => event.metadata.toolCallId === 'retried' && event.type === 'ToolCallCompleted');
    expect(call).toMatchObject({ toolCallId: 'retried', state: 'Observed', attemptCount: 2, invocationId: completed?.metadata.invocationId, flowRunId: 'run-7', agentId: 'planner' });
    expect(call.durationMs).toBe(completed?.type === 'ToolCallCompleted' ? completed.data.durationMs : -1);
    expect(call.attempts.map((attempt) => [attempt.attempt, attempt.state])).toEqual([
      [1, 'Uncertain'],
      [2, 'Observed'],
    ]);
    const text = await toolplane('--workspace', 'dev', 'calls', 'show', 'retried');
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/state:\s+Observed/);
    expect(text.out).toMatch(/attempts:\s+2/);
    const missing = await toolplane('--workspace', 'dev', 'calls', 'show', 'no-such-call');
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/^NOT_FOUND: no tool call no-such-call/);
    // Another workspace's call is not visible from this one.
    expect((await toolplane('--workspace', 'dev', 'calls', 'show', 'elsewhere')).err).toMatch(/^NOT_FOUND/);
  });

  it('lists calls by run, agent, tool, state and time, page by page', async () => {
    const ids = async (...filters: string[]) => (await json<ListCallsReply>('--workspace', 'dev', 'calls', 'list', ...filters)).items.map((item) => item.toolCallId);
    expect(await ids()).toEqual(['approved', 'denied', 'failed', 'retried']);
    expect(await ids('--run', 'run-7')).toEqual(['failed', 'retried']);
    expect(await ids('--agent', 'writer')).toEqual(['approved', 'denied']);
    expect(await ids('--tool', 'slack.post_message')).toEqual(['failed']);
    expect(await ids('--state', 'denied')).toEqual(['denied']);
    expect(await ids('--since', new Date(start + 1_500_000).toISOString())).toEqual(['approved']);
    // By idempotency key (InvocationReceived carries it; the call's record keeps it).
    expect(await ids('--key', 'key-failed')).toEqual(['failed']);
    expect(await ids('--key', 'key-retried', '--state', 'observed')).toEqual(['retried']);
    expect(await ids('--key', 'no-such-key')).toEqual([]);
    expect((await json<ListCallsReply>('--workspace', 'dev', 'calls', 'list', '--key', 'key-approved')).items[0]?.idempotencyKey).toBe('key-approved');
    const first = await json<ListCallsReply>('--workspace', 'dev', 'calls', 'list', '--limit', '3');
    expect(first.items).toHaveLength(3);
    expect(first.next).not.toBeNull();
    const second = await json<ListCallsReply>('--workspace', 'dev', 'calls', 'list', '--limit', '3', '--cursor', first.next as string);
    expect([...first.items, ...second.items].map((item) => item.toolCallId)).toEqual(['approved', 'denied', 'failed', 'retried']);
    expect(second.next).toBeNull();
    const text = await toolplane('--workspace', 'dev', 'calls', 'list', '--limit', '3');
    expect(text.out).toMatch(/^TOOL CALL\s+STATE/);
    expect(text.out).toContain(`more: --cursor ${first.next as string}`);
  });

  it("prints a FlowRun's journal in event order, each start and end once", async () => {
    const journal = await json<FlowJournalReply>('--workspace', 'dev', 'flows', 'journal', 'run-7');
    expect(journal.entries.map((entry) => [entry.toolCallId, entry.attempt, entry.type, entry.eventType])).toEqual([
      ['retried', 1, 'ToolCallStarted', 'ToolCallStarted'],
      ['retried', 1, 'ToolCallFailed', 'ToolEffectUncertain'],
      ['retried', 2, 'ToolCallStarted', 'ToolCallStarted'],
      ['retried', 2, 'ToolCallCompleted', 'ToolCallCompleted'],
      ['failed', 1, 'ToolCallStarted', 'ToolCallStarted'],
      ['failed', 1, 'ToolCallFailed', 'ToolCallFailed'],
    ]);
    const text = await toolplane('--workspace', 'dev', 'flows', 'journal', 'run-7');
    expect(text.out.split('\n')[0]).toMatch(/^AT\s+ENTRY\s+TOOL CALL/);
  });

  it('verifies the audit chain, and names exactly the entry that was edited or deleted', async () => {
    const intact = await json<VerifyChainReply>('audit', 'verify');
    expect(intact).toMatchObject({ tenant, ok: true, entries: events.length, verifiedThrough: events.length });
    expect((await toolplane('audit', 'verify')).out).toMatch(/verdict:\s+intact/);

    const entries = store.collection(auditChain);
    const fifth = await entries.raw.findOne({ _id: chainEntryId(tenant, 5) });
    if (!fifth) throw new Error('no fifth entry');
    await entries.raw.updateOne({ _id: fifth._id }, { $set: { eventType: 'ToolCallCompleted', eventHash: 'f'.repeat(64) } });
    const edited = await toolplane('audit', 'verify');
    expect(edited.code).toBe(1);
    expect(edited.out).toMatch(/break at:\s+5\n/);
    expect(edited.out).toMatch(/break:\s+EntryEdited/);
    expect(edited.out).toContain(`entry:            ${fifth._id}`);
    expect(edited.err).toMatch(/^CONFLICT: the audit chain of .* is broken at entry 5 \(EntryEdited\)/);
    await entries.raw.replaceOne({ _id: fifth._id }, fifth);
    expect((await json<VerifyChainReply>('audit', 'verify')).ok).toBe(true);

    const eighth = await entries.raw.findOne({ _id: chainEntryId(tenant, 8) });
    if (!eighth) throw new Error('no eighth entry');
    await entries.raw.deleteOne({ _id: eighth._id });
    const deleted = await json<VerifyChainReply>('audit', 'verify');
    expect(deleted).toMatchObject({ ok: false, verifiedThrough: 7, firstBreak: { position: 8, kind: 'EntryMissing', entryId: eighth._id } });
    await entries.raw.insertOne(eighth);

    const last = await entries.raw.findOne({ _id: chainEntryId(tenant, events.length) });
    if (!last) throw new Error('no last entry');
    await entries.raw.deleteOne({ _id: last._id });
    expect((await json<VerifyChainReply>('audit', 'verify')).firstBreak).toMatchObject({ position: events.length, kind: 'EntryMissing' });
    await entries.raw.insertOne(last);
    expect((await json<VerifyChainReply>('--workspace', 'dev', 'audit', 'verify')).ok).toBe(true);
  });

  it('rebuilds the projections and waits for the switch; the calls read the same afterwards', async () => {
    const before = await json<RuntimeToolCallView>('--workspace', 'dev', 'calls', 'show', 'retried');
    const status = await json<ProjectionStatusReply>('--workspace', 'dev', 'projector', 'rebuild', '--wait');
    expect(status).toMatchObject({ live: 2, previous: 1, rebuild: { generation: 2, state: 'Completed' } });
    expect(await json<ProjectionStatusReply>('--workspace', 'dev', 'projector', 'status')).toEqual(status);
    expect(await json<RuntimeToolCallView>('--workspace', 'dev', 'calls', 'show', 'retried')).toEqual(before);
    expect((await json<ListCallsReply>('--workspace', 'dev', 'calls', 'list')).items).toHaveLength(4);
    expect((await toolplane('--workspace', 'dev', 'projector', 'status')).out).toMatch(/live generation:\s+2/);
  }, 120_000);
});
