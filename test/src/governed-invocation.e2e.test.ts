// The governed pipeline end to end: registry, approval, secret-broker, tool-adapter and audit-projector as processes
// over real NATS and FerretDB; tools registered through the registry's commands, policy written by an operator,
// calls published by an agent runtime, approvals decided by a human through the CLI.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalCommandSchemas, auditCommandSchemas, verifyReceipt, type ApprovalRequested, type InvocationReceived, type InvocationReply, type TenantPolicyInput, type ToolCallStarted } from '@toolplane/contracts';
import { FixtureServer, fixtureServerPath, realServerPath } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { agent, e2eTenantPolicy, operator, registerServer, startPlatform, waitFor, waitForTools, type EventRecorder, type Platform } from './platform-harness.js';

const infra = testScope('governed');
let platform: Platform;
let killableServerId: string;

// WRITE is gated here (the default policy gates only the classes above it).
const basePolicy: TenantPolicyInput = e2eTenantPolicy({
  gateWrites: true,
  rateLimits: [{ tools: 'limited.*', per: 'TOOL', limit: 1, windowMs: 86_400_000 }],
});

const read = ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural'];

beforeAll(async () => {
  platform = await startPlatform(infra, 'governed');
  const node = process.execPath;
  const counting = (name: string, bindings: Parameters<typeof registerServer>[4]) =>
    registerServer(platform, name, [node, fixtureServerPath(FixtureServer.countingEcho)], { COUNT_FILE: platform.countFile(name) }, bindings);
  await registerServer(platform, 'everything', [node, realServerPath('everything'), 'stdio'], {}, [
    { tool: 'echo', flags: read },
    { tool: 'get-sum', flags: read },
  ]);
  await counting('fixture', [{ tool: 'count_calls', flags: read }]);
  await counting('gated', [{ tool: 'count_calls', flags: ['--effect', 'write', '--risk', 'medium', '--idempotency', 'none'] }]);
  await counting('limited', [{ tool: 'count_calls', flags: read }]);
  killableServerId = await counting('killable', [{ tool: 'count_calls', flags: read }]);
  // `mutate` bumps the version in its state file once per execution: the execution counter of a tool whose schema
  // can be violated (`hide` is a boolean).
  await registerServer(platform, 'mutable', [node, fixtureServerPath(FixtureServer.mutable)], { STATE_FILE: platform.countFile('mutable') }, [{ tool: 'mutate', flags: read }]);
  // Everything but everything.get-sum: that one stays outside the agent's profile.
  await platform.putAgentProfile({
    agentId: agent.agentId,
    allowedTools: ['everything.echo', 'fixture.*', 'gated.*', 'limited.*', 'killable.*', 'mutable.*'],
    deniedTools: [],
    maxRiskClass: 'HIGH',
    permissions: [],
  });
  await platform.putTenantPolicy(basePolicy);
  await waitForTools(platform, ['everything.echo', 'everything.get-sum', 'fixture.count_calls', 'gated.count_calls', 'limited.count_calls', 'killable.count_calls', 'mutable.mutate']);
}, 300_000);

afterAll(async () => {
  await platform?.stop();
});

/** How often the mutable fixture's `mutate` ran: its state file's version starts at 1 and each run adds one. */
async function mutations(): Promise<number> {
  try {
    return (JSON.parse(await readFile(platform.countFile('mutable'), 'utf8')) as { version: number }).version - 1;
  } catch {
    return 0;
  }
}

function data(reply: InvocationReply) {
  if (!reply.ok) throw new Error(`the call was refused: ${reply.error.code}: ${reply.error.message}`);
  return reply.data;
}

