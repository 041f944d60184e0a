// Protocol revision 2026-07-28 over Streamable HTTP: a server built on the v2 SDK (createMcpHandler, serving both eras
// from one endpoint) is spoken to at 2026-07-28, a 1.x server still at 2025-11-25; what the session hands out has the
// same shape whichever revision was negotiated; a long-lived session leaks no listeners; a pool probes a target once;
// list changes arrive on a subscriptions/listen stream.
import { createMcpHandler, fromJsonSchema, inputRequired, McpServer } from '@modelcontextprotocol/server';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp, createMcpPool, type McpHttpTarget, type McpTarget } from '../src/mod.js';
import { startHttpFixture } from '../src/testing.js';

const MODERN = '2026-07-28';

/** The tools of the v2 server: annotated content, a non-object output, and a tool that asks for input. */
function buildServer(): McpServer {
  const server = new McpServer({ name: 'modern-echo', version: '2.4.0' });
  const text = fromJsonSchema<{ text: string }>({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
  const annotations = { audience: ['user' as const], priority: 0.5, lastModified: '2026-07-28T12:00:00Z' };
  server.registerTool('echo', { description: 'Echoes text, for the user only, with a link to a report.', inputSchema: text }, (args) => ({
    content: [
      { type: 'text', text: args.text, annotations },
      { type: 'resource_link', uri: 'file:///reports/q3.pdf', name: 'q3', title: 'Q3 report', size: 4096, mimeType: 'application/pdf' },
    ],
  }));
  server.registerTool(
    'primes',
    { description: 'The first primes, as an array.', outputSchema: fromJsonSchema({ type: 'array', items: { type: 'integer' } }) },
    () => ({ content: [{ type: 'text', text: '[2,3,5,7]' }], structuredContent: [2, 3, 5, 7] }),
  );
  server.registerTool('confirm', { description: 'Asks the user to confirm first.' }, () =>
    inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({ message: 'Sure?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } }),
      },
    }),
  );
  return server;
}

/** The MCP methods the endpoint received, in order (the `method` of each POSTed JSON-RPC message). */
const received: string[] = [];
const handler = createMcpHandler(() => buildServer());
let httpServer: http.Server;
let url: string;

/** Serves `handler` (web-standard fetch) over node:http on loopback, recording the methods it is sent. */
async function serve(): Promise<void> {
  httpServer = http.createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      if (body.length > 0) {
        const parsed = JSON.parse(body.toString('utf8')) as { method?: string } | { method?: string }[];
        for (const message of Array.isArray(parsed) ? parsed : [parsed]) if (typeof message.method === 'string') received.push(message.method);
      }
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      const response = await handler.fetch(new Request(new URL(req.url ?? '/', url), { method: req.method, headers, ...(hasBody ? { body } : {}) }));
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body === null) {
        res.end();
        return;
      }
      const stream = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
      res.on('close', () => stream.destroy());
      stream.on('error', () => res.destroy());
      stream.pipe(res);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/mcp`;
}

beforeAll(serve);

afterAll(async () => {
  await handler.close();
  httpServer.closeAllConnections();
  await new Promise<void>((resolve) => httpServer.close(() => resolve()));
});

const target = (): McpHttpTarget => ({ transport: 'http', url });
const probes = () => received.filter((method) => method === 'server/discover').length;

describe('a 2026-07-28 server', () => {
  it('is spoken to at 2026-07-28: it lists and calls tools, and keeps content annotations', async () => {
    const session = await connectMcp(target(), { timeoutMs: 10_000 });
    try {
      expect(session.protocolVersion).toBe(MODERN);
      expect(session.eraVerdict).toMatchObject({ era: 'modern', discover: { supportedVersions: expect.arrayContaining([MODERN]) as unknown } });
      expect(session.serverInfo).toMatchObject({ name: 'modern-echo', version: '2.4.0' });
      expect(session.capabilities.tools).toBeDefined();
      expect((await session.listTools({ timeoutMs: 10_000 })).map((tool) => tool.name)).toEqual(['echo', 'primes', 'confirm']);
      const result = await session.callTool('echo', { text: 'hello' }, { timeoutMs: 10_000 });
      expect(result).toStrictEqual({
        isError: false,
        content: [
          { type: 'text', text: 'hello', annotations: { audience: ['user'], priority: 0.5, lastModified: '2026-07-28T12:00:00Z' } },
          { type: 'resource_link', uri: 'file:///reports/q3.pdf', name: 'q3', title: 'Q3 report', mimeType: 'application/pdf', size: 4096 },
        ],
      });
      // 2026-07-28 has no ping: the round trip is a server/discover.
      const before = probes();
      await session.ping({ timeoutMs: 10_000 });
      expect(probes()).toBe(before + 1);
    } finally {
      await session.close();
    }
  });

  it('hands out the same tool and result shapes as the 2025 revision of the same server', async () => {
    const modern = await connectMcp(target(), { timeoutMs: 10_000 });
    const legacy = await connectMcp(target(), { timeoutMs: 10_000, prior: { era: 'legacy' } });
    try {
      expect(legacy.protocolVersion).toBe('2025-11-25');
      const primes = async (session: typeof modern) => ({
        tool: (await session.listTools({ timeoutMs: 10_000 })).find((tool) => tool.name === 'primes'),
        result: await session.callTool('primes', {}, { timeoutMs: 10_000 }),
      });
      const seen = await primes(modern);
      expect(seen.tool?.outputSchema).toMatchObject({ type: 'object', properties: { result: { type: 'array', items: { type: 'integer' } } }, required: ['result'] });
      expect(seen.result.structuredContent).toEqual({ result: [2, 3, 5, 7] });
      expect(seen).toEqual(await primes(legacy));
    } finally {
      await Promise.all([modern.close(), legacy.close()]);
    }
  });

  it('fails a call that asks for interactive input, definitively (this client offers none)', async () => {
    const session = await connectMcp(target(), { timeoutMs: 10_000 });
    try {
      await expect(session.callTool('confirm', {}, { timeoutMs: 10_000 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      await session.close();
    }
  });

  it('makes 1,000 calls on one session without a MaxListenersExceededWarning', { timeout: 120_000 }, async () => {
    const session = await connectMcp(target(), { timeoutMs: 10_000 });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const caller = new AbortController();
      let next = 0;
      const worker = async () => {
        while (next < 1_000) {
          next++;
          expect((await session.callTool('echo', { text: 'ping' }, { signal: caller.signal, timeoutMs: 30_000 })).isError).toBe(false);
        }
      };
      await Promise.all(Array.from({ length: 10 }, worker));
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await session.close();
    }
  });

  it('announces list changes through a subscriptions/listen stream, opened for the first listener', async () => {
    const session = await connectMcp(target(), { timeoutMs: 10_000 });
    try {
      const listens = () => received.filter((method) => method === 'subscriptions/listen').length;
      const before = listens();
      const changed = new Promise<string>((resolve) => {
        const unsubscribe = session.onListChanged((list) => {
          unsubscribe();
          resolve(list);
        });
      });
      // The stream is acknowledged asynchronously: publish until the change arrives.
      const publisher = setInterval(() => handler.notify.toolsChanged(), 50);
      try {
        await expect(changed).resolves.toBe('tools');
      } finally {
        clearInterval(publisher);
      }
      expect(listens()).toBe(before + 1);
    } finally {
      await session.close();
    }
  });
});

describe('a pool', () => {
  it('probes a target once per credentials, and connects again from the verdict', async () => {
    const pool = createMcpPool({ connect: { timeoutMs: 10_000 } });
    try {
      const before = probes();
      const first = await pool.session(target());
      expect(first.protocolVersion).toBe(MODERN);
      expect(probes()).toBe(before + 1);
      await first.close();
      const second = await pool.session(target());
      expect(second).not.toBe(first);
      expect(second.protocolVersion).toBe(MODERN);
      expect((await pool.callTool(target(), 'echo', { text: 'again' }, { timeoutMs: 10_000 })).content[0]).toMatchObject({ text: 'again' });
      expect(probes()).toBe(before + 1);
      // Other credentials are another authorization context: probed on their own.
      const other: McpTarget = { ...target(), headers: { Authorization: 'Bearer other' } };
      expect((await pool.session(other)).protocolVersion).toBe(MODERN);
      expect(probes()).toBe(before + 2);
    } finally {
      await pool.close();
    }
  });
});

describe('a 1.x server over Streamable HTTP', () => {
  it('still negotiates 2025-11-25 (the probe falls back to initialize)', async () => {
    const server = await startHttpFixture('counting-echo');
    try {
      const session = await connectMcp({ transport: 'http', url: server.url }, { timeoutMs: 20_000 });
      try {
        expect(session.protocolVersion).toBe('2025-11-25');
        expect(session.eraVerdict).toEqual({ era: 'legacy' });
        expect((await session.callTool('echo', { text: 'old' }, { timeoutMs: 10_000 })).isError).toBe(false);
      } finally {
        await session.close();
      }
    } finally {
      await server.stop();
    }
  });
});
