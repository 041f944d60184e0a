// The audit trail of governed calls, end to end: the audit projector folds the tool adapter's events into one
// RuntimeToolCall per logical call (queried as `calls show` does, with an operator token), and a call interrupted by
// a SIGKILLed adapter and retried after the restart stays one record with two attempts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditCommandSchemas, verifyReceipt, type InvocationReply, type InvocationResult, type RuntimeToolCallView, type ToolCallStarted } from '@toolplane/contracts';
import { realServerPath } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { agent, registerServer, startPlatform, waitFor, waitForTools, type Platform } from './platform-harness.js';

const infra = testScope('governed_audit');
let platform: Platform;
const slowTool = 'everything.trigger-long-running-operation';

beforeAll(async () => {
  platform = await startPlatform(infra, 'audit');
  const read = ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural'];
  await registerServer(platform, 'everything', [process.execPath, realServerPath('everything'), 'stdio'], {}, [
    { tool: 'echo', flags: read },
    // The deadline (and so the interrupted attempt's processing lease, deadline + 5 s) ends before the request's
    // 30 s ack wait: the redelivery after a crash finds the first attempt abandoned and starts the second.
    { tool: 'trigger-long-running-operation', flags: [...read, '--timeout-ms', '15000'] },
  ]);
  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: ['everything.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
  await waitForTools(platform, ['everything.echo', slowTool]);
}, 300_000);

afterAll(async () => {
  await platform?.stop();
});

function data(reply: InvocationReply) {
  if (!reply.ok) throw new Error(`the call was refused: ${reply.error.code}: ${reply.error.message}`);
  return reply.data;
}

/** `calls show` until the record satisfies `done`. */
async function callRecord(toolCallId: string, done: (call: RuntimeToolCallView) => boolean): Promise<RuntimeToolCallView> {
  return waitFor(`the RuntimeToolCall ${toolCallId}`, async () => {
    const shown = await platform.command('audit', 'getCall', auditCommandSchemas.getCall, { toolCallId }).catch(() => undefined);
    return shown !== undefined && done(shown.call) ? shown.call : undefined;
  });
}

/**
 * Calls the slow READ tool, SIGKILLs the adapter once the call has started (its started fact stored, the provider
 * call under way), starts the adapter again and awaits the reply to the redelivered request.
 */
async function crashDuringSlowCall(idempotencyKey: string): Promise<{ started: ToolCallStarted; result: InvocationResult }> {
  const recorder = await platform.recordEvents();
  const pending = platform.invoke({ toolId: slowTool, arguments: { duration: 3, steps: 3 }, idempotencyKey }, { timeoutMs: 150_000 });
  // Awaited below; kept from being reported as unhandled while the adapter is down.
  pending.catch(() => undefined);
  const started = await waitFor('ToolCallStarted of the first attempt', () =>
    recorder.events.find((event): event is ToolCallStarted => event.type === 'ToolCallStarted' && event.metadata.toolId === slowTool),
  );
  recorder.stop();
  const first = await callRecord(started.metadata.toolCallId, (found) => found.state === 'Executing');
  expect(first.attemptCount).toBe(1);
  await platform.kill('tool-adapter');
  await platform.restart('tool-adapter');
  return { started, result: data(await pending) };
}

describe('the audit trail of a governed call', () => {
  it('shows a real call in calls show (state, one attempt, duration) and in its FlowRun’s journal', { timeout: 60_000 }, async () => {
    const result = data(await platform.invoke({ toolId: 'everything.echo', arguments: { message: 'for the record' }, idempotencyKey: 'audited-1', flowRunId: 'flow-e2e-1' }));
    expect(result.status).toBe('SUCCESS');
    const { receipt } = result;
    const call = await callRecord(receipt.toolCallId, (found) => found.state === 'Observed');
    expect(call).toMatchObject({
      ...platform.scope,
      toolCallId: receipt.toolCallId,
      invocationId: receipt.invocationId,
      attemptCount: 1,
      toolId: 'everything.echo',
      toolVersion: '1',
      principal: agent.principal,
      agentId: agent.agentId,
      agentRevision: agent.agentRevision,
      flowRunId: 'flow-e2e-1',
      policyDecisionId: receipt.policyDecisionId,
    });
    expect(call.durationMs).toEqual(expect.any(Number));
    expect(call.durationMs).toBeGreaterThanOrEqual(0);
    expect(call.startedAt).toBeDefined();
    expect(call.attempts).toHaveLength(1);

    const journal = await waitFor('the FlowRun journal', async () => {
      const page = await platform.command('audit', 'flowJournal', auditCommandSchemas.flowJournal, { flowRunId: 'flow-e2e-1' });
      const entries = page.entries.filter((entry) => entry.toolCallId === receipt.toolCallId);
      return entries.some((entry) => entry.type === 'ToolCallCompleted') ? entries : undefined;
    });
    expect(journal.map((entry) => [entry.type, entry.attempt, entry.invocationId])).toEqual([
      ['ToolCallStarted', 1, receipt.invocationId],
      ['ToolCallCompleted', 1, receipt.invocationId],
    ]);
  });

  it('keeps one record with attempt count 2 for a READ call retried after the adapter was SIGKILLed mid-execution', { timeout: 180_000 }, async () => {
    const { started, result } = await crashDuringSlowCall('crash-read-1');
    // Attempt 2 is a new physical attempt of the same logical call, with its own signed receipt.
    expect(result.receipt).toMatchObject({ toolCallId: started.metadata.toolCallId, attempt: 2 });
    expect(result.receipt.invocationId).not.toBe(started.metadata.invocationId);
    expect(verifyReceipt(result.receipt, platform.receiptKeys)).toMatchObject({ valid: true });

    const call = await callRecord(started.metadata.toolCallId, (found) => found.attemptCount === 2 && found.state === result.receipt.state);
    expect(call.invocationId).toBe(result.receipt.invocationId);
    expect(call.attempts.map((attempt) => [attempt.attempt, attempt.invocationId])).toEqual([
      [1, started.metadata.invocationId],
      [2, result.receipt.invocationId],
    ]);
    // The interrupted attempt is closed as failed (retryable), never left executing.
    expect(call.attempts[0]).toMatchObject({ state: 'Failed', failure: { code: 'TEMPORARY_UNAVAILABLE' } });
    // One document for the logical call, not one per attempt.
    const listed = await platform.command('audit', 'listCalls', auditCommandSchemas.listCalls, { toolId: slowTool });
    expect(listed.items.filter((item) => item.toolCallId === started.metadata.toolCallId).map((item) => item.attemptCount)).toEqual([2]);
  });

  // Known adapter bug (services/tool-adapter): attempt 2 inherits attempt 1's deadline (core/invocation-attempts.ts,
  // startNextAttempt), but a redelivery may only start it once the interrupted attempt's processing lease has lapsed,
  // and that lease lasts until the deadline + 5 s while Executing (adapters/invocation-store.ts, #leaseFrom). So the
  // new attempt always finds its deadline passed and ends Denied (TIMEOUT, "the deadline passed before the call could
  // start") instead of running. `it.fails` turns red once attempt 2 runs: then make this a plain `it`.
  it.fails('runs attempt 2 of the interrupted READ call to Observed, and the record says so', { timeout: 180_000 }, async () => {
    const { started, result } = await crashDuringSlowCall('crash-read-2');
    expect(result.receipt.state).toBe('Observed');
    expect(result.status).toBe('SUCCESS');
    const call = await callRecord(started.metadata.toolCallId, (found) => found.attemptCount === 2 && found.state === 'Observed');
    expect(call.attempts[1]?.state).toBe('Observed');
  });
});