describe('a governed call', () => {
  it('runs a READ call against @modelcontextprotocol/server-everything and signs a receipt the adapter’s public key verifies', { timeout: 60_000 }, async () => {
    const recorder = await platform.recordEvents();
    const result = data(await platform.invoke({ toolId: 'everything.echo', arguments: { message: 'hello through the plane' }, idempotencyKey: 'echo-1' }));
    expect(result.status).toBe('SUCCESS');
    expect(result.textContent).toBe('Echo: hello through the plane');
    expect(result.provenance).toBe('untrusted-tool-data');
    expect(result.receipt).toMatchObject({ state: 'Observed', toolId: 'everything.echo', toolVersion: '1', attempt: 1 });
    expect(result.receipt.signature.keyId).toBe(platform.receiptKeyId);
    expect(verifyReceipt(result.receipt, platform.receiptKeys)).toMatchObject({ valid: true });
    // The signature covers the receipt: one changed field no longer verifies.
    expect(verifyReceipt({ ...result.receipt, state: 'Failed' }, platform.receiptKeys)).toMatchObject({ valid: false });
    const types = await waitFor('the terminal event', () => {
      const seen = recorder.events.filter((event) => 'invocationId' in event.metadata && event.metadata.invocationId === result.receipt.invocationId).map((event) => event.type);
      return seen.includes('ToolCallCompleted') ? seen : undefined;
    });
    recorder.stop();
    expect(types).toEqual(['InvocationReceived', 'SandboxLeased', 'ToolCallStarted', 'SandboxReleased', 'ToolCallCompleted']);
  });

  it('denies schema-invalid arguments with INVALID_ARGUMENT and never runs the tool', { timeout: 60_000 }, async () => {
    const invalid = data(await platform.invoke({ toolId: 'mutable.mutate', arguments: { hide: 'yes' }, idempotencyKey: 'mutate-invalid' }));
    expect(invalid.status).toBe('DENIED');
    expect(invalid.receipt.failure?.code).toBe('INVALID_ARGUMENT');
    const echo = data(await platform.invoke({ toolId: 'everything.echo', arguments: { message: 42 }, idempotencyKey: 'echo-invalid' }));
    expect(echo.receipt.failure?.code).toBe('INVALID_ARGUMENT');
    expect(await mutations()).toBe(0);
    // The same tool with valid arguments runs, and the fixture counts that one execution.
    const valid = data(await platform.invoke({ toolId: 'mutable.mutate', arguments: { hide: false }, idempotencyKey: 'mutate-valid' }));
    expect(valid.status).toBe('SUCCESS');
    expect(await mutations()).toBe(1);
  });

  it('denies a bound tool outside the agent’s profile with AUTHORIZATION_DENIED', { timeout: 60_000 }, async () => {
    const tools = await platform.toolplaneJson<{ tools: { toolId?: string; invocable: boolean }[] }>('tools', 'list');
    expect(tools.tools.find((tool) => tool.toolId === 'everything.get-sum')?.invocable).toBe(true);
    const result = data(await platform.invoke({ toolId: 'everything.get-sum', arguments: { a: 1, b: 2 }, idempotencyKey: 'outside-profile' }));
    expect(result.status).toBe('DENIED');
    expect(result.receipt.failure?.code).toBe('AUTHORIZATION_DENIED');
    expect(result.textContent).toBeUndefined();
  });

  it('denies a call over the tenant’s rate limit with RATE_LIMITED, running only the admitted one', { timeout: 60_000 }, async () => {
    const first = data(await platform.invoke({ toolId: 'limited.count_calls', arguments: {}, idempotencyKey: 'limited-1' }));
    const second = data(await platform.invoke({ toolId: 'limited.count_calls', arguments: {}, idempotencyKey: 'limited-2' }));
    expect(first.status).toBe('SUCCESS');
    expect(second.status).toBe('DENIED');
    expect(second.receipt.failure?.code).toBe('RATE_LIMITED');
    expect(await platform.executions('limited', 'count_calls')).toBe(1);
  });

  it('denies every call of a server whose kill switch is engaged, and runs them again once it is released', { timeout: 60_000 }, async () => {
    expect(data(await platform.invoke({ toolId: 'killable.count_calls', arguments: {}, idempotencyKey: 'before-switch' })).status).toBe('SUCCESS');
    await platform.putTenantPolicy({
      ...basePolicy,
      killSwitches: [{ target: 'SERVER', mcpServerId: killableServerId, reason: 'incident 42', engagedBy: operator.principal, engagedAt: new Date().toISOString() }],
    });
    try {
      const denied = data(await platform.invoke({ toolId: 'killable.count_calls', arguments: {}, idempotencyKey: 'during-switch' }));
      expect(denied.status).toBe('DENIED');
      expect(denied.receipt.failure?.code).toBe('AUTHORIZATION_DENIED');
      expect(denied.receipt.failure?.message).toContain('incident 42');
      expect(await platform.executions('killable', 'count_calls')).toBe(1);
    } finally {
      await platform.putTenantPolicy(basePolicy);
    }
    expect(data(await platform.invoke({ toolId: 'killable.count_calls', arguments: {}, idempotencyKey: 'after-switch' })).status).toBe('SUCCESS');
    expect(await platform.executions('killable', 'count_calls')).toBe(2);
  });

  it('executes one idempotency key once and answers every copy with the identical receipt; other arguments are CONFLICT', { timeout: 60_000 }, async () => {
    const first = await platform.invoke({ toolId: 'fixture.count_calls', arguments: { n: 1 }, idempotencyKey: 'once' });
    // Another message id, so JetStream's duplicate window does not hide the repeat: the adapter's store must.
    const second = await platform.invoke({ toolId: 'fixture.count_calls', arguments: { n: 1 }, idempotencyKey: 'once' }, { msgId: 'once-again' });
    expect(data(first).status).toBe('SUCCESS');
    expect(second).toEqual(first);
    expect(await platform.executions('fixture', 'count_calls')).toBe(1);

    const clash = await platform.invoke({ toolId: 'fixture.count_calls', arguments: { n: 2 }, idempotencyKey: 'once' });
    expect(clash).toMatchObject({ ok: false, error: { code: 'CONFLICT' } });
    expect(await platform.executions('fixture', 'count_calls')).toBe(1);
  });
});

