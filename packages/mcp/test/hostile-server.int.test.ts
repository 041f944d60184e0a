// The hostile fixture: oversized results, slow tools and deadlines, isError results, deep schemas, garbage on
// stdout, a server that exits. None of it may crash us or leave a process behind.
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp, createMcpPool, toolDefinitionHash, toolResultError, type McpSession } from '../src/mod.js';
import { fixtureStdioTarget, isProcessAlive, sandboxScratchDir } from '../src/testing.js';

let scratch: string;

beforeAll(async () => {
  scratch = await sandboxScratchDir('mcp-hostile-');
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function executions(countFile: string): Promise<string[]> {
  return (await readFile(countFile, 'utf8').catch(() => '')).split('\n').filter(Boolean);
}

/** Polls until `condition` holds (for effects in another process), failing after `ms`. */
async function eventually(condition: () => Promise<boolean>, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Pids of live processes whose command line is exactly `argv`. */
async function processesWithArgs(argv: string[]): Promise<number[]> {
  const wanted = `${argv.join('\0')}\0`;
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline === wanted && isProcessAlive(Number(entry))) pids.push(Number(entry));
  }
  return pids;
}

function hostile(countFile?: string, env: Record<string, string> = {}) {
  return fixtureStdioTarget('hostile', { ...(countFile === undefined ? {} : { COUNT_FILE: countFile }), ...env });
}

describe('oversized messages', () => {
  it('refuses a 10 MB result: the call is an unknown outcome, the session closes and the server is killed', async () => {
    const session = await connectMcp(hostile(), { timeoutMs: 20_000, maxMessageBytes: 1024 * 1024 });
    const pid = session.pid!;
    const error: unknown = await session.callTool('big_result', { bytes: 10_000_000 }, { timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'UNKNOWN_OUTCOME', details: { providerErrorType: 'MessageTooLarge', underlyingCode: 'TEMPORARY_UNAVAILABLE' } });
    expect((error as Error).message).toContain('larger than 1048576 bytes');
    const reason = await session.closed();
    expect(reason).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'MessageTooLarge' } });
    expect(session.isOpen).toBe(false);
    expect(isProcessAlive(pid)).toBe(false);
  });

  it('accepts a large result within a raised bound', async () => {
    const session = await connectMcp(hostile(), { timeoutMs: 20_000, maxMessageBytes: 16 * 1024 * 1024 });
    try {
      const result = await session.callTool('big_result', { bytes: 10_000_000 }, { timeoutMs: 30_000 });
      expect(result.content[0]).toMatchObject({ type: 'text' });
      expect((result.content[0] as { text: string }).text).toHaveLength(10_000_000);
    } finally {
      await session.close();
    }
  });
});

