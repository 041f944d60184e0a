// The echo tool over Streamable HTTP as the MCP endpoint's benchmark calls it: a real process on a free port,
// answered by plain JSON-RPC over fetch (this package has no MCP client).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duplicatedExecutions, executionsByKey, startHttpEcho, type HttpEchoServer } from './echo-server.js';

let dir: string;
let echo: HttpEchoServer;
const countFile = () => path.join(dir, 'count');

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'toolplane-echo-'));
  echo = await startHttpEcho(countFile());
});

afterAll(async () => {
  await echo.stop();
  await rm(dir, { recursive: true, force: true });
});

const post = (body: unknown) => fetch(echo.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(body) });

describe('the echo tool over Streamable HTTP', () => {
  it('answers initialize and tools/call with JSON bodies and no session, and counts each execution by its text', async () => {
    const initialize = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    expect(initialize.status).toBe(200);
    expect(initialize.headers.get('mcp-session-id')).toBeNull();
    expect(((await initialize.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe('2025-06-18');

    for (const text of ['k-1', 'k-2', 'k-1']) {
      const called = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text } } });
      expect(await called.json()).toEqual({ jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text }], structuredContent: { text } } });
    }
    const executions = await executionsByKey(countFile());
    expect(Object.fromEntries(executions)).toEqual({ 'k-1': 2, 'k-2': 1 });
    expect(duplicatedExecutions(executions)).toBe(1);
    expect(duplicatedExecutions(executions, (key) => key === 'k-2')).toBe(0);
  });

  it('accepts a notification with 202, refuses GET with 405 and a body that is not JSON with a parse error', async () => {
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
    expect((await fetch(echo.url)).status).toBe(405);
    const garbage = await fetch(echo.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
    expect(garbage.status).toBe(400);
    expect(((await garbage.json()) as { error: { code: number } }).error.code).toBe(-32700);
  });

  it('refuses an unknown tool and arguments without text, executing nothing', async () => {
    const before = (await executionsByKey(countFile())).size;
    const unknown = (await (await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'nope', arguments: {} } })).json()) as { error: { code: number } };
    const noText = (await (await post({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'echo', arguments: { text: 7 } } })).json()) as { error: { code: number } };
    expect([unknown.error.code, noText.error.code]).toEqual([-32602, -32602]);
    expect((await executionsByKey(countFile())).size).toBe(before);
  });
});
