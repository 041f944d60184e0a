// A server's governance policy bundle end to end, as an operator works with it through the CLI: the registry refuses a
// server naming a bundle the tool adapter does not hold, reports at bind time the agent profiles a tool's class
// conflicts with, and every call through a server naming a bundle is evaluated against it besides the agent's profile
// and the tenant's policy, with the bundle named in the reasons; a changed bundle governs the next call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adapterCommandSchemas, adapterOperations, commandSubject, type PolicyBundleInput } from '@toolplane/contracts';
import { request } from '@toolplane/messaging';
import { FixtureServer, fixtureServerPath } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { agent, endingOfReply, e2eTenantPolicy, registerServer, startPlatform, waitForTools, type Platform } from './platform-harness.js';

const infra = testScope('bundles');
let platform: Platform;

const write = ['--effect', 'write', '--risk', 'medium', '--idempotency', 'none'];

function bundle(name: string, overrides: Partial<PolicyBundleInput> = {}): PolicyBundleInput {
  return { name, deniedSideEffectClasses: [], approvalRequiredClasses: [], rateLimits: [], classRaises: [], commands: { block: [], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' }, ...overrides };
}

/** `toolplane policies bundle put` of `input`, as an operator would; the stored bundle's version. */
async function putBundle(input: PolicyBundleInput, expectedVersion?: number): Promise<number> {
  const flags = expectedVersion === undefined ? [] : ['--expected-version', String(expectedVersion)];
  return (await platform.toolplaneJson<{ version: number }>('policies', 'bundle', 'put', '--json-input', JSON.stringify(input), ...flags)).version;
}

/** The agent's effective tool set, with the hidden tools and why. */
async function effectiveTools() {
  return request(platform.messaging, {
    subject: commandSubject(platform.scope, 'adapter', adapterOperations.effectiveTools),
    requestSchema: adapterCommandSchemas.effectiveTools.request,
    replySchema: adapterCommandSchemas.effectiveTools.reply,
    body: { contextToken: await platform.agentToken(), explain: true },
    timeoutMs: 10_000,
  });
}


beforeAll(async () => {
  platform = await startPlatform(infra, 'bundles');
  // WRITE is not gated by the tenant: only the bundle stands between the agent and the tool.
  await platform.putTenantPolicy(e2eTenantPolicy({ gateWrites: false }));
  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: ['strict.*', 'plain.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
}, 300_000);

afterAll(async () => {
  await platform?.stop();
});

describe('a server policy bundle', () => {
  it('is checked at registration: a server naming a bundle that does not exist is refused in one line', { timeout: 60_000 }, async () => {
    const refused = await platform.toolplane('servers', 'register', '--name', 'nowhere', '--stdio', `"${process.execPath}" "${fixtureServerPath(FixtureServer.countingEcho)}"`, '--policy', 'no-such-bundle');
    expect(refused.code).toBe(1);
    expect(refused.err.trim()).toBe(`INVALID_ARGUMENT: the policy bundle "no-such-bundle" does not exist in tenant ${platform.scope.tenant}: create it first (toolplane policies bundle put), or name default`);
  });

  it('refuses a WRITE the tenant policy allows while it denies WRITE, naming the bundle; a changed bundle governs the next call', { timeout: 120_000 }, async () => {
    const version = await putBundle(bundle('payments-strict', { deniedSideEffectClasses: ['WRITE'] }));
    const counting = { COUNT_FILE: platform.countFile('strict') };
    await registerServer(platform, 'strict', [process.execPath, fixtureServerPath(FixtureServer.countingEcho)], counting, [{ tool: 'count_calls', flags: write }], ['--policy', 'payments-strict']);
    await registerServer(platform, 'plain', [process.execPath, fixtureServerPath(FixtureServer.countingEcho)], { COUNT_FILE: platform.countFile('plain') }, [{ tool: 'count_calls', flags: write }]);
    await waitForTools(platform, ['strict.count_calls', 'plain.count_calls']);

    expect(endingOfReply(await platform.invoke({ toolId: 'strict.count_calls', arguments: {}, idempotencyKey: 'strict-1' }))).toEqual({
      status: 'DENIED',
      code: 'AUTHORIZATION_DENIED',
      message: 'policy bundle "payments-strict" denies WRITE',
    });
    expect(await platform.executions('strict', 'count_calls')).toBe(0);
    // The agent is not offered it either, and is told why.
    const offered = await effectiveTools();
    expect(offered.tools.map((tool) => tool.toolId)).toEqual(['plain.count_calls']);
    expect(offered.hidden?.find((tool) => tool.toolId === 'strict.count_calls')?.reasons).toEqual([{ code: 'CLASS_DENIED', message: 'policy bundle "payments-strict" denies WRITE' }]);
    // The same tool through a server naming no bundle runs: the tenant policy allows it.
    expect(endingOfReply(await platform.invoke({ toolId: 'plain.count_calls', arguments: {}, idempotencyKey: 'plain-1' })).status).toBe('SUCCESS');

    await putBundle(bundle('payments-strict'), version);
    expect((await effectiveTools()).tools.map((tool) => tool.toolId)).toEqual(['plain.count_calls', 'strict.count_calls']);
    expect(endingOfReply(await platform.invoke({ toolId: 'strict.count_calls', arguments: {}, idempotencyKey: 'strict-2' })).status).toBe('SUCCESS');
    expect(await platform.executions('strict', 'count_calls')).toBe(1);
  });

  it('binding a WRITE tool listed by an agent limited to READ reports the conflict at bind time', { timeout: 120_000 }, async () => {
    await platform.putAgentProfile({ agentId: 'reader', allowedTools: ['conflicted.*'], deniedTools: [], maxRiskClass: 'HIGH', maxSideEffectClass: 'READ', permissions: [] });
    const serverId = await registerServer(platform, 'conflicted', [process.execPath, fixtureServerPath(FixtureServer.countingEcho)], {}, []);
    const bound = await platform.toolplaneJson<{ conflicts?: { agentId: string; code: string; reason: string }[]; conflictsUnknown?: string }>('tools', 'bind', serverId, 'echo', ...write);
    expect(bound.conflictsUnknown).toBeUndefined();
    expect(bound.conflicts).toEqual([{ agentId: 'reader', code: 'CLASS_ABOVE_AGENT_MAX', reason: 'conflicted.echo is WRITE; the agent lists it (pattern conflicted.*) but may cause at most READ' }]);
    // A READ binding of another tool conflicts with nobody.
    const readBound = await platform.toolplaneJson<{ conflicts?: unknown[] }>('tools', 'bind', serverId, 'count_calls', '--effect', 'read', '--risk', 'low', '--idempotency', 'natural');
    expect(readBound.conflicts).toEqual([]);
    // The operator's text output says so too.
    const text = await platform.toolplane('tools', 'bind', serverId, 'echo', ...write);
    expect(text.out).toContain('agent conflicts: 1 agent profile list the tool but will be denied it');
  });
});