describe('deadlines', () => {
  it('a deadline that passes after a tool call was sent is UNKNOWN_OUTCOME (and the tool did start)', async () => {
    const countFile = path.join(scratch, 'slow-after.txt');
    const session = await connectMcp(hostile(countFile), { timeoutMs: 20_000 });
    try {
      const error: unknown = await session.callTool('slow', { ms: 60_000 }, { timeoutMs: 300 }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'UNKNOWN_OUTCOME', details: { underlyingCode: 'TIMEOUT', providerErrorType: 'Deadline' } });
      await eventually(async () => (await executions(countFile)).includes('slow-started'), 10_000);
      // The session survives a timed-out call.
      await session.ping({ timeoutMs: 10_000 });
    } finally {
      await session.close();
    }
  });

  it('a deadline that passed before the call was sent is TIMEOUT, and nothing ran', async () => {
    const countFile = path.join(scratch, 'slow-before.txt');
    const session = await connectMcp(hostile(countFile), { timeoutMs: 20_000 });
    try {
      await expect(session.callTool('slow', { ms: 10 }, { timeoutMs: 0 })).rejects.toMatchObject({ code: 'TIMEOUT' });
      await session.ping({ timeoutMs: 10_000 });
      expect(await executions(countFile)).toEqual([]);
    } finally {
      await session.close();
    }
  });

  it('a deadline that passes while the pool is still connecting is TIMEOUT, and nothing ran', async () => {
    const countFile = path.join(scratch, 'slow-pool.txt');
    const pool = createMcpPool();
    try {
      // The handshake (spawning node) takes far longer than 1 ms.
      await expect(pool.callTool(hostile(countFile), 'slow', { ms: 10 }, { timeoutMs: 1 })).rejects.toMatchObject({ code: 'TIMEOUT' });
      const session = await pool.session(hostile(countFile), { timeoutMs: 20_000 });
      await session.ping({ timeoutMs: 10_000 });
      expect(await executions(countFile)).toEqual([]);
    } finally {
      await pool.close();
    }
  });

  it('a read request that gets no answer in time is TIMEOUT; a tool call in the same situation is UNKNOWN_OUTCOME', async () => {
    const session = await connectMcp(hostile(), { timeoutMs: 20_000 });
    const pid = session.pid!;
    try {
      // A stopped server receives the requests but cannot answer them.
      process.kill(pid, 'SIGSTOP');
      await expect(session.ping({ timeoutMs: 200 })).rejects.toMatchObject({ code: 'TIMEOUT', details: { providerErrorType: 'Deadline' } });
      await expect(session.listTools({ timeoutMs: 200 })).rejects.toMatchObject({ code: 'TIMEOUT' });
      await expect(session.callTool('fails', {}, { timeoutMs: 200 })).rejects.toMatchObject({ code: 'UNKNOWN_OUTCOME', details: { underlyingCode: 'TIMEOUT' } });
      process.kill(pid, 'SIGCONT');
      await session.ping({ timeoutMs: 10_000 });
    } finally {
      process.kill(pid, 'SIGCONT');
      await session.close();
    }
    expect(isProcessAlive(pid)).toBe(false);
  });

  it('a caller abort before sending is CANCELLED; after sending a tool call it is UNKNOWN_OUTCOME', async () => {
    const countFile = path.join(scratch, 'slow-abort.txt');
    const session = await connectMcp(hostile(countFile), { timeoutMs: 20_000 });
    try {
      const aborted = new AbortController();
      aborted.abort();
      await expect(session.callTool('slow', { ms: 10 }, { signal: aborted.signal })).rejects.toMatchObject({ code: 'CANCELLED' });
      expect(await executions(countFile)).toEqual([]);

      const later = new AbortController();
      const pending = session.callTool('slow', { ms: 60_000 }, { signal: later.signal, timeoutMs: 30_000 });
      await eventually(async () => (await executions(countFile)).includes('slow-started'), 10_000);
      later.abort();
      await expect(pending).rejects.toMatchObject({ code: 'UNKNOWN_OUTCOME', details: { underlyingCode: 'CANCELLED' } });
    } finally {
      await session.close();
    }
  });

  it('a handshake past its deadline is TIMEOUT and leaves no process', async () => {
    // `sleep` never answers the handshake; its unusual argument finds it in the process table.
    const marker = `30.${process.pid}`;
    await expect(connectMcp({ transport: 'stdio', command: 'sleep', args: [marker] }, { timeoutMs: 300 })).rejects.toMatchObject({ code: 'TIMEOUT' });
    expect(await processesWithArgs(['sleep', marker])).toEqual([]);
  });
});

