// Idle sessions of the pool: a target no call has used for idleTimeoutMs is closed (its stdio process ends), a
// session with a call in flight is kept however long the call takes, and a target used again gets a new session.
import { describe, expect, it } from 'vitest';
import { createMcpPool, type McpPool, type McpTarget } from '../src/mod.js';
import { fixtureStdioTarget, isProcessAlive } from '../src/testing.js';

async function until(what: string, probe: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The host pid of the server behind a pooled target after a call (a sandboxed server reports its namespace's pid). */
async function pidAfterCall(pool: McpPool, target: McpTarget): Promise<number> {
  await pool.callTool(target, 'inspect_process', {}, { timeoutMs: 20_000 });
  return (await pool.session(target, { timeoutMs: 20_000 })).pid!;
}

describe('createMcpPool with idleTimeoutMs', () => {
  it('closes a session nobody used for the idle time, ending its process; the next call opens a new one', { timeout: 30_000 }, async () => {
    const pool = createMcpPool({ idleTimeoutMs: 2_000 });
    try {
      const rotatedAway = fixtureStdioTarget('counting-echo', { TOKEN: 'generation-1' });
      const current = fixtureStdioTarget('counting-echo', { TOKEN: 'generation-2' });
      const oldPid = await pidAfterCall(pool, rotatedAway);
      const currentPid = await pidAfterCall(pool, current);
      expect(pool.size).toBe(2);
      // Keep `current` busy with calls spaced well within the idle time while `rotatedAway` goes idle.
      const started = Date.now();
      while (isProcessAlive(oldPid)) {
        if (Date.now() - started > 10_000) throw new Error('the idle session was never closed');
        expect(await pidAfterCall(pool, current)).toBe(currentPid);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(pool.size).toBe(1);
      expect(isProcessAlive(currentPid)).toBe(true);
      const reopened = await pidAfterCall(pool, rotatedAway);
      expect(reopened).not.toBe(oldPid);
      expect(isProcessAlive(reopened)).toBe(true);
    } finally {
      await pool.close();
    }
  });

  it('keeps a session whose call outlasts the idle time', { timeout: 30_000 }, async () => {
    const pool = createMcpPool({ idleTimeoutMs: 200 });
    try {
      const target = fixtureStdioTarget('hostile');
      const result = await pool.callTool(target, 'slow', { ms: 1_500 }, { timeoutMs: 20_000 });
      expect(result.isError).not.toBe(true);
      expect(pool.size).toBe(1);
      await until('the idle session to close', () => pool.size === 0);
    } finally {
      await pool.close();
    }
  });
});
