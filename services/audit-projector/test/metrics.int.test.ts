// The audit projector's metrics against real NATS and FerretDB: after a known set of events is projected, its
// /metrics counts exactly those events by type, and their lag from occurredAt.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import type { Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { scrapeCounters } from '@toolplane/testing/bench';
import { callEvents } from './events.js';
import { connectClient, eventually, openStore, projectorScope, publishEvents, startProjector } from './harness.js';

const scope = projectorScope(testScope('projector_metrics'), 'metrics');
let client: Messaging;
let store: Store;
let replica: RunningService | undefined;

beforeAll(async () => {
  client = await connectClient(scope, 'client');
  store = await openStore(scope);
});

afterAll(async () => {
  await replica?.stop();
  await client?.drain();
  await store?.db.dropDatabase();
  await store?.close();
});

describe('the audit projector’s metrics', () => {
  it('counts each projected event once by type, and its lag from occurredAt to the write', async () => {
    replica = await startProjector(scope);
    const metrics = `http://127.0.0.1:${replica.port}/metrics`;
    // Events that occurred 20 s ago (one second apart, a dozen at most per call): every lag is between 10 and 30 s.
    const startMs = Date.now() - 20_000;
    const events = ['a', 'b', 'c'].flatMap((id, i) =>
      callEvents({ tenant: scope.tenant, workspace: 'dev', toolCallId: `metrics-${id}`, attempts: [{ outcome: i === 1 ? 'Failed' : 'Completed', approval: i === 2, sandbox: false }], startMs }),
    );
    expect(events.every((event) => Date.parse(event.metadata.occurredAt) < Date.now() - 5_000)).toBe(true);
    const expected = new Map<string, number>();
    for (const event of events) expected.set(event.type, (expected.get(event.type) ?? 0) + 1);
    await publishEvents(client, events);

    const projected = await eventually('every event to be counted', async () => {
      const counted = await scrapeCounters(metrics, 'toolplane_projected_events_total', 'type');
      return [...counted.values()].reduce((sum, count) => sum + count, 0) >= events.length ? counted : undefined;
    });
    expect(projected).toEqual(expected);
    const lag = await scrapeCounters(metrics, 'toolplane_projection_lag_seconds_bucket', 'le');
    expect(lag.get('5')).toBe(0);
    expect(lag.get('30')).toBe(events.length);
    expect(lag.get('+Inf')).toBe(events.length);
  }, 60_000);
});
