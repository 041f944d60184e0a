import { ToolplaneError } from '@toolplane/contracts';
import type { McpPool, McpToolResult } from '@toolplane/mcp';
import { describe, expect, it } from 'vitest';
import { descriptor } from '../../test/core-fixtures.js';
import { McpExecutor, type McpExecution } from './mcp-executor.js';

// The executor's mapping from what the MCP adapter reports to the core's ExecutionResult, and its retries. The
// pool is a scripted stand-in: these tests are about the mapping, not about MCP (see the integration tests).

function scriptedPool(script: (() => McpToolResult | Error)[]): McpPool & { calls: number } {
  const pool = {
    calls: 0,
    callTool() {
      const step = script[Math.min(pool.calls, script.length - 1)];
      pool.calls += 1;
      const outcome = step?.() ?? new Error('no script');
      return outcome instanceof Error ? Promise.reject(outcome) : Promise.resolve(outcome);
    },
  };
  return pool as unknown as McpPool & { calls: number };
}

const ok: McpToolResult = { isError: false, content: [{ type: 'text', text: 'fine' }] };
const unavailable = () => new ToolplaneError('TEMPORARY_UNAVAILABLE', 'connection refused');
const lostAnswer = () => new ToolplaneError('UNKNOWN_OUTCOME', 'no answer; the tool may have run', { details: { underlyingCode: 'TIMEOUT' } });

function execution(overrides: Partial<McpExecution> = {}): McpExecution {
  const tool = descriptor({ retryPolicy: { maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 } });
  return {
    target: { transport: 'stdio', command: '/bin/true' },
    serverKey: 'server-a',
    descriptor: tool,
    effectiveClass: 'READ',
    args: { title: 'x' },
    deadline: new Date(Date.now() + 60_000),
    signal: new AbortController().signal,
    now: () => new Date(),
    jitter: () => 0,
    ...overrides,
  };
}

describe('the MCP executor', () => {
  it('returns the content of a successful call', async () => {
    const pool = scriptedPool([() => ok]);
    expect(await new McpExecutor(pool).execute(execution())).toEqual({ result: 'returned', output: { content: ok.content } });
  });

  it('maps an isError result to a known failure (the tool ran and said so)', async () => {
    const pool = scriptedPool([() => ({ isError: true, content: [{ type: 'text', text: 'nope' }] })]);
    const result = await new McpExecutor(pool).execute(execution());
    expect(result).toMatchObject({ result: 'failed', effect: 'none', failure: { providerErrorType: 'ToolResultIsError' } });
  });

  it('retries a READ call on TEMPORARY_UNAVAILABLE within the retry policy', async () => {
    const pool = scriptedPool([unavailable, unavailable, () => ok]);
    expect(await new McpExecutor(pool).execute(execution())).toMatchObject({ result: 'returned' });
    expect(pool.calls).toBe(3);
  });

  it('never repeats a WRITE whose request may have been sent: the outcome is unknown', async () => {
    const pool = scriptedPool([lostAnswer, () => ok]);
    const result = await new McpExecutor(pool).execute(execution({ effectiveClass: 'WRITE' }));
    expect(result).toEqual({ result: 'timed_out', requestSent: true });
    expect(pool.calls).toBe(1);
  });

  it('opens the circuit of a server after repeated failures, without calling it', async () => {
    const pool = scriptedPool([unavailable]);
    const executor = new McpExecutor(pool);
    const single = execution({ descriptor: descriptor({ retryPolicy: { maxAttempts: 1, initialBackoffMs: 1, maxBackoffMs: 1 } }) });
    await executor.execute(single);
    expect([...executor.circuits()]).toEqual([{ server: 'server-a', state: 'closed' }]);
    for (let i = 1; i < 5; i++) await executor.execute(single);
    expect([...executor.circuits()]).toEqual([{ server: 'server-a', state: 'open' }]);
    const callsBefore = pool.calls;
    const result = await executor.execute(single);
    expect(pool.calls).toBe(callsBefore);
    expect(result).toMatchObject({ result: 'failed', effect: 'none', failure: { code: 'TEMPORARY_UNAVAILABLE' } });
    // Another server has its own circuit.
    await executor.execute({ ...single, serverKey: 'server-b' });
    expect(pool.calls).toBe(callsBefore + 1);
  });

  it('reports a deadline that passed before the request was sent as not sent', async () => {
    const pool = scriptedPool([() => new ToolplaneError('TIMEOUT', 'the deadline passed before the request was sent')]);
    const result = await new McpExecutor(pool).execute(execution({ descriptor: descriptor({ retryPolicy: { maxAttempts: 1, initialBackoffMs: 1, maxBackoffMs: 1 } }) }));
    expect(result).toEqual({ result: 'timed_out', requestSent: false });
  });
});
