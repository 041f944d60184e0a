// stdio sessions against this package's fixture servers: pagination, the child's environment and working
// directory, process-group kill, JSON-RPC errors, list_changed, the protocol revision stdio speaks.
import { access, chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp, toolDefinitionHash, type McpSession } from '../src/mod.js';
import { fixtureStdioTarget, isProcessAlive, sandboxScratchDir, hostPidInSandbox } from '../src/testing.js';

let scratch: string;

beforeAll(async () => {
  scratch = await sandboxScratchDir('mcp-stdio-');
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** Resolves when `listener` registration has been called `count` times, or rejects after `ms`. */
function waitForCalls(subscribe: (listener: () => void) => () => void, count: number, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let calls = 0;
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`only ${calls} of ${count} notifications within ${ms} ms`));
    }, ms);
    const unsubscribe = subscribe(() => {
      calls++;
      if (calls >= count) {
        clearTimeout(timer);
        unsubscribe();
        resolve();
      }
    });
  });
}

describe('the counting echo fixture over stdio', () => {
  let session: McpSession;
  let countFile: string;

  beforeAll(async () => {
    countFile = path.join(scratch, 'count.txt');
    session = await connectMcp(fixtureStdioTarget('counting-echo', { COUNT_FILE: countFile, FIXTURE_PAGE_SIZE: '2', DECLARED: 'yes' }), { timeoutMs: 20_000 });
  });

  afterAll(async () => {
    await session?.close();
  });

  it('negotiates a protocol version and reports server info and capabilities', () => {
    expect(session.serverInfo).toEqual({ name: 'counting-echo', version: '1.0.0' });
    expect(session.protocolVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(session.capabilities.tools?.listChanged).toBe(true);
  });

  it('follows pagination to the end for tools, resources and prompts', async () => {
    const tools = await session.listTools({ timeoutMs: 10_000 });
    expect(tools.map((tool) => tool.name)).toEqual(['echo', 'count_calls', 'inspect_process', 'spawn_helper', 'fail_rpc']);
    expect(tools[0]).toEqual({
      name: 'echo',
      description: 'Echoes the text back.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      annotations: { readOnlyHint: true },
    });
    expect((await session.listResources({ timeoutMs: 10_000 })).map((resource) => resource.uri)).toEqual([
      'fixture://resource/1',
      'fixture://resource/2',
      'fixture://resource/3',
    ]);
    expect((await session.listPrompts({ timeoutMs: 10_000 })).map((prompt) => prompt.name)).toEqual(['prompt-1', 'prompt-2', 'prompt-3']);
  });

  it('bounds listings: more items than allowed is an error, not a truncation', async () => {
    await expect(session.listTools({ timeoutMs: 10_000, maxItems: 3 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(session.listTools({ timeoutMs: 10_000, maxPages: 2 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('calls a tool and normalizes its result; a tool call runs exactly once', async () => {
    expect(await session.callTool('echo', { text: 'hi' }, { timeoutMs: 10_000 })).toEqual({
      isError: false,
      content: [{ type: 'text', text: 'hi' }],
      structuredContent: { text: 'hi' },
    });
    const counted = await session.callTool('count_calls', {}, { timeoutMs: 10_000 });
    expect(counted.structuredContent).toEqual({ count: 1 });
    expect((await readFile(countFile, 'utf8')).split('\n').filter(Boolean)).toEqual(['count_calls']);
    await session.ping({ timeoutMs: 10_000 });
  });

  it('gives the child only its declared env plus PATH (and PWD, which bubblewrap sets), in a private working directory', async () => {
    const inspected = await session.callTool('inspect_process', {}, { timeoutMs: 10_000 });
    const report = inspected.structuredContent as { envNames: string[]; env: Record<string, string>; cwd: string };
    expect(report.envNames).toEqual(['COUNT_FILE', 'DECLARED', 'FIXTURE_PAGE_SIZE', 'PATH', 'PWD']);
    expect(report.env['PWD']).toBe(report.cwd);
    expect(report.env['PATH']?.split(':')).toEqual(expect.arrayContaining(['/usr/bin', '/bin']));
    expect(report.cwd.startsWith(path.join(tmpdir(), 'toolplane-mcp-'))).toBe(true);
    expect(report.cwd).not.toBe(process.cwd());
  });

  it('translates JSON-RPC errors by code and keeps the provider message', async () => {
    await expect(session.callTool('fail_rpc', { code: -32602, message: 'no good' }, { timeoutMs: 10_000 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { providerErrorType: 'JsonRpcError(-32602)', providerMessage: 'no good' },
    });
    await expect(session.callTool('fail_rpc', { code: -32601 }, { timeoutMs: 10_000 })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // An internal error while a tool ran: the effect is unknown.
    await expect(session.callTool('fail_rpc', { code: -32603 }, { timeoutMs: 10_000 })).rejects.toMatchObject({ code: 'UNKNOWN_OUTCOME' });
    await expect(session.listTools({ timeoutMs: 10_000 })).resolves.toHaveLength(5);
  });
});

describe('a server that also serves 2026-07-28, over stdio', () => {
  it('is spoken to at 2025-11-25: stdio sessions do not probe (see clientOptions in session.ts)', async () => {
    const session = await connectMcp(fixtureStdioTarget('modern-echo'), { timeoutMs: 20_000 });
    try {
      expect(session.protocolVersion).toBe('2025-11-25');
      expect(session.eraVerdict).toBeUndefined();
      expect(session.serverInfo.name).toBe('modern-echo');
      expect((await session.callTool('echo', { text: 'hi' }, { timeoutMs: 10_000 })).content).toEqual([{ type: 'text', text: 'hi' }]);
    } finally {
      await session.close();
    }
  });
});

describe('stdio process lifecycle', () => {
  it('removes its private working directory and kills the whole process group on close', async () => {
    const session = await connectMcp(fixtureStdioTarget('counting-echo'), { timeoutMs: 20_000 });
    const inspected = await session.callTool('inspect_process', {}, { timeoutMs: 10_000 });
    const { cwd } = inspected.structuredContent as { cwd: string };
    const helper = await session.callTool('spawn_helper', {}, { timeoutMs: 10_000 });
    const serverPid = session.pid!;
    // The helper's pid as the server sees it is one of the sandbox's PID namespace.
    const helperPid = (await hostPidInSandbox(serverPid, (helper.structuredContent as { pid: number }).pid))!;
    expect(helperPid).toBeTypeOf('number');
    expect(isProcessAlive(serverPid)).toBe(true);
    expect(isProcessAlive(helperPid)).toBe(true);
    expect(await exists(cwd)).toBe(true);

    await session.close();

    expect(isProcessAlive(serverPid)).toBe(false);
    expect(isProcessAlive(helperPid)).toBe(false);
    expect(await exists(cwd)).toBe(false);
    await expect(session.closed()).resolves.toBeUndefined();
    await expect(session.ping({ timeoutMs: 1_000 })).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
  });

  it('runs in the working directory it is given and leaves it in place', async () => {
    const cwd = await mkdtemp(path.join(scratch, 'given-'));
    // Bound read-only into the sandbox, whose user must be able to enter it.
    await chmod(cwd, 0o755);
    const session = await connectMcp(fixtureStdioTarget('counting-echo', {}, cwd), { timeoutMs: 20_000 });
    const inspected = await session.callTool('inspect_process', {}, { timeoutMs: 10_000 });
    expect((inspected.structuredContent as { cwd: string }).cwd).toBe(cwd);
    await session.close();
    expect(await exists(cwd)).toBe(true);
  });

  it('refuses a working directory that does not exist', async () => {
    await expect(connectMcp(fixtureStdioTarget('counting-echo', {}, path.join(scratch, 'missing')), { timeoutMs: 20_000 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('reports a command that does not exist as NOT_FOUND', async () => {
    const error: unknown = await connectMcp({ transport: 'stdio', command: 'toolplane-no-such-command' }, { timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NOT_FOUND', details: { providerErrorType: 'SpawnError(ENOENT)' } });
    expect((error as Error).message).toContain('toolplane-no-such-command');
    await expect(connectMcp({ transport: 'stdio', command: path.join(scratch, 'nope') }, { timeoutMs: 20_000 })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('reports a file that cannot be executed as INVALID_ARGUMENT', async () => {
    const file = path.join(scratch, 'not-executable.sh');
    await writeFile(file, '#!/bin/sh\n', { mode: 0o644 });
    await expect(connectMcp({ transport: 'stdio', command: file }, { timeoutMs: 20_000 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('does not inherit the parent environment', async () => {
    process.env['TOOLPLANE_SECRET_IN_PARENT'] = 'do-not-leak';
    try {
      const session = await connectMcp(fixtureStdioTarget('counting-echo'), { timeoutMs: 20_000 });
      const inspected = await session.callTool('inspect_process', {}, { timeoutMs: 10_000 });
      await session.close();
      expect((inspected.structuredContent as { envNames: string[] }).envNames).toEqual(['PATH', 'PWD']);
    } finally {
      delete process.env['TOOLPLANE_SECRET_IN_PARENT'];
    }
  });
});

describe('tools/list_changed', () => {
  it('reaches the listener after a mutation, and the definition hash of the changed tool differs', async () => {
    const stateFile = path.join(scratch, 'mutable-state.json');
    const session = await connectMcp(fixtureStdioTarget('mutable', { STATE_FILE: stateFile }), { timeoutMs: 20_000 });
    try {
      const before = await session.listTools({ timeoutMs: 10_000 });
      const changed = waitForCalls((listener) => session.onListChanged(listener), 1, 10_000);
      await session.callTool('mutate', {}, { timeoutMs: 10_000 });
      await changed;
      const after = await session.listTools({ timeoutMs: 10_000 });
      const hash = (tools: typeof before, name: string) => toolDefinitionHash(tools.find((tool) => tool.name === name)!);
      expect(hash(after, 'target_tool')).not.toBe(hash(before, 'target_tool'));
      expect(hash(after, 'stable_tool')).toBe(hash(before, 'stable_tool'));
      expect(after.find((tool) => tool.name === 'target_tool')?.inputSchema).toMatchObject({ properties: { b: { type: 'number' } } });
    } finally {
      await session.close();
    }
  });

  it('is also sent when the state changes from outside (a new session sees the new definition)', async () => {
    const stateFile = path.join(scratch, 'mutable-external.json');
    await writeFile(stateFile, JSON.stringify({ version: 1 }));
    const session = await connectMcp(fixtureStdioTarget('mutable', { STATE_FILE: stateFile }), { timeoutMs: 20_000 });
    try {
      const changed = waitForCalls((listener) => session.onListChanged(listener), 1, 10_000);
      await writeFile(stateFile, JSON.stringify({ version: 5, hidden: true }));
      await changed;
      expect((await session.listTools({ timeoutMs: 10_000 })).map((tool) => tool.name)).toEqual(['stable_tool', 'mutate']);
    } finally {
      await session.close();
    }
  });
});
