import { describe, expect, it } from 'vitest';
import { hasErrorCode } from '@toolplane/contracts';
import { runCli } from '../program.js';
import type { CliIo } from '../output.js';
import { parseLimit, parseSince, parseState } from './calls.js';

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
