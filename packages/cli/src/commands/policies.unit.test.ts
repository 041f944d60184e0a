import { describe, expect, it } from 'vitest';
import { AgentProfileInput, TenantPolicyInput, hasErrorCode, type TenantPolicy } from '@toolplane/contracts';
import type { CliIo } from '../output.js';
import { runCli } from '../program.js';
import { callsCommands } from './calls.js';
import { engageKillSwitch, killSwitchTarget, parseDocumentInput, parseExpectedVersion, policiesCommands, releaseKillSwitch } from './policies.js';

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (hasErrorCode(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  return 'OK';
}

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

const at = '2026-03-01T12:00:00.000Z';
const policy: TenantPolicy = {
  tenant: 'acme',
  deniedSideEffectClasses: [],
  approvalRequiredClasses: ['DESTRUCTIVE'],
  approvers: { roles: ['approver'], principals: [] },
  approvalTtlMs: 3_600_000,
  rateLimits: [],
  killSwitches: [{ target: 'TOOL', tools: 'github.*', reason: 'incident 1', engagedBy: 'user:ada', engagedAt: at }],
  environments: [],
  classRaises: [],
  commands: { block: ['rm\\s+-rf'], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' },
  allowDirectPrincipalCalls: false,
  sensitiveArgumentFields: [],
  updatedBy: 'user:ada',
  updatedAt: at,
  version: 4,
};
const serverId = '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f';

describe('policy documents from operators', () => {
  it('accepts a profile as written, or as `get --json` printed it (the adapter’s fields dropped)', () => {
    const input = { agentId: 'support', allowedTools: ['fixture.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] };
    expect(parseDocumentInput(AgentProfileInput, JSON.stringify(input), 'agent profile')).toEqual(input);
    const printed = { ...input, tenant: 'acme', workspace: 'main', updatedBy: 'user:ada', updatedAt: at, version: 3 };
    expect(parseDocumentInput(AgentProfileInput, JSON.stringify(printed), 'agent profile')).toEqual(input);
    const { tenant: _t, updatedBy: _b, updatedAt: _a, version: _v, ...policyInput } = policy;
    expect(parseDocumentInput(TenantPolicyInput, JSON.stringify(policy), 'tenant policy')).toEqual(policyInput);
  });

  it('names what is wrong with a document, and refuses what is not JSON', () => {
    expect(codeOf(() => parseDocumentInput(AgentProfileInput, '{"agentId": "a"', 'agent profile'))).toBe('INVALID_ARGUMENT: the agent profile is not valid JSON');
    expect(codeOf(() => parseDocumentInput(AgentProfileInput, JSON.stringify({ agentId: 'a', allowedTools: [], deniedTools: [], maxRiskClass: 'HUGE', permissions: [] }), 'agent profile'))).toMatch(
      /^INVALID_ARGUMENT: the agent profile is invalid at maxRiskClass: /,
    );
    expect(codeOf(() => parseDocumentInput(AgentProfileInput, JSON.stringify({ agentId: 'a', allowedTools: [], deniedTools: [], maxRiskClass: 'LOW', permissions: [], extra: 1 }), 'agent profile'))).toMatch(
      /^INVALID_ARGUMENT: the agent profile is invalid: /,
    );
  });

  it('reads --expected-version as a whole number ≥ 0', () => {
    expect(parseExpectedVersion('0')).toBe(0);
    expect(parseExpectedVersion('12')).toBe(12);
    for (const bad of ['-1', '1.5', 'v2', '']) expect(codeOf(() => parseExpectedVersion(bad))).toBe('INVALID_ARGUMENT: --expected-version must be a whole number (0: create only)');
  });
});

describe('kill switches', () => {
  it('takes exactly one target: --tools with tool, --server with server, neither with tenant', () => {
    expect(killSwitchTarget({ target: 'Tool', tools: 'slack.*' })).toEqual({ target: 'tool', tools: 'slack.*' });
    expect(killSwitchTarget({ target: 'server', server: serverId })).toEqual({ target: 'server', server: serverId });
    expect(killSwitchTarget({ target: 'tenant' })).toEqual({ target: 'tenant' });
    expect(codeOf(() => killSwitchTarget({ target: 'tool' }))).toMatch(/--target tool needs --tools/);
    expect(codeOf(() => killSwitchTarget({ target: 'tool', tools: 'bad pattern!' }))).toMatch(/--target tool needs --tools/);
    expect(codeOf(() => killSwitchTarget({ target: 'server', server: 'not-a-uuid' }))).toMatch(/--target server needs --server/);
    expect(codeOf(() => killSwitchTarget({ target: 'tenant', tools: 'x' }))).toBe('INVALID_ARGUMENT: --target tenant takes neither --tools nor --server');
    expect(codeOf(() => killSwitchTarget({ target: 'everything' }))).toBe('INVALID_ARGUMENT: --target must be tenant, tool or server');
  });

  it('engages a switch beside the others, replacing one with the same target', () => {
    const engaged = engageKillSwitch(policy, { target: 'server', server: serverId }, 'incident 2', 'user:bob', at);
    expect(engaged.killSwitches.map((killSwitch) => killSwitch.target)).toEqual(['TOOL', 'SERVER']);
    expect(engaged.killSwitches[1]).toEqual({ target: 'SERVER', mcpServerId: serverId, reason: 'incident 2', engagedBy: 'user:bob', engagedAt: at });
    expect(engaged).not.toHaveProperty('version');
    const again = engageKillSwitch(policy, { target: 'tool', tools: 'github.*' }, 'incident 3', 'user:bob', at);
    expect(again.killSwitches).toEqual([{ target: 'TOOL', tools: 'github.*', reason: 'incident 3', engagedBy: 'user:bob', engagedAt: at }]);
    expect(TenantPolicyInput.safeParse(again).success).toBe(true);
  });

  it('releases only the switch with that target, and says so when none is engaged', () => {
    expect(releaseKillSwitch(policy, { target: 'tool', tools: 'github.*' }).killSwitches).toEqual([]);
    expect(codeOf(() => releaseKillSwitch(policy, { target: 'tool', tools: 'slack.*' }))).toBe('NOT_FOUND: no kill switch is engaged for tools slack.*');
    expect(codeOf(() => releaseKillSwitch(policy, { target: 'tenant' }))).toBe('NOT_FOUND: no kill switch is engaged for the tenant');
  });
});

describe('toolplane policies and calls reconcile', () => {
  it('lists the policy commands in help', async () => {
    const io = capture();
    expect(await runCli(['policies', '--help'], io, [policiesCommands])).toBe(0);
    for (const command of ['agent', 'tenant', 'kill-switch']) expect(io.out()).toContain(command);
  });

  it('refuses before contacting anything: no operator token, no document or two, bad flags', async () => {
    const input = JSON.stringify({ agentId: 'a', allowedTools: [], deniedTools: [], maxRiskClass: 'LOW', permissions: [] });
    const noToken = capture();
    expect(await runCli(['policies', 'agent', 'put', '--json-input', input], noToken, [policiesCommands])).toBe(1);
    expect(noToken.err()).toBe('AUTHENTICATION_FAILED: no operator token: set TOOLPLANE_TOKEN or pass --token-file\n');
    const neither = capture({ TOOLPLANE_TOKEN: 'x' });
    expect(await runCli(['policies', 'tenant', 'put'], neither, [policiesCommands])).toBe(1);
    expect(neither.err()).toBe('INVALID_ARGUMENT: give the document with exactly one of --file F (- for standard input) or --json-input JSON\n');
    const both = capture({ TOOLPLANE_TOKEN: 'x' });
    expect(await runCli(['policies', 'agent', 'put', '--json-input', input, '--file', 'p.json'], both, [policiesCommands])).toBe(1);
    expect(both.err()).toMatch(/^INVALID_ARGUMENT: give the document with exactly one/);
    const target = capture({ TOOLPLANE_TOKEN: 'x' });
    expect(await runCli(['policies', 'kill-switch', 'engage', '--target', 'tool', '--reason', 'r'], target, [policiesCommands])).toBe(1);
    expect(target.err()).toMatch(/^INVALID_ARGUMENT: --target tool needs --tools/);
    const outcome = capture({ TOOLPLANE_TOKEN: 'x' });
    expect(await runCli(['calls', 'reconcile', 'call-1', '--outcome', 'maybe', '--reason', 'r'], outcome, [callsCommands])).toBe(1);
    expect(outcome.err()).toBe('INVALID_ARGUMENT: --outcome must be observed (the effect happened) or failed (it did not)\n');
    const reason = capture({ TOOLPLANE_TOKEN: 'x' });
    expect(await runCli(['calls', 'reconcile', 'call-1', '--outcome', 'failed'], reason, [callsCommands])).not.toBe(0);
    expect(reason.err()).toMatch(/--reason/);
    const show = capture();
    expect(await runCli(['calls', 'show', 'call-1'], show, [callsCommands])).toBe(1);
    expect(show.err()).toBe('AUTHENTICATION_FAILED: no operator token: set TOOLPLANE_TOKEN or pass --token-file\n');
  });
});
