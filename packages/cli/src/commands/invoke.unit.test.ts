import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasErrorCode, type InvocationResult } from '@toolplane/contracts';
import type { CliIo } from '../output.js';
import { runCli } from '../program.js';
import { agentOfToken, parseArguments, parseTimeoutMs, resultText } from './invoke.js';

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (hasErrorCode(error)) return error.code;
    throw error;
  }
  return 'OK';
}

function tokenNaming(claims: object): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'EdDSA', kid: 'k1' })}.${part(claims)}.${Buffer.from('signature').toString('base64url')}`;
}

function captureIo(env: Record<string, string> = {}, stdin = ''): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    readStdin: () => Promise.resolve(stdin),
    env,
    out: () => out,
    err: () => err,
  };
}

const receipt = {
  tenant: 'acme',
  workspace: 'main',
  invocationId: '5b0a3c1e-7d2f-4a8e-9c1b-2e4f6a8b0c2d',
  toolCallId: 'tc-1',
  attempt: 1,
  idempotencyKey: 'k1',
  principal: 'user:alice',
  agentId: 'agent-support',
  agentRevision: '7',
  toolId: 'fixture.echo',
  toolVersion: '1',
  requestHash: 'a'.repeat(64),
  receivedAt: '2026-01-01T00:00:00.000Z',
  endedAt: '2026-01-01T00:00:01.000Z',
  signature: { alg: 'Ed25519', keyId: 'adapter-1', value: `${'A'.repeat(86)}==` },
} as const;

describe('invoke flags', () => {
  it('reads --args as a JSON object, also from standard input with -', async () => {
    expect(await parseArguments('{"text":"hi","n":2}', () => Promise.resolve(''))).toEqual({ text: 'hi', n: 2 });
    expect(await parseArguments('-', () => Promise.resolve('{"from":"stdin"}'))).toEqual({ from: 'stdin' });
    for (const bad of ['[1,2]', '"text"', 'null', '{not json']) {
      await expect(parseArguments(bad, () => Promise.resolve(''))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
  });

  it('reads --timeout-ms within 1..900000', () => {
    expect(parseTimeoutMs('2500')).toBe(2500);
    expect(codeOf(() => parseTimeoutMs('0'))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => parseTimeoutMs('1.5'))).toBe('INVALID_ARGUMENT');
  });

  it('reads the agent a token names without trusting it', () => {
    expect(agentOfToken(tokenNaming({ kind: 'agent', agentId: 'agent-support' }))).toBe('agent-support');
    expect(agentOfToken(tokenNaming({ kind: 'human' }))).toBeUndefined();
    expect(agentOfToken('garbage')).toBeUndefined();
  });
});

describe('invoke output', () => {
  it('prints the receipt, then the content marked as untrusted tool data', () => {
    const result: InvocationResult = {
      status: 'SUCCESS',
      structuredContent: { text: 'hi' },
      textContent: 'hi',
      truncated: false,
      provenance: 'untrusted-tool-data',
      receipt: { ...receipt, state: 'Observed', resultHash: 'b'.repeat(64) },
    };
    const text = resultText(result);
    expect(text).toMatch(/^status: +SUCCESS$/m);
    expect(text).toMatch(/^tool: +fixture\.echo@1$/m);
    expect(text).toMatch(/^invocation: +5b0a3c1e-7d2f-4a8e-9c1b-2e4f6a8b0c2d \(attempt 1\)$/m);
    expect(text).toMatch(/^signature: +Ed25519 by key adapter-1$/m);
    expect(text).toContain('--- result (untrusted tool data) ---\n{\n  "text": "hi"\n}\n');
  });

  it('prints text as it is and each other content block as one line (type, media type, size, URI), in its place', () => {
    const png = Buffer.alloc(1432, 1).toString('base64');
    const result: InvocationResult = {
      status: 'SUCCESS',
      content: [
        { type: 'text', text: 'Here is the chart:' },
        { type: 'image', data: png, mimeType: 'image/png' },
        { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
        { type: 'resource_link', uri: 'file:///data.csv', name: 'data.csv', mimeType: 'text/csv', size: 2048 },
        { type: 'resource', resource: { uri: 'file:///notes.txt', mimeType: 'text/plain', text: 'inline notes' } },
        { type: 'resource', resource: { uri: 'file:///a.bin', blob: 'AAEC' } },
      ],
      textContent: 'Here is the chart:\n[image (image/png) omitted]\n[audio (audio/wav) omitted]\n[resource link file:///data.csv]\ninline notes\n[binary resource file:///a.bin omitted]',
      truncated: false,
      provenance: 'untrusted-tool-data',
      receipt: { ...receipt, state: 'Observed', resultHash: 'b'.repeat(64) },
    };
    expect(resultText(result)).toContain(
      [
        '--- result (untrusted tool data) ---',
        'Here is the chart:',
        '[image image/png 1432 bytes]',
        '[audio audio/wav 4 bytes]',
        '[resource_link text/csv 2048 bytes file:///data.csv]',
        'inline notes',
        '[resource 3 bytes file:///a.bin]',
        '',
      ].join('\n'),
    );
    // With structured content, the JSON as before, then the blocks that are not text.
    const structured = resultText({ ...result, structuredContent: { rows: 3 } });
    expect(structured).toContain('--- result (untrusted tool data) ---\n{\n  "rows": 3\n}\n[image image/png 1432 bytes]\n[audio audio/wav 4 bytes]\n[resource_link text/csv 2048 bytes file:///data.csv]\n[resource 3 bytes file:///a.bin]\n');
    // Text blocks alone print exactly as the text did.
    const textOnly = { ...result, content: [{ type: 'text' as const, text: 'a' }, { type: 'text' as const, text: 'b' }], textContent: 'a\nb' };
    expect(resultText(textOnly)).toBe(resultText({ ...textOnly, content: undefined }));
  });

  it('prints a denied call’s failure and no content section', () => {
    const denied: InvocationResult = {
      status: 'DENIED',
      truncated: false,
      provenance: 'untrusted-tool-data',
      receipt: { ...receipt, state: 'Denied', failure: { code: 'AUTHORIZATION_DENIED', message: 'not in the agent profile', retryable: false } },
    };
    const text = resultText(denied);
    expect(text).toMatch(/^failure: +AUTHORIZATION_DENIED: not in the agent profile$/m);
    expect(text).not.toContain('--- result');
  });
});

describe('toolplane invoke', () => {
  it('is listed in the help with its flags, and tools effective with --explain', async () => {
    const io = captureIo();
    expect(await runCli(['--help'], io)).toBe(0);
    expect(io.out()).toContain('invoke');
    const invokeHelp = captureIo();
    expect(await runCli(['invoke', '--help'], invokeHelp)).toBe(0);
    for (const flag of ['--args', '--key', '--agent', '--timeout-ms', '--token-file']) expect(invokeHelp.out()).toContain(flag);
    const effectiveHelp = captureIo();
    expect(await runCli(['tools', 'effective', '--help'], effectiveHelp)).toBe(0);
    expect(effectiveHelp.out()).toContain('--explain');
  });

  it('refuses to run without a token, with a token of another agent, and with bad arguments, before connecting', async () => {
    const scope = { TOOLPLANE_TENANT: 'acme', TOOLPLANE_WORKSPACE: 'main', TOOLPLANE_NATS_URL: 'nats://127.0.0.1:1' };
    const noToken = captureIo(scope);
    expect(await runCli(['invoke', 'fixture.echo', '--args', '{}'], noToken)).toBe(1);
    expect(noToken.err()).toMatch(/^AUTHENTICATION_FAILED: no agent context token/);

    const dir = await mkdtemp(path.join(tmpdir(), 'cli-invoke-'));
    try {
      const tokenFile = path.join(dir, 'token');
      await writeFile(tokenFile, `${tokenNaming({ kind: 'agent', agentId: 'agent-billing' })}\n`);
      const otherAgent = captureIo(scope);
      expect(await runCli(['invoke', 'fixture.echo', '--args', '{}', '--token-file', tokenFile, '--agent', 'agent-support'], otherAgent)).toBe(1);
      expect(otherAgent.err()).toBe("INVALID_ARGUMENT: the token is agent agent-billing's, not agent agent-support's\n");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    const badArgs = captureIo({ ...scope, TOOLPLANE_AGENT_TOKEN: tokenNaming({ kind: 'agent', agentId: 'a' }) });
    expect(await runCli(['--json', 'invoke', 'fixture.echo', '--args', '[1]'], badArgs)).toBe(1);
    expect(JSON.parse(badArgs.out())).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  });
});
