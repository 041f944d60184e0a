import { describe, expect, it } from 'vitest';
import { ARGUMENT_REDACTION_MARKER, InspectInvocationReply, hasErrorCode } from '@toolplane/contracts';
import { runCli } from '../program.js';
import type { CliIo } from '../output.js';
import { callsCommands, inspectionText, parseLimit, parseSince, parseState, printable } from './calls.js';

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (hasErrorCode(error)) return error.code;
    throw error;
  }
  return 'OK';
}

describe('calls flags', () => {
  it('reads --since as an ISO time or as an age before now', () => {
    const now = () => Date.parse('2026-03-01T12:00:00.000Z');
    expect(parseSince('2026-03-01T10:00:00Z', now)).toBe('2026-03-01T10:00:00.000Z');
    expect(parseSince('15m', now)).toBe('2026-03-01T11:45:00.000Z');
    expect(parseSince('2d', now)).toBe('2026-02-27T12:00:00.000Z');
    expect(codeOf(() => parseSince('yesterday', now))).toBe('INVALID_ARGUMENT');
  });

  it('reads --state in any case and --limit within 1..200', () => {
    expect(parseState('observed')).toBe('Observed');
    expect(parseState('AWAITINGAPPROVAL')).toBe('AwaitingApproval');
    expect(codeOf(() => parseState('done'))).toBe('INVALID_ARGUMENT');
    expect(parseLimit('200')).toBe(200);
    expect(codeOf(() => parseLimit('0'))).toBe('INVALID_ARGUMENT');
  });

  it('lists the audit commands in the help', async () => {
    let out = '';
    const io: CliIo = { stdout: (text) => void (out += text), stderr: () => undefined, readStdin: () => Promise.resolve(''), env: {} };
    expect(await runCli(['--help'], io)).toBe(0);
    for (const group of ['calls', 'flows', 'audit', 'projector']) expect(out).toContain(group);
    out = '';
    expect(await runCli(['calls', 'list', '--help'], io)).toBe(0);
    for (const flag of ['--run', '--agent', '--tool', '--state', '--since', '--limit', '--cursor']) expect(out).toContain(flag);
  });
});

const invocationId = '5b0a3c1e-7d2f-4a8e-9c1b-2e4f6a8b0c2d';
const approvalId = '0f1e2d3c-4b5a-4968-8776-655443322110';
const receipt = {
  tenant: 'acme',
  workspace: 'main',
  invocationId,
  toolCallId: 'tc-1',
  attempt: 1,
  idempotencyKey: 'k1',
  principal: 'user:alice',
  agentId: 'agent-support',
  toolId: 'fixture.wipe',
  toolVersion: '1',
  requestHash: 'a'.repeat(64),
  approvalId,
  receivedAt: '2026-01-01T00:00:00.000Z',
  endedAt: '2026-01-01T00:00:01.000Z',
  state: 'Observed',
  resultHash: 'b'.repeat(64),
  signature: { alg: 'Ed25519', keyId: 'adapter-1', value: `${'A'.repeat(86)}==` },
} as const;
const parked = InspectInvocationReply.parse({
  toolCallId: 'tc-1',
  invocationId,
  attempt: 1,
  state: 'AwaitingApproval',
  toolId: 'fixture.wipe',
  toolVersion: '1',
  approvalId,
  arguments: { text: `{"pin":"${ARGUMENT_REDACTION_MARKER}","target":"disk-7"}`, redacted: ['/pin'], truncated: false },
});

describe('calls inspect', () => {
  it('prints a parked call’s redacted arguments and says it has no result yet', () => {
    expect(inspectionText(parked)).toBe(
      [
        'tool call:  tc-1',
        'state:      AwaitingApproval',
        'tool:       fixture.wipe@1',
        `invocation: ${invocationId} (attempt 1)`,
        `approval:   ${approvalId}`,
        'redacted:   /pin',
        '--- arguments (untrusted, sensitive fields redacted) ---',
        '{"pin":"[REDACTED]","target":"disk-7"}',
        '--- no result yet: the call is AwaitingApproval ---',
        '',
      ].join('\n'),
    );
  });

  it('prints an ended call’s result text and its receipt as JSON, and says when the arguments were cut', () => {
    const ended = InspectInvocationReply.parse({
      ...parked,
      state: 'Observed',
      arguments: { text: '{"target":"disk-', redacted: [], truncated: true },
      result: { status: 'SUCCESS', textContent: 'wiped disk-7', truncated: false, provenance: 'untrusted-tool-data', receipt },
    });
    const text = inspectionText(ended);
    expect(text).toContain('redacted:   -\n--- arguments (untrusted, sensitive fields redacted, cut at 16 characters) ---\n{"target":"disk-\n');
    expect(text).toContain('--- result (untrusted tool data) ---\nwiped disk-7\n');
    expect(text).toContain(`signature:       Ed25519 by key adapter-1\n`);
    const printedReceipt = text.slice(text.indexOf('--- receipt ---\n') + '--- receipt ---\n'.length);
    expect(JSON.parse(printedReceipt)).toEqual(receipt);
  });

  it('shows the content blocks of an ended call’s result, each non-text one as one line', () => {
    const ended = InspectInvocationReply.parse({
      ...parked,
      state: 'Observed',
      result: {
        status: 'SUCCESS',
        content: [
          { type: 'text', text: 'logo:' },
          { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
        ],
        textContent: 'logo:\n[image (image/png) omitted]',
        truncated: false,
        provenance: 'untrusted-tool-data',
        receipt,
      },
    });
    expect(inspectionText(ended)).toContain('--- result (untrusted tool data) ---\nlogo:\n[image image/png 8 bytes]\n');
  });

  it('never lets tool output or arguments send control sequences to the terminal', () => {
    expect(printable('ok\u001b[2J\tnext\nline\u009b31m\u0007')).toBe('ok\\u001b[2J\tnext\nline\\u009b31m\\u0007');
    const hostile = InspectInvocationReply.parse({
      ...parked,
      state: 'Observed',
      result: { status: 'SUCCESS', textContent: 'done\u001b]52;c;ZXZpbA==\u0007', truncated: false, provenance: 'untrusted-tool-data', receipt },
    });
    const text = inspectionText(hostile);
    expect([...text].filter((char) => char !== '\n' && (char.charCodeAt(0) < 0x20 || (char.charCodeAt(0) >= 0x7f && char.charCodeAt(0) <= 0x9f)))).toEqual([]);
    expect(text).toContain('done\\u001b]52;c;ZXZpbA==\\u0007');
  });

  it('refuses without an operator token before contacting anything, and is listed in the help', async () => {
    let out = '';
    let err = '';
    const io: CliIo = {
      stdout: (text) => void (out += text),
      stderr: (text) => void (err += text),
      readStdin: () => Promise.resolve(''),
      // An unreachable NATS: the refusal must come before anything is sent.
      env: { TOOLPLANE_NATS_URL: 'nats://127.0.0.1:1', TOOLPLANE_TENANT: 'acme', TOOLPLANE_WORKSPACE: 'main' },
    };
    expect(await runCli(['calls', 'inspect', 'tc-1'], io, [callsCommands])).toBe(1);
    expect(err).toBe('AUTHENTICATION_FAILED: no operator token: set TOOLPLANE_TOKEN or pass --token-file\n');
    expect(await runCli(['calls', '--help'], io, [callsCommands])).toBe(0);
    expect(out).toMatch(/inspect \[options\] <toolCallId>/);
  });
});
