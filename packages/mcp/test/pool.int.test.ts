// The session pool: one session per target, shared connects, replacement of broken sessions, list_changed
// across reconnections, close.
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpPool, type McpPool } from '../src/mod.js';
import { fixtureStdioTarget, isProcessAlive, startHttpFixture, sandboxScratchDir } from '../src/testing.js';

let scratch: string;

beforeAll(async () => {
  scratch = await sandboxScratchDir('mcp-pool-');
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

function nextCall(pool: McpPool, target: Parameters<McpPool['onListChanged']>[0], ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`no list_changed within ${ms} ms`));
    }, ms);
    const unsubscribe = pool.onListChanged(target, () => {
      clearTimeout(timer);
      unsubscribe();
      resolve();
    });
  });
}

describe('createMcpPool', () => {
  it('reuses one session per target, also for concurrent callers, and separates targets that differ', async () => {
    const pool = createMcpPool({ connect: { timeoutMs: 20_000 } });
    try {
      const target = fixtureStdioTarget('counting-echo');
      const sessions = await Promise.all(Array.from({ length: 5 }, () => pool.session(target, { timeoutMs: 20_000 })));
      expect(new Set(sessions).size).toBe(1);
      expect(await pool.session(fixtureStdioTarget('counting-echo'), { timeoutMs: 20_000 })).toBe(sessions[0]);
      const other = await pool.session(fixtureStdioTarget('counting-echo', { VARIANT: 'b' }), { timeoutMs: 20_000 });
      expect(other).not.toBe(sessions[0]);
      expect(pool.size).toBe(2);
    } finally {
      await pool.close();
    }
  });

  it('calls tools through the pooled session, exactly once per call', async () => {
    const countFile = path.join(scratch, 'pool-count.txt');
    const pool = createMcpPool();
    try {
      const target = fixtureStdioTarget('counting-echo', { COUNT_FILE: countFile });
      await pool.callTool(target, 'count_calls', {}, { timeoutMs: 20_000 });
      const second = await pool.callTool(target, 'count_calls', {}, { timeoutMs: 20_000 });
      expect(second.structuredContent).toEqual({ count: 2 });
      expect((await readFile(countFile, 'utf8')).split('\n').filter(Boolean)).toHaveLength(2);
      expect(pool.size).toBe(1);
    } finally {
      await pool.close();
    }
  });

  it('replaces a session whose server died', async () => {
    const pool = createMcpPool();
    try {
      const target = fixtureStdioTarget('counting-echo');
      const first = await pool.session(target, { timeoutMs: 20_000 });
      process.kill(first.pid!, 'SIGKILL');
      await expect(first.closed()).resolves.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'ProcessExited' } });
      const second = await pool.session(target, { timeoutMs: 20_000 });
      expect(second).not.toBe(first);
      expect(second.pid).not.toBe(first.pid);
      await second.ping({ timeoutMs: 10_000 });
    } finally {
      await pool.close();
    }
  });

  it('replaces an HTTP session after its server restarted', async () => {
    const pool = createMcpPool();
    const first = await startHttpFixture('counting-echo');
    let second: Awaited<ReturnType<typeof startHttpFixture>> | undefined;
    try {
      const target = { transport: 'http', url: first.url } as const;
      const before = await pool.session(target, { timeoutMs: 20_000 });
      await first.stop();
      const countFile = path.join(scratch, 'restarted-count.txt');
      second = await startHttpFixture('counting-echo', { port: first.port, env: { COUNT_FILE: countFile } });
      // The old session is unknown to the new server process: a tool call on it is refused before running (so
      // it is retryable, not an unknown outcome), and the session is broken…
      await expect(before.callTool('count_calls', {}, { timeoutMs: 10_000 })).rejects.toMatchObject({
        code: 'TEMPORARY_UNAVAILABLE',
        retryable: true,
        details: { providerErrorType: 'SessionExpired', httpStatus: 404 },
      });
      expect(await readFile(countFile, 'utf8').catch(() => '')).toBe('');
      await before.closed();
      // …and the pool opens a new one.
      const after = await pool.session(target, { timeoutMs: 20_000 });
      expect(after).not.toBe(before);
      expect((await after.callTool('count_calls', {}, { timeoutMs: 10_000 })).structuredContent).toEqual({ count: 1 });
    } finally {
      await pool.close();
      await second?.stop();
      await first.stop();
    }
  });

  it('delivers list_changed to pool listeners across reconnections', async () => {
    const stateFile = path.join(scratch, 'pool-mutable.json');
    const target = fixtureStdioTarget('mutable', { STATE_FILE: stateFile });
    const pool = createMcpPool();
    try {
      const first = await pool.session(target, { timeoutMs: 20_000 });
      const once = nextCall(pool, target, 10_000);
      await first.callTool('mutate', {}, { timeoutMs: 10_000 });
      await once;
      process.kill(first.pid!, 'SIGKILL');
      await first.closed();
      const second = await pool.session(target, { timeoutMs: 20_000 });
      const twice = nextCall(pool, target, 10_000);
      await second.callTool('mutate', {}, { timeoutMs: 10_000 });
      await twice;
    } finally {
      await pool.close();
    }
  });

  it('closes every session (killing stdio servers) and refuses use afterwards', async () => {
    const pool = createMcpPool();
    const a = await pool.session(fixtureStdioTarget('counting-echo'), { timeoutMs: 20_000 });
    const b = await pool.session(fixtureStdioTarget('hostile'), { timeoutMs: 20_000 });
    await pool.close();
    expect(isProcessAlive(a.pid!)).toBe(false);
    expect(isProcessAlive(b.pid!)).toBe(false);
    expect(pool.size).toBe(0);
    await expect(pool.session(fixtureStdioTarget('counting-echo'))).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
  });

  it('evicts a session on request', async () => {
    const pool = createMcpPool();
    try {
      const target = fixtureStdioTarget('counting-echo');
      const session = await pool.session(target, { timeoutMs: 20_000 });
      await pool.evict(target);
      expect(session.isOpen).toBe(false);
      expect(isProcessAlive(session.pid!)).toBe(false);
      expect(pool.size).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it('refuses a malformed target with INVALID_ARGUMENT', async () => {
    const pool = createMcpPool();
    try {
      await expect(pool.session({ transport: 'http', url: 'nonsense' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      await pool.close();
    }
  });
});
