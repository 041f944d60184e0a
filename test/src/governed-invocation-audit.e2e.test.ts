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
    // A deadline beyond the request's 30 s ack wait: the redelivery after a crash comes in time for attempt 2.
    { tool: 'trigger-long-running-operation', flags: [...read, '--timeout-ms', '90000'] },
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

  it('keeps one record, attempt count 2 and state Observed, for a READ call retried after the adapter was SIGKILLed mid-execution', { timeout: 180_000 }, async () => {
    const { started, result } = await crashDuringSlowCall('crash-read-1');
    // Attempt 2 is a new physical attempt of the same logical call, run to the end, with its own signed receipt.
    expect(result.status).toBe('SUCCESS');
    expect(result.receipt).toMatchObject({ toolCallId: started.metadata.toolCallId, attempt: 2, state: 'Observed' });
    expect(result.receipt.invocationId).not.toBe(started.metadata.invocationId);
    expect(verifyReceipt(result.receipt, platform.receiptKeys)).toMatchObject({ valid: true });

    const call = await callRecord(started.metadata.toolCallId, (found) => found.attemptCount === 2 && found.state === 'Observed');
    expect(call.invocationId).toBe(result.receipt.invocationId);
    expect(call.durationMs).toEqual(expect.any(Number));
    expect(call.attempts.map((attempt) => [attempt.attempt, attempt.invocationId, attempt.state])).toEqual([
      [1, started.metadata.invocationId, 'Failed'],
      [2, result.receipt.invocationId, 'Observed'],
    ]);
    // The interrupted attempt is closed as failed and retryable, never left executing.
    expect(call.attempts[0]?.failure?.code).toBe('TEMPORARY_UNAVAILABLE');
    // One document for the logical call, not one per attempt.
    const listed = await platform.command('audit', 'listCalls', auditCommandSchemas.listCalls, { toolId: slowTool });
    expect(listed.items.map((item) => [item.toolCallId, item.attemptCount, item.state])).toEqual([[started.metadata.toolCallId, 2, 'Observed']]);
  });
});