describe('tool errors and odd definitions', () => {
  let session: McpSession;

  beforeAll(async () => {
    session = await connectMcp(hostile(), { timeoutMs: 20_000 });
  });

  afterAll(async () => {
    await session?.close();
  });

  it('returns an isError result as a result, and toolResultError maps it to a failure', async () => {
    const result = await session.callTool('fails', {}, { timeoutMs: 10_000 });
    expect(result).toEqual({ isError: true, content: [{ type: 'text', text: 'something broke on the far side' }] });
    expect(toolResultError(result)).toMatchObject({ code: 'INTERNAL', retryable: false, details: { providerErrorType: 'ToolResultIsError' } });
  });

  it('lists a tool with a deeply nested schema, whose definition hash is refused', async () => {
    const tools = await session.listTools({ timeoutMs: 10_000 });
    const deep = tools.find((tool) => tool.name === 'deep_schema')!;
    expect(deep).toBeDefined();
    expect(() => toolDefinitionHash(deep)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(toolDefinitionHash(tools.find((tool) => tool.name === 'slow')!)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('protocol violations and dying servers', () => {
  it('closes the session when the server writes garbage to stdout during a call', async () => {
    const session = await connectMcp(hostile(), { timeoutMs: 20_000 });
    const pid = session.pid!;
    const error: unknown = await session.callTool('garbage', {}, { timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'UNKNOWN_OUTCOME', details: { providerErrorType: 'ProtocolViolation' } });
    expect((error as Error).message).toContain('not a JSON-RPC message');
    await session.closed();
    expect(isProcessAlive(pid)).toBe(false);
  });

  it('fails the handshake clearly when the server writes garbage before it', async () => {
    const error: unknown = await connectMcp(hostile(undefined, { HOSTILE_GARBAGE_ON_START: '1' }), { timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'ProtocolViolation' } });
    expect((error as Error).message).toContain('Welcome to the hostile server');
  });

  it('fails the handshake with the exit code when the server exits at once, and keeps its stderr', async () => {
    const stderr: string[] = [];
    const error: unknown = await connectMcp(hostile(undefined, { HOSTILE_EXIT_ON_START: '3' }), { timeoutMs: 20_000, onStderr: (text) => stderr.push(text) }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'ProcessExited', exitCode: 3 } });
    expect(stderr.join('')).toContain('exiting on start as asked');
  });

  it("names the end of the server's stderr (at most 2 KiB) in a failed handshake's message", async () => {
    // The server writes 10,000 bytes of "e", "END-OF-STDERR" and its goodbye to stderr, then exits.
    const error: unknown = await connectMcp(hostile(undefined, { HOSTILE_STDERR_BYTES: '10000', HOSTILE_EXIT_ON_START: '3' }), { timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'ProcessExited', exitCode: 3 } });
    const message = (error as Error).message;
    expect(message).toMatch(/; server stderr: "…e{100,}END-OF-STDERR\\nhostile: exiting on start as asked"$/);
    expect(message).not.toContain('\n');
    expect(message).not.toContain('e'.repeat(2049));
    expect(message.length).toBeLessThan(2048 + 400);
  });

  it('reports a server that dies during a call as UNKNOWN_OUTCOME, and later requests as unavailable', async () => {
    const session = await connectMcp(hostile(), { timeoutMs: 20_000 });
    await expect(session.callTool('exit', { code: 7 }, { timeoutMs: 10_000 })).rejects.toMatchObject({
      code: 'UNKNOWN_OUTCOME',
      details: { providerErrorType: 'ProcessExited', exitCode: 7 },
    });
    await expect(session.closed()).resolves.toMatchObject({ details: { providerErrorType: 'ProcessExited' } });
    await expect(session.ping({ timeoutMs: 1_000 })).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
  });

  it('kills a server that ignores SIGTERM with SIGKILL after the grace period', async () => {
    const stderr: string[] = [];
    // A grace long enough for a loaded machine to run the server's SIGTERM handler before the SIGKILL.
    const graceMs = 1_000;
    const session = await connectMcp(hostile(undefined, { HOSTILE_IGNORE_SIGTERM: '1' }), { timeoutMs: 20_000, killGraceMs: graceMs, onStderr: (text) => stderr.push(text) });
    const pid = session.pid!;
    const closing = Date.now();
    await session.close();
    expect(isProcessAlive(pid)).toBe(false);
    // It outlived the SIGTERM: only the SIGKILL after the grace ended it.
    expect(Date.now() - closing).toBeGreaterThanOrEqual(graceMs - 50);
    // What it wrote before the SIGKILL may reach its pipe's reader a moment after the close.
    await eventually(() => Promise.resolve(stderr.join('').includes('ignoring SIGTERM')), 5_000);
  });

  it('refuses to send a request larger than the message bound, and says it was not sent', async () => {
    const countFile = path.join(scratch, 'oversized-request.txt');
    const session = await connectMcp(hostile(countFile), { timeoutMs: 20_000, maxMessageBytes: 64 * 1024 });
    try {
      await expect(session.callTool('slow', { ms: 1, pad: 'x'.repeat(100_000) }, { timeoutMs: 10_000 })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        details: { providerErrorType: 'RequestTooLarge' },
      });
      await session.ping({ timeoutMs: 10_000 });
      expect(await executions(countFile)).toEqual([]);
    } finally {
      await session.close();
    }
  });

  it('keeps only the most recent stderr, within its bound', async () => {
    const session = await connectMcp(hostile(undefined, { HOSTILE_STDERR_BYTES: '100000' }), { timeoutMs: 20_000, maxStderrBytes: 16 });
    try {
      // The server writes 100,000 bytes of "e" and then "END-OF-STDERR".
      await eventually(() => Promise.resolve(session.stderrTail().endsWith('END-OF-STDERR\n')), 10_000);
      expect(session.stderrTail()).toBe('eeEND-OF-STDERR\n');
    } finally {
      await session.close();
    }
  });
});