interface Parked {
  readonly requested: ApprovalRequested;
  readonly reply: Promise<InvocationReply>;
}

/** Calls the gated WRITE tool and waits until the call is parked: approval Pending, call AwaitingApproval, nothing run. */
async function parkGatedCall(idempotencyKey: string): Promise<Parked> {
  const recorder: EventRecorder = await platform.recordEvents();
  const before = await platform.executions('gated', 'count_calls');
  const reply = platform.invoke({ toolId: 'gated.count_calls', arguments: {}, idempotencyKey }, { timeoutMs: 90_000 });
  const requested = await waitFor('ApprovalRequested', () =>
    recorder.events.find((event): event is ApprovalRequested => event.type === 'ApprovalRequested' && event.metadata.toolId === 'gated.count_calls'),
  );
  recorder.stop();
  const { approvalId } = requested.data;
  await waitFor('the approval service to hold the approval', async () => {
    const shown = await platform.command('approval', 'show', approvalCommandSchemas.show, { approvalId }).catch(() => undefined);
    return shown?.approval.state === 'Pending';
  });
  const call = await waitFor('the audit record of the parked call', async () => {
    const shown = await platform.command('audit', 'getCall', auditCommandSchemas.getCall, { toolCallId: requested.metadata.toolCallId }).catch(() => undefined);
    return shown?.call.state === 'AwaitingApproval' ? shown.call : undefined;
  });
  expect(call).toMatchObject({ approvalId, toolId: 'gated.count_calls', attemptCount: 1 });
  expect(await platform.executions('gated', 'count_calls')).toBe(before);
  return { requested, reply };
}

