// Hostile servers against the bubblewrap sandbox (real bwrap): each escape is refused, each limit bites and is
// reported with a typed error, and the other sessions keep working.
import { DEFAULT_SANDBOX_PROFILE, SANDBOX_LIMIT_DEFAULTS, type SandboxProfile } from '@toolplane/contracts';
import { readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp, type McpSession, type McpStdioTarget } from '../src/mod.js';
import { fixtureStdioTarget, isProcessAlive, memoryStdioTarget, sandboxScratchDir, testSandboxProfile } from '../src/testing.js';

let scratch: string;
let listener: Server;
let listenerPort: number;
let arrivals = 0;
let bystander: McpSession;

beforeAll(async () => {
  scratch = await sandboxScratchDir('mcp-sandbox-');
  listener = createServer((socket) => {
    arrivals += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  listenerPort = (listener.address() as { port: number }).port;
  // Another server that must keep working whatever the hostile ones do.
  bystander = await connectMcp(fixtureStdioTarget('counting-echo'), { timeoutMs: 20_000 });
});

afterAll(async () => {
  await bystander?.close();
  await new Promise((resolve) => listener?.close(resolve));
  await rm(scratch, { recursive: true, force: true });
});

function escapist(profile: Partial<SandboxProfile> = {}, dataFiles: string[] = []): McpStdioTarget {
  return { ...fixtureStdioTarget('escapist'), sandbox: { ...testSandboxProfile(dataFiles), ...profile } };
}

const limits = (overrides: Partial<SandboxProfile['limits']>) => ({ limits: { ...SANDBOX_LIMIT_DEFAULTS, ...overrides } });

async function call(session: McpSession, tool: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const result = await session.callTool(tool, args, { timeoutMs: 30_000 });
  return result.structuredContent as Record<string, unknown>;
}

async function withSession<T>(target: McpStdioTarget, use: (session: McpSession) => Promise<T>): Promise<T> {
  const session = await connectMcp(target, { timeoutMs: 20_000 });
  try {
    return await use(session);
  } finally {
    await session.close();
  }
}

async function bystanderWorks(): Promise<void> {
  await expect(bystander.callTool('echo', { text: 'still here' }, { timeoutMs: 10_000 })).resolves.toMatchObject({ structuredContent: { text: 'still here' } });
}

describe('files', () => {
  it("cannot read the adapter's env file, its /proc/<pid>/environ or any file outside its mounts", async () => {
    const envFile = path.join(scratch, 'adapter.env');
    await writeFile(envFile, 'TOOLPLANE_SECRET=sandbox-canary-7f3a\n');
    process.env['TOOLPLANE_SANDBOX_CANARY'] = 'sandbox-canary-7f3a';
    try {
      await withSession(escapist(), async (session) => {
        expect(await call(session, 'read_file', { path: envFile })).toEqual({ ok: false, code: 'ENOENT' });
        const environ = await call(session, 'read_file', { path: `/proc/${process.pid}/environ` });
        expect(JSON.stringify(environ)).not.toContain('sandbox-canary-7f3a');
        // Its own PID namespace: the adapter's pid is not there (or, by chance of numbering, is another sandboxed process).
        if (environ['ok'] === false) expect(environ['code']).toBe('ENOENT');
        expect(await call(session, 'read_file', { path: '/etc/passwd' })).toEqual({ ok: false, code: 'ENOENT' });
        expect(await call(session, 'read_file', { path: '/root/.bashrc' })).toEqual({ ok: false, code: 'ENOENT' });
        // What it may read, it reads: its own package is mounted.
        expect(await call(session, 'read_file', { path: fixtureStdioTarget('escapist').args![0]! })).toMatchObject({ ok: true });
      });
    } finally {
      delete process.env['TOOLPLANE_SANDBOX_CANARY'];
    }
    await bystanderWorks();
  });

  it('writes only its declared writable paths, and nowhere else', async () => {
    const data = await sandboxScratchDir('mcp-sandbox-data-');
    try {
      await withSession(escapist({}, [path.join(data, 'file')]), async (session) => {
        expect(await call(session, 'write_file', { path: path.join(data, 'ok.bin'), bytes: 10 })).toEqual({ ok: true, size: 10 });
        const outside = await call(session, 'write_file', { path: path.join(scratch, 'escaped.bin'), bytes: 10 });
        expect(outside).toMatchObject({ ok: false, code: 'ENOENT' });
        // The package it runs from is read-only.
        expect(await call(session, 'write_file', { path: path.join(path.dirname(fixtureStdioTarget('escapist').args![0]!), 'planted.mjs'), bytes: 10 })).toMatchObject({ ok: false, code: 'EROFS' });
      });
      expect(await readdir(data)).toEqual(['ok.bin']);
      expect(await readdir(scratch)).not.toContain('escaped.bin');
    } finally {
      await rm(data, { recursive: true, force: true });
    }
  });
});

describe('network', () => {
  it('reaches nothing on the host with network none: a listener on 127.0.0.1 gets no connection', async () => {
    const before = arrivals;
    await withSession(escapist(), async (session) => {
      expect(await call(session, 'connect', { host: '127.0.0.1', port: listenerPort })).toEqual({ ok: false, code: 'ECONNREFUSED' });
    });
    expect(arrivals).toBe(before);
    await bystanderWorks();
  });

  it("reaches the host's network with network host (what the operator approved)", async () => {
    const before = arrivals;
    const host = { network: 'host' as const, networkHostApprovedBy: 'op:test', networkHostApprovedAt: '2026-01-01T00:00:00.000Z' };
    await withSession(escapist(host), async (session) => {
      expect(await call(session, 'connect', { host: '127.0.0.1', port: listenerPort })).toEqual({ ok: true });
    });
    await expect.poll(() => arrivals).toBe(before + 1);
  });

  it('refuses a profile with network egress before starting anything (not supported yet)', async () => {
    await expect(connectMcp(escapist({ network: 'egress', egress: [{ host: '127.0.0.1', port: listenerPort }] }), { timeoutMs: 20_000 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { providerErrorType: 'SandboxEgressUnsupported' },
    });
  });
});

describe('limits', () => {
  it('stops a fork bomb at the process limit (RLIMIT_NPROC in its own user namespace), and the server lives on', async () => {
    await withSession(escapist(limits({ processes: 40 })), async (session) => {
      const bomb = await call(session, 'fork_bomb', { max: 1_000 });
      expect(bomb).toMatchObject({ ok: false, code: 'EAGAIN' });
      // Node runs about a dozen threads per process, and threads count too.
      expect(bomb['started']).toBeLessThan(40);
      await session.ping({ timeoutMs: 10_000 });
    });
    await bystanderWorks();
  });

  it('refuses memory past the address space limit', async () => {
    const limit = 3 * 1024 ** 3;
    await withSession(escapist(limits({ addressSpaceBytes: limit })), async (session) => {
      const allocated = await session
        .callTool('allocate', { chunkBytes: 64 * 1024 * 1024, maxBytes: 8 * 1024 ** 3 }, { timeoutMs: 60_000 })
        .then((result) => result.structuredContent as Record<string, unknown>)
        .catch((error: unknown) => error as Error);
      if (allocated instanceof Error) {
        // Running out of memory may kill the server (V8 aborts): the call then fails with a typed error.
        expect(allocated).toMatchObject({ code: 'UNKNOWN_OUTCOME', details: { providerErrorType: 'ProcessExited' } });
      } else {
        expect(allocated).toMatchObject({ ok: false });
        expect(allocated['bytes']).toBeLessThan(limit);
      }
    });
    await bystanderWorks();
  });

  it('refuses to write a file past the file size limit', async () => {
    const data = await sandboxScratchDir('mcp-sandbox-fsize-');
    try {
      await withSession(escapist(limits({ fileSizeBytes: 1024 * 1024 }), [path.join(data, 'big.bin')]), async (session) => {
        expect(await call(session, 'write_file', { path: path.join(data, 'big.bin'), bytes: 4 * 1024 * 1024 })).toEqual({ ok: false, code: 'EFBIG', size: 1024 * 1024 });
        // Its private /tmp is bounded as well.
        expect(await call(session, 'write_file', { path: '/tmp/big.bin', bytes: 4 * 1024 * 1024 })).toMatchObject({ ok: false, code: 'EFBIG' });
      });
      expect((await stat(path.join(data, 'big.bin'))).size).toBe(1024 * 1024);
    } finally {
      await rm(data, { recursive: true, force: true });
    }
  });

  it('ends a server past its CPU time limit, naming the limit in the typed error', async () => {
    const session = await connectMcp(escapist(limits({ cpuSeconds: 1 })), { timeoutMs: 20_000 });
    const pid = session.pid!;
    const error: unknown = await session.callTool('burn_cpu', {}, { timeoutMs: 30_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'UNKNOWN_OUTCOME', details: { providerErrorType: 'ProcessExited', exitSignal: 'SIGXCPU' } });
    expect((error as Error).message).toContain('CPU time limit (1 s)');
    await session.closed();
    expect(isProcessAlive(pid)).toBe(false);
    await bystanderWorks();
  });
});

describe('the sandbox itself', () => {
  it('refuses to start a sandboxed server without bwrap, in one clear line', async () => {
    const error: unknown = await connectMcp(fixtureStdioTarget('counting-echo'), { timeoutMs: 20_000, sandbox: { bwrapPath: '/nonexistent/bwrap' } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'INTERNAL', retryable: false, details: { providerErrorType: 'SandboxUnavailable' } });
    expect((error as Error).message).toMatch(/stdio MCP servers run sandboxed under bubblewrap, but "\/nonexistent\/bwrap" was not found: install .*MCP_STDIO_SANDBOX=off$/);
    expect((error as Error).message).not.toContain('\n');
  });

  it('runs the server unsandboxed when the sandbox is off: it then sees files outside any mount', async () => {
    const file = path.join(scratch, 'visible.txt');
    await writeFile(file, 'visible');
    const session = await connectMcp(escapist(), { timeoutMs: 20_000, sandbox: { mode: 'off' } });
    try {
      expect(await call(session, 'read_file', { path: file })).toEqual({ ok: true, text: 'visible' });
    } finally {
      await session.close();
    }
  });

  it('server-memory writes only its declared data path', async () => {
    const data = await sandboxScratchDir('mcp-sandbox-memory-');
    const elsewhere = await sandboxScratchDir('mcp-sandbox-undeclared-');
    try {
      const entity = { entities: [{ name: 'sandbox', entityType: 'test', observations: ['kept'] }] };
      await withSession(memoryStdioTarget(path.join(data, 'memory.json')), async (session) => {
        expect((await session.callTool('create_entities', entity, { timeoutMs: 10_000 })).isError).not.toBe(true);
      });
      expect(await readdir(data)).toEqual(['memory.json']);
      // The same server told to keep its graph in a directory it was not given cannot write there.
      const undeclared: McpStdioTarget = { ...memoryStdioTarget(path.join(elsewhere, 'memory.json')), sandbox: DEFAULT_SANDBOX_PROFILE };
      await withSession(undeclared, async (session) => {
        const outcome = await session.callTool('create_entities', entity, { timeoutMs: 10_000 }).catch((e: unknown) => e);
        expect(outcome instanceof Error || (outcome as { isError?: boolean }).isError === true).toBe(true);
      });
      expect(await readdir(elsewhere)).toEqual([]);
    } finally {
      await rm(data, { recursive: true, force: true });
      await rm(elsewhere, { recursive: true, force: true });
    }
  });
});
