// The composition root as a process: a bad setting stops it with one line naming the setting and exit code 1, and
// SIGTERM drains it and exits 0 (the service kit's runService, which main.ts is).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateSigningKeyPair, issueToken } from '@toolplane/auth';
import { eventually, freePort, testScope } from '@toolplane/testing';

const infra = testScope('mcp_startup');
const repoRoot = path.resolve(import.meta.dirname, '../../..');
const main = path.resolve(import.meta.dirname, '../src/main.ts');

/** Runs main.ts with `env`; its output and a way to wait for its exit. */
function run(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--conditions=@toolplane/source', '--import', 'tsx', main], { cwd: repoRoot, env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, exited, out: () => out, err: () => err };
}

describe('the endpoint’s process', () => {
  it.each([
    ['MCP_ENDPOINT_TOKEN_RATE_LIMIT', '-1'],
    ['MCP_ENDPOINT_TOKEN_RATE_WINDOW_MS', 'soon'],
    ['MCP_ENDPOINT_MAX_STREAMS', '1.5'],
    ['MCP_ENDPOINT_PUBLIC_URL', 'ftp://example.com'],
  ])('stops with one line naming %s when it is %s, exit code 1', { timeout: 30_000 }, async (name, value) => {
    const endpoint = run({ NATS_URL: infra.natsUrl, TOOLPLANE_TRUSTED_KEYS: '{}', HTTP_PORT: '0', [name]: value });
    expect(await endpoint.exited).toBe(1);
    const lines = endpoint.err().trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^mcp-endpoint: invalid configuration: ${name} `));
  });

  it('serves once started and drains on SIGTERM, exit code 0, ending an open notification stream', { timeout: 30_000 }, async () => {
    const port = await freePort();
    const key = await generateSigningKeyPair('startup-agents-1');
    const endpoint = run({ NATS_URL: infra.natsUrl, TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ acme: [key.publicJwk] }), HTTP_PORT: String(port), LOG_LEVEL: 'info' });
    await eventually('the endpoint to be ready', async () => ((await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined), 20_000);
    const token = await issueToken({ kind: 'agent', tenant: 'acme', workspace: 'main', principal: 'user:a@example.com', agentId: 'agent-1', agentRevision: '1' }, key.privateKey, { kid: key.kid, expiresIn: '5m' });
    const stream = await fetch(`http://127.0.0.1:${port}/mcp/acme/main`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` } });
    expect(stream.status).toBe(200);
    const body = stream.text();
    const started = Date.now();
    endpoint.child.kill('SIGTERM');
    expect(await endpoint.exited).toBe(0);
    // The stream ended with the shutdown instead of holding it up until the shutdown timeout.
    await body;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(endpoint.out()).toContain('"msg":"mcp-endpoint ready"');
    expect(endpoint.out()).toContain('"msg":"notification stream ended"');
  });
});
