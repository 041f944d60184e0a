// Streamable HTTP sessions: the fixture servers over HTTP, HTTP statuses and garbage translated into codes, a
// long-lived session that makes thousands of calls without leaking listeners, list_changed over the event stream.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp, type McpSession } from '../src/mod.js';
import { freePort, startHttpFixture, type HttpServerProcess } from '../src/testing.js';

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'mcp-http-'));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** An HTTP server in this process answering every request with `respond`. */
async function fakeEndpoint(respond: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => respond(req, res, body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('HTTP statuses and garbage', () => {
  const endpoints: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(endpoints.splice(0).map((endpoint) => endpoint.close()));
  });

  async function connectTo(respond: Parameters<typeof fakeEndpoint>[0]) {
    const endpoint = await fakeEndpoint(respond);
    endpoints.push(endpoint);
    return connectMcp({ transport: 'http', url: endpoint.url }, { timeoutMs: 10_000 }).then(
      () => {
        throw new Error('connected to a fake endpoint');
      },
      (error: unknown) => error,
    );
  }

  const statuses: [number, string][] = [
    [401, 'AUTHENTICATION_FAILED'],
    [403, 'AUTHORIZATION_DENIED'],
    [404, 'NOT_FOUND'],
    [429, 'RATE_LIMITED'],
    [500, 'TEMPORARY_UNAVAILABLE'],
    [503, 'TEMPORARY_UNAVAILABLE'],
  ];
  for (const [status, code] of statuses) {
    it(`HTTP ${status} is ${code}`, async () => {
      const error = await connectTo((_req, res) => res.writeHead(status, { 'content-type': 'text/plain' }).end('no'));
      expect(error).toMatchObject({ code, details: { httpStatus: status, providerErrorType: `HttpStatus(${status})` } });
    });
  }

  it('an HTML page instead of JSON-RPC is TEMPORARY_UNAVAILABLE with a clear message', async () => {
    const error = await connectTo((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>'));
    expect(error).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'UnexpectedContentType' } });
    expect((error as Error).message).toContain('not MCP');
  });

  it('garbage labelled as JSON is TEMPORARY_UNAVAILABLE with a clear message', async () => {
    const error = await connectTo((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"this is": not json'));
    expect(error).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'MalformedReply' } });
    expect((error as Error).message).toContain('not valid MCP JSON-RPC');
  });

  it('JSON that is not JSON-RPC is TEMPORARY_UNAVAILABLE', async () => {
    const error = await connectTo((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"hello":"world"}'));
    expect(error).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'MalformedReply' } });
  });

  it('an oversized reply is refused without buffering it whole', async () => {
    const endpoint = await fakeEndpoint((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"jsonrpc":"2.0","id":0,"result":{"pad":"${'x'.repeat(2_000_000)}"}}`);
    });
    endpoints.push(endpoint);
    await expect(connectMcp({ transport: 'http', url: endpoint.url }, { timeoutMs: 10_000, maxMessageBytes: 100_000 })).rejects.toMatchObject({
      code: 'TEMPORARY_UNAVAILABLE',
      details: { providerErrorType: 'MessageTooLarge' },
    });
  });

  it('a refused connection is TEMPORARY_UNAVAILABLE and retryable', async () => {
    const port = await freePort();
    const error: unknown = await connectMcp({ transport: 'http', url: `http://127.0.0.1:${port}/mcp` }, { timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', retryable: true, details: { providerErrorType: 'Network(ECONNREFUSED)' } });
    expect((error as Error).message).toContain('refused');
  });

  it('an endpoint that never answers is TIMEOUT', async () => {
    const endpoint = await fakeEndpoint(() => undefined);
    endpoints.push(endpoint);
    await expect(connectMcp({ transport: 'http', url: endpoint.url }, { timeoutMs: 300 })).rejects.toMatchObject({ code: 'TIMEOUT' });
  });

  it('sends the target headers', async () => {
    let seen: string | undefined;
    const endpoint = await fakeEndpoint((req, res) => {
      seen = req.headers['authorization'];
      res.writeHead(401).end();
    });
    endpoints.push(endpoint);
    await expect(connectMcp({ transport: 'http', url: endpoint.url, headers: { Authorization: 'Bearer brokered' } }, { timeoutMs: 10_000 })).rejects.toMatchObject({
      code: 'AUTHENTICATION_FAILED',
    });
    expect(seen).toBe('Bearer brokered');
  });
});

