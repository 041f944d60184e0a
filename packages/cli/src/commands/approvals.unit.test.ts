import { describe, expect, it } from 'vitest';
import type { CliIo } from '../output.js';
import { runCli } from '../program.js';
import { approvalsCommands } from './approvals.js';

function capture(env: Record<string, string> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    readStdin: () => Promise.resolve(''),
    // An unreachable NATS: these refusals must happen before anything is sent.
    env: { TOOLPLANE_NATS_URL: 'nats://127.0.0.1:1', TOOLPLANE_TENANT: 'acme', TOOLPLANE_WORKSPACE: 'main', ...env },
    out: () => out,
    err: () => err,
  };
}

const id = '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f';

describe('toolplane approvals', () => {
  it('lists its four commands in help', async () => {
    const io = capture();
    expect(await runCli(['approvals', '--help'], io, [approvalsCommands])).toBe(0);
    for (const command of ['list', 'show', 'approve', 'reject']) expect(io.out()).toContain(command);
  });

  it('refuses to decide without an operator token, before contacting anything', async () => {
    const io = capture();
    expect(await runCli(['approvals', 'approve', id], io, [approvalsCommands])).toBe(1);
    expect(io.err()).toBe('AUTHENTICATION_FAILED: no operator token: set TOOLPLANE_TOKEN or pass --token-file\n');
  });

  it('names an unreadable token file without printing anything of it', async () => {
    const io = capture({ TOOLPLANE_TOKEN: 'from-the-environment' });
    expect(await runCli(['approvals', 'show', id, '--token-file', '/nonexistent/token'], io, [approvalsCommands])).toBe(1);
    expect(io.err()).toBe('INVALID_ARGUMENT: cannot read the token file /nonexistent/token\n');
  });

  it('requires a reason to reject', async () => {
    const io = capture({ TOOLPLANE_TOKEN: 'x' });
    expect(await runCli(['approvals', 'reject', id], io, [approvalsCommands])).not.toBe(0);
    expect(io.err()).toMatch(/--reason/);
  });

  it('refuses an unknown --state and a bad --limit', async () => {
    const state = capture({ TOOLPLANE_TOKEN: 'x' });
    expect(await runCli(['approvals', 'list', '--state', 'maybe'], state, [approvalsCommands])).toBe(1);
    expect(state.err()).toBe('INVALID_ARGUMENT: --state must be one of pending, granted, rejected, expired, consumed, voided\n');
    const limit = capture({ TOOLPLANE_TOKEN: 'x' });
    expect(await runCli(['approvals', 'list', '--limit', '0'], limit, [approvalsCommands])).toBe(1);
    expect(limit.err()).toBe('INVALID_ARGUMENT: --limit must be a whole number from 1 to 200\n');
  });
});
