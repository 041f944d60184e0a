import { describe, expect, it } from 'vitest';
import type { CliIo } from '../output.js';
import { runCli } from '../program.js';

function captureIo(env: Record<string, string> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    readStdin: () => Promise.resolve(''),
    env,
    out: () => out,
    err: () => err,
  };
}

const scope = { TOOLPLANE_TENANT: 'acme', TOOLPLANE_WORKSPACE: 'main', TOOLPLANE_NATS_URL: 'nats://127.0.0.1:1' };

describe('toolplane calls wait', () => {
  it('is listed under calls with the key, the wait and the agent token flags', async () => {
    const calls = captureIo();
    expect(await runCli(['calls', '--help'], calls)).toBe(0);
    expect(calls.out()).toMatch(/^ +wait /m);
    const help = captureIo();
    expect(await runCli(['calls', 'wait', '--help'], help)).toBe(0);
    for (const flag of ['--key', '--timeout-ms', '--token-file', '--agent']) expect(help.out()).toContain(flag);
  });

  it('needs a key, a valid wait and an agent context token, and refuses before connecting', async () => {
    const noKey = captureIo(scope);
    expect(await runCli(['calls', 'wait'], noKey)).not.toBe(0);
    expect(noKey.err()).toContain('--key');
    const badWait = captureIo(scope);
    expect(await runCli(['calls', 'wait', '--key', 'k1', '--timeout-ms', '0'], badWait)).toBe(1);
    expect(badWait.err()).toMatch(/--timeout-ms must be a whole number/);
    // An operator token is not the agent's: the agent's token comes from $TOOLPLANE_AGENT_TOKEN or --token-file.
    const noToken = captureIo({ ...scope, TOOLPLANE_TOKEN: 'operator.token.here' });
    expect(await runCli(['calls', 'wait', '--key', 'k1'], noToken)).toBe(1);
    expect(noToken.err()).toMatch(/^AUTHENTICATION_FAILED: no agent context token/);
  });
});
