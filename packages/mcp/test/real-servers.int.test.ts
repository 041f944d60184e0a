// Against MCP servers nobody here wrote, installed from npm: server-everything (stdio and Streamable HTTP) and
// server-memory (stdio).
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp, type McpSession, type McpTarget } from '../src/mod.js';
import { everythingStdioTarget, isProcessAlive, memoryStdioTarget, startEverythingHttp, type HttpServerProcess, sandboxScratchDir } from '../src/testing.js';

let scratch: string;
let everythingHttp: HttpServerProcess;

beforeAll(async () => {
  scratch = await sandboxScratchDir('mcp-real-');
  everythingHttp = await startEverythingHttp();
});

afterAll(async () => {
  await everythingHttp?.stop();
  await rm(scratch, { recursive: true, force: true });
});

async function withSession<T>(target: McpTarget, use: (session: McpSession) => Promise<T>): Promise<T> {
  const session = await connectMcp(target, { timeoutMs: 20_000 });
  try {
    return await use(session);
  } finally {
    await session.close();
  }
}

describe('server-everything', () => {
  const targets: [string, () => McpTarget][] = [
    ['stdio', () => everythingStdioTarget()],
    ['Streamable HTTP', () => ({ transport: 'http', url: everythingHttp.url })],
  ];

  for (const [label, target] of targets) {
    it(`over ${label}: handshake, lists, ping and a read tool`, async () => {
      await withSession(target(), async (session) => {
        expect(session.serverInfo.name).toBe('mcp-servers/everything');
        expect(session.protocolVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
        expect(session.capabilities.tools).toBeDefined();

        const tools = await session.listTools({ timeoutMs: 10_000 });
        expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['echo', 'get-sum']));
        const echo = tools.find((tool) => tool.name === 'echo');
        expect(echo?.inputSchema).toMatchObject({ type: 'object' });

        const resources = await session.listResources({ timeoutMs: 10_000 });
        expect(resources.length).toBeGreaterThan(0);
        for (const resource of resources) expect(resource.uri).not.toBe('');
        const templates = await session.listResourceTemplates({ timeoutMs: 10_000 });
        expect(templates.map((template) => template.uriTemplate)).toEqual(expect.arrayContaining(['demo://resource/dynamic/text/{resourceId}']));
        const prompts = await session.listPrompts({ timeoutMs: 10_000 });
        expect(prompts.map((prompt) => prompt.name).length).toBeGreaterThan(0);

        await session.ping({ timeoutMs: 10_000 });

        const result = await session.callTool('echo', { message: 'hello from toolplane' }, { timeoutMs: 10_000 });
        expect(result.isError).toBe(false);
        expect(result.content).toEqual([{ type: 'text', text: 'Echo: hello from toolplane' }]);
      });
    });
  }

  it('over stdio: close kills the server process', async () => {
    const session = await connectMcp(everythingStdioTarget(), { timeoutMs: 20_000 });
    const pid = session.pid;
    expect(pid).toBeTypeOf('number');
    expect(isProcessAlive(pid!)).toBe(true);
    await session.close();
    expect(isProcessAlive(pid!)).toBe(false);
    expect(session.isOpen).toBe(false);
  });
});

describe('server-memory', () => {
  it('over stdio: handshake, tools, ping, a read tool, and close kills it', async () => {
    const session = await connectMcp(memoryStdioTarget(path.join(scratch, 'memory.jsonl')), { timeoutMs: 20_000 });
    const pid = session.pid!;
    try {
      expect(session.serverInfo.name).toBe('memory-server');
      const tools = await session.listTools({ timeoutMs: 10_000 });
      expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['read_graph', 'create_entities', 'search_nodes']));
      await session.ping({ timeoutMs: 10_000 });
      const graph = await session.callTool('read_graph', {}, { timeoutMs: 10_000 });
      expect(graph.isError).toBe(false);
      expect(graph.content[0]?.type).toBe('text');
    } finally {
      await session.close();
    }
    expect(isProcessAlive(pid)).toBe(false);
  });
});