describe('an oversized event on the stream of a tool call', () => {
  it('is refused: the call is an unknown outcome and the session closes', async () => {
    const server = await startHttpFixture('hostile');
    try {
      const session = await connectMcp({ transport: 'http', url: server.url }, { timeoutMs: 20_000, maxMessageBytes: 1024 * 1024 });
      const error: unknown = await session.callTool('big_result', { bytes: 10_000_000 }, { timeoutMs: 20_000 }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'UNKNOWN_OUTCOME', details: { providerErrorType: 'MessageTooLarge' } });
      await expect(session.closed()).resolves.toMatchObject({ details: { providerErrorType: 'MessageTooLarge' } });
    } finally {
      await server.stop();
    }
  });
});

describe('the fixture servers over Streamable HTTP', () => {
  let echo: HttpServerProcess;
  let session: McpSession;

  beforeAll(async () => {
    echo = await startHttpFixture('counting-echo', { env: { COUNT_FILE: path.join(scratch, 'http-count.txt') } });
    session = await connectMcp({ transport: 'http', url: echo.url }, { timeoutMs: 20_000 });
  });

  afterAll(async () => {
    await session?.close();
    await echo?.stop();
  });

  it('lists with pagination, pings and calls', async () => {
    expect(session.serverInfo.name).toBe('counting-echo');
    expect(session.protocolVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect((await session.listTools({ timeoutMs: 10_000 })).map((tool) => tool.name)).toHaveLength(5);
    expect(await session.listResources({ timeoutMs: 10_000 })).toHaveLength(3);
    await session.ping({ timeoutMs: 10_000 });
    expect((await session.callTool('count_calls', {}, { timeoutMs: 10_000 })).structuredContent).toEqual({ count: 1 });
    await expect(session.callTool('fail_rpc', { code: -32602 }, { timeoutMs: 10_000 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('refuses to send a request larger than the message bound', async () => {
    const small = await connectMcp({ transport: 'http', url: echo.url }, { timeoutMs: 20_000, maxMessageBytes: 64 * 1024 });
    try {
      await expect(small.callTool('count_calls', { pad: 'x'.repeat(100_000) }, { timeoutMs: 10_000 })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        details: { providerErrorType: 'RequestTooLarge' },
      });
      await small.ping({ timeoutMs: 10_000 });
    } finally {
      await small.close();
    }
  });

  it('makes 2,000 calls on one session without a MaxListenersExceededWarning', { timeout: 180_000 }, async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const caller = new AbortController();
      // Ten callers at a time, each call with the same long-lived caller signal, as a service would pass its own.
      let next = 0;
      const worker = async () => {
        while (next < 2_000) {
          next++;
          const result = await session.callTool('echo', { text: 'ping' }, { signal: caller.signal, timeoutMs: 30_000 });
          expect(result.isError).toBe(false);
        }
      };
      await Promise.all(Array.from({ length: 10 }, worker));
      // Warnings are emitted on the next tick of the process.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('list_changed over Streamable HTTP', () => {
  it('reaches the listener through the standalone event stream', async () => {
    const stateFile = path.join(scratch, 'http-mutable.json');
    await writeFile(stateFile, JSON.stringify({ version: 1 }));
    const server = await startHttpFixture('mutable', { env: { STATE_FILE: stateFile } });
    const session = await connectMcp({ transport: 'http', url: server.url }, { timeoutMs: 20_000 });
    try {
      const changed = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no list_changed within 10 s')), 10_000);
        const unsubscribe = session.onListChanged(() => {
          clearTimeout(timer);
          unsubscribe();
          resolve();
        });
      });
      await session.callTool('mutate', {}, { timeoutMs: 10_000 });
      await changed;
      const tool = (await session.listTools({ timeoutMs: 10_000 })).find((candidate) => candidate.name === 'target_tool');
      expect(tool?.description).toBe('Does the thing (version 2).');
    } finally {
      await session.close();
      await server.stop();
    }
  });
});

describe('a restarted server', () => {
  it('breaks the session (the server forgot it); a new session works', async () => {
    const first = await startHttpFixture('counting-echo');
    const session = await connectMcp({ transport: 'http', url: first.url }, { timeoutMs: 20_000 });
    await first.stop();
    const down: unknown = await session.ping({ timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(down).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
    await expect(session.closed()).resolves.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
    expect(session.isOpen).toBe(false);

    const second = await startHttpFixture('counting-echo', { port: first.port });
    try {
      const fresh = await connectMcp({ transport: 'http', url: second.url }, { timeoutMs: 20_000 });
      await fresh.ping({ timeoutMs: 10_000 });
      await fresh.close();
    } finally {
      await second.stop();
    }
  });
});
