// Releases end to end, as an operator works with them through the CLI: a server is registered only with a Published
// release, and revoking the release while agents are calling its tools retires them with the in-flight policy.
// Every accepted call ends in exactly one terminal state; calls after the revocation are refused naming the release;
// calls parked for an approval end when their approvals are voided (CANCEL_PENDING). Deprecating with FINISH lets a
// parked call still be approved and run, and the effective tool set's explain says which release hid a tool.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adapterCommandSchemas, adapterOperations, approvalCommandSchemas, commandSubject, type ApprovalRequested, type InvocationReply } from '@toolplane/contracts';
import { request } from '@toolplane/messaging';
import { FixtureServer, fixtureServerPath } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { agent, endingOfReply, e2eTenantPolicy, registerServer, startPlatform, waitFor, waitForTools, type Platform } from './platform-harness.js';

const infra = testScope('releases');
let platform: Platform;

const read = ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural'];
const write = ['--effect', 'write', '--risk', 'medium', '--idempotency', 'none'];
const terminal = new Set(['SUCCESS', 'FAILED', 'DENIED', 'UNCERTAIN', 'CANCELLED']);

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

/** Waits until the adapter hides `toolId` because of its release, and returns the reason it gives. */
async function hiddenByRelease(toolId: string) {
  return waitFor(`the adapter to hide ${toolId} for its release`, async () => {
    const reason = (await effectiveTools()).hidden?.find((tool) => tool.toolId === toolId)?.reasons[0];
    return reason?.code === 'RELEASE_NOT_PUBLISHED' ? reason : undefined;
  });
}


/** The terminal status of a call by its key, once it has one; undefined while it has none. */
async function endedAs(idempotencyKey: string) {
  const found = await platform.lookup(idempotencyKey).catch(() => undefined);
  return found?.result === undefined ? undefined : { state: found.state, status: found.result.status, code: found.result.receipt.failure?.code, message: found.result.receipt.failure?.message };
}

/**
 * Publishes `releaseId`, registers server `name` with it (its WRITE tool count_calls, gated by the tenant policy)
 * and parks one call of it for an approval: the call's pending reply, its approval id, and the event recorder,
 * still recording.
 */
async function parkedCallOfRelease(name: string, releaseId: string, idempotencyKey: string) {
  await platform.toolplaneJson('releases', 'publish', releaseId);
  await registerServer(platform, name, [process.execPath, fixtureServerPath(FixtureServer.countingEcho)], { COUNT_FILE: platform.countFile(name) }, [{ tool: 'count_calls', flags: write }], [
    '--release',
    releaseId,
  ]);
  const toolId = `${name}.count_calls`;
  await waitForTools(platform, [toolId]);
  const recorder = await platform.recordEvents();
  const parkedReply = platform.invoke({ toolId, arguments: {}, idempotencyKey }, { timeoutMs: 90_000 });
  const requested = await waitFor('ApprovalRequested', () => recorder.events.find((event): event is ApprovalRequested => event.type === 'ApprovalRequested' && event.metadata.toolId === toolId));
  const { approvalId } = requested.data;
  await waitFor('the approval to be Pending', async () => (await platform.command('approval', 'show', approvalCommandSchemas.show, { approvalId }).catch(() => undefined))?.approval.state === 'Pending');
  return { recorder, parkedReply, approvalId };
}