describe('a gated WRITE', () => {
  it('waits for approval, refuses self-approval, and runs once when an operator approves', { timeout: 120_000 }, async () => {
    const { requested, reply } = await parkGatedCall('gated-approved');
    const { approvalId } = requested.data;
    // The principal the agent acts for may not approve its own call, even holding the approver role.
    const requester = await platform.operatorToken({ principal: agent.principal, roles: ['approver'] });
    await expect(platform.command('approval', 'approve', approvalCommandSchemas.approve, { approvalId }, requester)).rejects.toMatchObject({ code: 'AUTHORIZATION_DENIED' });
    expect(await platform.executions('gated', 'count_calls')).toBe(0);

    const approved = await platform.toolplane('approvals', 'approve', approvalId, '--reason', 'looks right');
    expect(approved).toMatchObject({ code: 0, err: '' });
    const result = data(await reply);
    expect(result.status).toBe('SUCCESS');
    expect(result.receipt).toMatchObject({ state: 'Observed', approvalId });
    expect(verifyReceipt(result.receipt, platform.receiptKeys)).toMatchObject({ valid: true });
    expect(await platform.executions('gated', 'count_calls')).toBe(1);
    const shown = await platform.command('approval', 'show', approvalCommandSchemas.show, { approvalId });
    expect(shown.approval).toMatchObject({ state: 'Consumed', decidedBy: operator.principal });
  });

  it('waits for its approval past the caller’s deadline, runs once when approved, and a caller re-attaching by key gets the outcome', { timeout: 120_000 }, async () => {
    const before = await platform.executions('gated', 'count_calls');
    const recorder = await platform.recordEvents();
    const idempotencyKey = 'gated-approved-late';
    // The caller gives the call a short budget and waits no longer than that for the reply. (Not shorter: after the
    // approval the same budget has to cover the stdio server's cold start.)
    const budgetMs = 6_000;
    const callerWait = platform.invoke({ toolId: 'gated.count_calls', arguments: {}, idempotencyKey, timeoutMs: budgetMs }, { timeoutMs: budgetMs }).then(
      (reply) => ({ reply }),
      (error: unknown) => ({ error }),
    );
    const received = await waitFor('InvocationReceived', () =>
      recorder.events.find((event): event is InvocationReceived => event.type === 'InvocationReceived' && event.data.idempotencyKey === idempotencyKey),
    );
    const requested = await waitFor('ApprovalRequested', () =>
      recorder.events.find((event): event is ApprovalRequested => event.type === 'ApprovalRequested' && event.metadata.invocationId === received.metadata.invocationId),
    );
    const originalDeadline = received.data.deadline ?? '';
    expect(Date.parse(originalDeadline) - Date.parse(received.metadata.occurredAt)).toBe(budgetMs);
    // The approval lives for the tenant policy's TTL (ten minutes here), not for the caller's few seconds.
    expect(Date.parse(requested.data.expiresAt) - Date.parse(requested.metadata.occurredAt)).toBe(basePolicy.approvalTtlMs);
    // No answer while the call waits for a human: the caller's wait ends first.
    expect(await callerWait).toMatchObject({ error: expect.any(Error) as unknown });
    await waitFor('the call’s original deadline to pass', () => Date.now() > Date.parse(originalDeadline) + 1_000);

    // Past its deadline the call is still parked, and its approval still open.
    const { approvalId } = requested.data;
    expect(await platform.lookup(idempotencyKey)).toMatchObject({ state: 'AwaitingApproval', invocationId: received.metadata.invocationId });
    expect((await platform.command('approval', 'show', approvalCommandSchemas.show, { approvalId })).approval.state).toBe('Pending');
    expect(await platform.executions('gated', 'count_calls')).toBe(before);

    // The principal the agent acts for may not approve its own call; another operator does.
    const requester = await platform.operatorToken({ principal: agent.principal, roles: ['approver'] });
    await expect(platform.command('approval', 'approve', approvalCommandSchemas.approve, { approvalId }, requester)).rejects.toMatchObject({ code: 'AUTHORIZATION_DENIED' });
    expect(await platform.toolplane('approvals', 'approve', approvalId, '--reason', 'late but fine')).toMatchObject({ code: 0, err: '' });

    // A caller re-attaching by key gets the one outcome.
    const attached = await waitFor('the approved call to end', async () => (await platform.lookup(idempotencyKey)).result);
    expect(attached.receipt.failure).toBeUndefined();
    expect(attached.status).toBe('SUCCESS');
    expect(attached.receipt).toMatchObject({ state: 'Observed', approvalId, invocationId: received.metadata.invocationId, attempt: 1 });
    expect(verifyReceipt(attached.receipt, platform.receiptKeys)).toMatchObject({ valid: true });
    expect(await platform.executions('gated', 'count_calls')).toBe(before + 1);
    // It ran with a fresh execution budget: a deadline after the original one.
    const started = await waitFor('ToolCallStarted', () =>
      recorder.events.find((event): event is ToolCallStarted => event.type === 'ToolCallStarted' && event.metadata.invocationId === received.metadata.invocationId),
    );
    recorder.stop();
    expect(Date.parse(started.data.deadline)).toBeGreaterThan(Date.parse(originalDeadline));
    expect((await platform.command('approval', 'show', approvalCommandSchemas.show, { approvalId })).approval).toMatchObject({ state: 'Consumed', decidedBy: operator.principal });
  });

  it('ends Denied with APPROVAL_REJECTED when the operator rejects it, never running it', { timeout: 120_000 }, async () => {
    const before = await platform.executions('gated', 'count_calls');
    const { requested, reply } = await parkGatedCall('gated-rejected');
    const rejected = await platform.toolplane('approvals', 'reject', requested.data.approvalId, '--reason', 'not today');
    expect(rejected).toMatchObject({ code: 0, err: '' });
    const result = data(await reply);
    expect(result.status).toBe('DENIED');
    expect(result.receipt.failure?.code).toBe('APPROVAL_REJECTED');
    expect(await platform.executions('gated', 'count_calls')).toBe(before);
  });

  it('ends Denied with APPROVAL_EXPIRED when nobody decides within the tenant’s approval TTL', { timeout: 120_000 }, async () => {
    const before = await platform.executions('gated', 'count_calls');
    await platform.putTenantPolicy({ ...basePolicy, approvalTtlMs: 8_000 });
    let parked: Parked;
    try {
      parked = await parkGatedCall('gated-expired');
    } finally {
      await platform.putTenantPolicy(basePolicy);
    }
    const result = data(await parked.reply);
    expect(result.status).toBe('DENIED');
    expect(result.receipt.failure?.code).toBe('APPROVAL_EXPIRED');
    const shown = await platform.command('approval', 'show', approvalCommandSchemas.show, { approvalId: parked.requested.data.approvalId });
    expect(shown.approval.state).toBe('Expired');
    // A decision after expiry changes nothing.
    const late = await platform.toolplane('approvals', 'approve', parked.requested.data.approvalId);
    expect(late.code).toBe(1);
    expect(await platform.executions('gated', 'count_calls')).toBe(before);
  });
});
