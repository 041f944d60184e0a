// The projector with MongoDB (a FerretDB of this file's own: the shared one serves other tests) away. It starts anyway,
// reports not ready, and holds the events it cannot write instead of nak'ing them; it runs with one delivery per event,
// so an event nak'ed even once would be dead-lettered and missing from the projection. Once MongoDB answers it writes
// them all and is ready; MongoDB going away again under a running projector loses nothing either.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams, type Scope } from '@toolplane/contracts';
import { consumerProgress, type Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import { startPrivateFerretDb, testScope, type PrivateFerretDb } from '@toolplane/testing';
import { callEvents, nextId } from './events.js';
import { call, codeOf, connectClient, eventually, projectorScope, publishEvents, startProjector, watchDeadLetters, type ProjectorScope } from './harness.js';

let ferret: PrivateFerretDb;
let scope: ProjectorScope;
let where: Scope;
let client: Messaging;
let deadLetters: Awaited<ReturnType<typeof watchDeadLetters>>;
let projector: RunningService | undefined;

beforeAll(async () => {
  ferret = await startPrivateFerretDb('audit-outage-');
  scope = { ...projectorScope(testScope('projector_outage'), 'outage'), mongoUrl: ferret.url };
  where = { tenant: scope.tenant, workspace: 'dev' };
  client = await connectClient(scope, 'client');
  deadLetters = await watchDeadLetters(client, scope.consumer);
}, 60_000);

afterAll(async () => {
  await projector?.stop();
  await deadLetters?.stop();
  await client?.drain();
  await ferret?.stop();
});

async function readyz(): Promise<{ status: number; checks: Record<string, string> }> {
  const res = await fetch(`http://127.0.0.1:${projector?.port}/readyz`);
  return { status: res.status, checks: ((await res.json()) as { checks: Record<string, string> }).checks };
}

/** Publishes one completed call's events and returns its id. */
async function completedCall(label: string): Promise<string> {
  const toolCallId = `${label}-${nextId()}`;
  await publishEvents(client, callEvents({ ...where, toolCallId, attempts: [{ outcome: 'Completed' }] }));
  return toolCallId;
}

async function recorded(toolCallId: string) {
  return eventually(`the record of ${toolCallId}`, async () => (await call(client, where, 'getCall', { toolCallId }).catch(() => undefined))?.call, 30_000);
}

describe('the projector while MongoDB is away', () => {
  it('starts not ready, holds the events it cannot write, and writes every one once MongoDB answers', { timeout: 120_000 }, async () => {
    await ferret.kill();
    projector = await startProjector(scope, { AUDIT_PROJECTOR_MAX_DELIVER: '1', MONGODB_CONNECT_TIMEOUT_MS: '500' });
    expect(await readyz()).toEqual({ status: 503, checks: { nats: 'ok', mongodb: 'failing' } });

    const held = await completedCall('held');
    // Delivered and held: not acknowledged, not redelivered.
    await eventually('the events to be held', async () => {
      const progress = await consumerProgress(client, streams.events.name, scope.consumer);
      return progress.ackPending > 0 && progress.pending === 0 ? progress : undefined;
    });
    expect(await codeOf(call(client, where, 'getCall', { toolCallId: held }))).toBe('TEMPORARY_UNAVAILABLE');

    await ferret.restart();
    await eventually('the projector to report ready', async () => ((await readyz()).status === 200 ? true : undefined), 30_000);
    expect((await recorded(held)).attemptCount).toBe(1);

    // Away again under the running projector, which believes it answers until a write fails.
    await ferret.kill();
    const during = await completedCall('during');
    await eventually('the projector to report not ready', async () => ((await readyz()).status === 503 ? true : undefined), 30_000);
    await ferret.restart();
    expect((await recorded(during)).attemptCount).toBe(1);

    // The record is visible before the projector's acknowledgement reaches the server: wait for the acks, not a moment.
    await eventually(
      'every event acknowledged',
      async () => {
        const progress = await consumerProgress(client, streams.events.name, scope.consumer);
        return progress.pending === 0 && progress.ackPending === 0 ? progress : undefined;
      },
      30_000,
    );
    expect(deadLetters.letters).toEqual([]);
  });
});