beforeAll(async () => {
  platform = await startPlatform(infra, 'releases');
  // WRITE is gated: a WRITE call parks for an approval, a READ call runs at once.
  await platform.putTenantPolicy(e2eTenantPolicy({ gateWrites: true }));
  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: ['revoked.*', 'deprecated.*', 'superseded.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
}, 300_000);

afterAll(async () => {
  await platform?.stop();
});

describe('releases', () => {
  it('registers a server only with a Published release, saying in one line to publish it first', { timeout: 60_000 }, async () => {
    const refused = await platform.toolplane('servers', 'register', '--name', 'early', '--stdio', `"${process.execPath}" "${fixtureServerPath(FixtureServer.countingEcho)}"`, '--release', 'r-none');
    expect(refused.code).toBe(1);
    expect(refused.err.trim()).toBe(`NOT_FOUND: the release "r-none" does not exist in ${platform.scope.tenant}/${platform.scope.workspace}: publish it first (toolplane releases publish r-none)`);
    const published = await platform.toolplaneJson<{ created: boolean; release: { state: string } }>('releases', 'publish', 'r-none');
    expect(published).toMatchObject({ created: true, release: { state: 'Published' } });
    expect((await platform.toolplaneJson<{ created: boolean }>('releases', 'publish', 'r-none')).created).toBe(false);
  });

  it('revoking a release under load ends every accepted call exactly once, refuses later calls naming the release, and voids parked calls', { timeout: 240_000 }, async () => {
    await platform.toolplaneJson('releases', 'publish', 'r-revoke');
    const serverId = await registerServer(
      platform,
      'revoked',
      [process.execPath, fixtureServerPath(FixtureServer.countingEcho)],
      { COUNT_FILE: platform.countFile('revoked') },
      [
        { tool: 'count_calls', flags: read },
        { tool: 'echo', flags: write },
      ],
      ['--release', 'r-revoke'],
    );
    await waitForTools(platform, ['revoked.count_calls', 'revoked.echo']);

    interface Issued {
      readonly key: string;
      readonly toolId: string;
      readonly issuedAt: number;
      reply?: InvocationReply | Error;
    }
    const issued: Issued[] = [];
    const pending: Promise<void>[] = [];
    let stop = false;
    // Six callers of the READ tool in a loop; two callers park WRITE calls for an approval nobody gives.
    const caller = async (n: number) => {
      for (let i = 0; !stop; i++) {
        const gated = n < 2;
        const call: Issued = { key: `c${n}-${i}`, toolId: gated ? 'revoked.echo' : 'revoked.count_calls', issuedAt: Date.now() };
        issued.push(call);
        const settled = platform
          .invoke({ toolId: call.toolId, arguments: gated ? { text: call.key } : {}, idempotencyKey: call.key }, { timeoutMs: 60_000 })
          .then(
            (reply) => void (call.reply = reply),
            (error: unknown) => void (call.reply = error instanceof Error ? error : new Error(String(error))),
          );
        if (gated) {
          pending.push(settled);
          await new Promise((resolve) => setTimeout(resolve, 150));
        } else {
          await settled;
        }
      }
    };
    const callers = Array.from({ length: 8 }, (_, n) => caller(n));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const revoked = await platform.toolplaneJson<{ release: { state: string; inFlight: string }; retiredDescriptors: number }>('releases', 'revoke', 'r-revoke', '--reason', 'leaked key');
    expect(revoked).toMatchObject({ release: { state: 'Revoked', inFlight: 'CANCEL_PENDING' }, retiredDescriptors: 2 });
    // From the moment the adapter knows, a new call is refused naming the release.
    expect(await hiddenByRelease('revoked.count_calls')).toEqual({ code: 'RELEASE_NOT_PUBLISHED', message: 'revoked.count_calls@1 is not active (ReleaseRevoked: release r-revoke was revoked)' });
    const knownAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    stop = true;
    await Promise.all(callers);
    await Promise.all(pending);

    // Every accepted call ended, in exactly one terminal state, within a bounded wait.
    const endings = new Map<string, NonNullable<Awaited<ReturnType<typeof endedAs>>>>();
    const unended = async () =>
      Promise.all(
        issued
          .filter((call) => !endings.has(call.key))
          .slice(0, 10)
          .map(async (call) => ({ ...call, found: await platform.lookup(call.key).then((found) => ({ state: found.state, approvalId: found.approvalId }), (error: unknown) => String(error)) })),
      );
    await waitFor(
      'every call to end',
      async () => {
        for (const call of issued) {
          if (endings.has(call.key)) continue;
          const ended = await endedAs(call.key);
          if (ended !== undefined) endings.set(call.key, ended);
        }
        return endings.size === issued.length;
      },
      60_000,
    ).catch(async (error: unknown) => {
      throw new Error(`${String(error)}: ${issued.length - endings.size} of ${issued.length} calls did not end, e.g. ${JSON.stringify(await unended())} (revocation known at ${knownAt})`);
    });
    for (const call of issued) {
      const ended = endings.get(call.key);
      expect(terminal.has(ended?.status ?? 'none'), `${call.key} ended ${JSON.stringify(ended)}`).toBe(true);
      // The caller was answered with that same ending (a parked call's caller too, once its approval was voided).
      if (call.reply !== undefined && !(call.reply instanceof Error) && call.reply.ok) expect(call.reply.data.status).toBe(ended?.status);
    }
    const after = issued.filter((call) => call.issuedAt > knownAt);
    expect(after.length).toBeGreaterThan(0);
    for (const call of after) {
      expect(endings.get(call.key)).toMatchObject({ status: 'DENIED', code: 'CONFLICT', message: `${call.toolId}@1 is not active (ReleaseRevoked: release r-revoke was revoked)` });
    }
    // Nobody approved: no WRITE ran. Those parked before the revocation were voided (CANCEL_PENDING) or cancelled.
    const gated = issued.filter((call) => call.toolId === 'revoked.echo' && call.issuedAt < knownAt);
    for (const call of gated) expect(['DENIED', 'CANCELLED']).toContain(endings.get(call.key)?.status);
    const voided = gated.filter((call) => endings.get(call.key)?.message?.startsWith('the approval is void') === true);
    expect(voided.length).toBeGreaterThan(0);
    // READ calls accepted before the revocation ran or were cancelled before they started; none is left hanging.
    const reads = issued.filter((call) => call.toolId === 'revoked.count_calls' && call.issuedAt < knownAt);
    expect(reads.some((call) => endings.get(call.key)?.status === 'SUCCESS')).toBe(true);

    // Binding anew is refused, naming the release and its state; the release reads back as revoked.
    const bind = await platform.toolplane('tools', 'bind', serverId, 'count_calls', ...read);
    expect(bind.code).toBe(1);
    expect(bind.err.trim()).toBe('CONFLICT: cannot bind a tool of server revoked: its release r-revoke is Revoked, not Published');
    expect(await platform.toolplaneJson('releases', 'get', 'r-revoke')).toMatchObject({ releaseId: 'r-revoke', state: 'Revoked', inFlight: 'CANCEL_PENDING', reason: 'leaked key' });
    // The same revocation again retires nothing more; revocation is final.
    expect(await platform.toolplaneJson('releases', 'revoke', 'r-revoke')).toMatchObject({ retiredDescriptors: 0 });
    const deprecate = await platform.toolplane('releases', 'deprecate', 'r-revoke');
    expect(deprecate.err.trim()).toBe('CONFLICT: release r-revoke is Revoked: it cannot be deprecated (revocation is final)');
  });

  it('deprecating with FINISH leaves a parked call approvable: it runs once approved, while new calls are refused', { timeout: 120_000 }, async () => {
    const { recorder, parkedReply, approvalId } = await parkedCallOfRelease('deprecated', 'r-deprecate', 'parked-finish');

    const deprecated = await platform.toolplaneJson<{ release: { state: string; inFlight: string }; retiredDescriptors: number }>('releases', 'deprecate', 'r-deprecate', '--reason', 'superseded');
    expect(deprecated).toMatchObject({ release: { state: 'Deprecated', inFlight: 'FINISH' }, retiredDescriptors: 1 });
    expect(await hiddenByRelease('deprecated.count_calls')).toEqual({ code: 'RELEASE_NOT_PUBLISHED', message: 'deprecated.count_calls@1 is not active (ReleaseDeprecated: release r-deprecate was deprecated)' });
    // The approval service heard of the retirement (ToolDescriptorRetired, inFlight FINISH) and kept the approval.
    await waitFor('the retirement event', () => recorder.events.some((event) => event.type === 'ToolDescriptorRetired' && event.data.toolId === 'deprecated.count_calls' && event.data.inFlight === 'FINISH'));
    recorder.stop();
    expect((await platform.command('approval', 'show', approvalCommandSchemas.show, { approvalId })).approval.state).toBe('Pending');

    expect(endingOfReply(await platform.invoke({ toolId: 'deprecated.count_calls', arguments: {}, idempotencyKey: 'after-deprecation' }))).toEqual({
      status: 'DENIED',
      code: 'CONFLICT',
      message: 'deprecated.count_calls@1 is not active (ReleaseDeprecated: release r-deprecate was deprecated)',
    });
    expect(await platform.toolplane('approvals', 'approve', approvalId, '--reason', 'finish it')).toMatchObject({ code: 0, err: '' });
    expect(endingOfReply(await parkedReply).status).toBe('SUCCESS');
    expect(await platform.executions('deprecated', 'count_calls')).toBe(1);

    const listed = await platform.toolplaneJson<{ items: { releaseId: string; state: string }[] }>('releases', 'list');
    expect(listed.items.map((release) => [release.releaseId, release.state])).toEqual(
      expect.arrayContaining([
        ['r-deprecate', 'Deprecated'],
        ['r-none', 'Published'],
      ]),
    );
  });

  it('revoking a deprecated release retires its tools again with the revocation\'s policy: a call parked under FINISH is voided then, and never runs', { timeout: 120_000 }, async () => {
    const { recorder, parkedReply, approvalId } = await parkedCallOfRelease('superseded', 'r-superseded', 'parked-then-revoked');

    expect(await platform.toolplaneJson('releases', 'deprecate', 'r-superseded')).toMatchObject({ release: { state: 'Deprecated', inFlight: 'FINISH' }, retiredDescriptors: 1 });
    await waitFor('the deprecation event', () => recorder.events.some((event) => event.type === 'ToolDescriptorRetired' && event.data.toolId === 'superseded.count_calls' && event.data.inFlight === 'FINISH'));
    expect((await platform.command('approval', 'show', approvalCommandSchemas.show, { approvalId })).approval.state).toBe('Pending');

    // The revocation retires the deprecated version again (one descriptor), so CANCEL_PENDING reaches the parked call.
    expect(await platform.toolplaneJson('releases', 'revoke', 'r-superseded', '--reason', 'withdrawn')).toMatchObject({ release: { state: 'Revoked', inFlight: 'CANCEL_PENDING' }, retiredDescriptors: 1 });
    await waitFor('the revocation event', () =>
      recorder.events.some((event) => event.type === 'ToolDescriptorRetired' && event.data.toolId === 'superseded.count_calls' && event.data.reason === 'ReleaseRevoked' && event.data.inFlight === 'CANCEL_PENDING'),
    );
    recorder.stop();
    expect(await hiddenByRelease('superseded.count_calls')).toEqual({ code: 'RELEASE_NOT_PUBLISHED', message: 'superseded.count_calls@1 is not active (ReleaseRevoked: release r-superseded was revoked)' });
    const ended = endingOfReply(await parkedReply);
    expect(ended.status).toBe('DENIED');
    expect(ended.message).toMatch(/^the approval is void/);
    expect((await platform.command('approval', 'show', approvalCommandSchemas.show, { approvalId })).approval.state).toBe('Voided');
    const approve = await platform.toolplane('approvals', 'approve', approvalId);
    expect(approve.code).toBe(1);
    expect(await platform.executions('superseded', 'count_calls')).toBe(0);
    // Again: nothing left to retire.
    expect(await platform.toolplaneJson('releases', 'revoke', 'r-superseded')).toMatchObject({ retiredDescriptors: 0 });
  });
});
