// MongoDB (a FerretDB of this file's own: the shared one serves other tests) stopped under the platform. JetStream is
// the record and MongoDB only holds read models, so every service whose calls do not need it starts again while it is
// away, reports ready (naming it degraded) and a call is governed; the audit projector, whose only job is the read
// models, starts too but reports not ready, holds the call's events, and writes them once MongoDB is back. It runs with
// one delivery per event: the events it held while MongoDB was away were never nak'ed (nor dead-lettered).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditCommandSchemas, streams, type InvocationReply, type RuntimeToolCallView } from '@toolplane/contracts';
import { realServerPath } from '@toolplane/mcp/testing';
import { consumerProgress, streamPosition } from '@toolplane/messaging';
import { startPrivateFerretDb, testScope, type PrivateFerretDb } from '@toolplane/testing';
import { agent, registerServer, startPlatform, waitFor, waitForTools, type Platform, type PlatformService } from './platform-harness.js';

const infra = testScope('store_outage');
/** The services with MongoDB whose calls run on JetStream alone. */
const jetStreamOnly = ['registry', 'secret-broker', 'approval', 'tool-adapter'] as const satisfies readonly PlatformService[];
let ferret: PrivateFerretDb;
let platform: Platform;

beforeAll(async () => {
  ferret = await startPrivateFerretDb('e2e-ferretdb-');
  // A read of the absent MongoDB fails within two seconds rather than the default ten.
  platform = await startPlatform({ ...infra, mongoUrl: ferret.url }, 'outage', { env: { MONGODB_CONNECT_TIMEOUT_MS: '2000' } });
  await registerServer(platform, 'everything', [process.execPath, realServerPath('everything'), 'stdio'], {}, [
    { tool: 'echo', flags: ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural'] },
  ]);
  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: ['everything.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
  await waitForTools(platform, ['everything.echo']);
}, 300_000);

afterAll(async () => {
  await platform?.stop();
  await ferret?.stop();
});

async function readyz(name: PlatformService): Promise<{ status: number; body: { status: string; checks: Record<string, string> } }> {
  const res = await fetch(`${platform.httpUrl(name)}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; checks: Record<string, string> } };
}

/** `toolplane_store_up` of a service: 1 while MongoDB answers it, 0 otherwise. */
async function storeUp(name: PlatformService): Promise<number | undefined> {
  const value = /^toolplane_store_up\{[^}]*\} (\d+)$/m.exec(await (await fetch(`${platform.httpUrl(name)}/metrics`)).text())?.[1];
  return value === undefined ? undefined : Number(value);
}

function data(reply: InvocationReply) {
  if (!reply.ok) throw new Error(`the call was refused: ${reply.error.code}: ${reply.error.message}`);
  return reply.data;
}

describe('MongoDB stopped under the platform', () => {
  it('services whose calls do not need it start, report ready and govern a call; the audit projector waits, not ready, and catches up once it is back', { timeout: 300_000 }, async () => {
    // Everything stored so far is in the projections, so what the projector holds below is the call's events alone.
    await waitFor('the audit projector to acknowledge every event so far', async () => {
      const [{ lastSequence }, progress] = await Promise.all([streamPosition(platform.messaging, streams.events.name), consumerProgress(platform.messaging, streams.events.name, 'audit-projector')]);
      return progress.ackFloor >= lastSequence;
    });
    await ferret.kill();

    for (const name of jetStreamOnly) {
      await platform.kill(name);
      // Waits for /readyz 200: the start neither waits for MongoDB nor fails on it.
      await platform.restart(name);
      expect(await readyz(name), name).toEqual({ status: 200, body: { status: 'ready', service: name, checks: { nats: 'ok', mongodb: 'degraded' } } });
      expect(await storeUp(name), name).toBe(0);
    }
    await platform.kill('audit-projector');
    await platform.restart('audit-projector', 0, { AUDIT_PROJECTOR_MAX_DELIVER: '1' }, { awaitReady: false });
    expect(await readyz('audit-projector')).toEqual({ status: 503, body: { status: 'not ready', service: 'audit-projector', checks: { nats: 'ok', mongodb: 'failing' } } });

    const result = data(await platform.invoke({ toolId: 'everything.echo', arguments: { message: 'while MongoDB is away' }, idempotencyKey: 'outage-1' }));
    expect(result.status).toBe('SUCCESS');
    const { toolCallId } = result.receipt;
    // The record waits for MongoDB: asked meanwhile, the projector says so, retryably.
    await expect(platform.command('audit', 'getCall', auditCommandSchemas.getCall, { toolCallId })).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
    expect((await readyz('audit-projector')).status).toBe(503);
    expect(platform.service('audit-projector').child.exitCode).toBeNull();

    await ferret.restart();
    await waitFor('the audit projector to report ready', async () => (await readyz('audit-projector')).status === 200, 60_000);
    const call = await waitFor(
      'the call’s RuntimeToolCall',
      async () => {
        const shown = await platform.command('audit', 'getCall', auditCommandSchemas.getCall, { toolCallId }).catch(() => undefined);
        return shown?.call.state === 'Observed' ? shown.call : undefined;
      },
      60_000,
    );
    // Its events were held, not nak'ed: with one delivery allowed, a redelivered one would have been dead-lettered and
    // the record would not have reached Observed.
    expect(call).toMatchObject<Partial<RuntimeToolCallView>>({ toolCallId, invocationId: result.receipt.invocationId, attemptCount: 1, toolId: 'everything.echo', agentId: agent.agentId });

    for (const name of jetStreamOnly) {
      await waitFor(`${name} to see MongoDB again`, async () => (await readyz(name)).body.checks['mongodb'] === 'ok' && (await storeUp(name)) === 1, 30_000);
    }
  });
});
