import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureIndexes, type Store } from '@toolplane/store';
import { testScope } from '@toolplane/testing';
import { ChainVerifier, chainIdRange, eventHash, type ChainItem } from '../src/audit-chain.js';
import { ChainWriter } from '../src/chain-writer.js';
import { auditChain, collections } from '../src/collections.js';
import { callEvents } from './events.js';
import { openStore } from './harness.js';

// Appenders racing on one tenant's chain over FerretDB, as a replica that stalled past its pin and the one pinned
// after it could: they append at the same time, from stale heads, with overlapping events. The chain must not
// fork, skip or repeat anything: its unique positions keep it, not the single writer.

const scope = testScope('chain_writer');
const stores: Store[] = [];

beforeAll(async () => {
  for (let i = 0; i < 3; i += 1) stores.push(await openStore(scope));
  await ensureIndexes(stores[0] as Store, collections);
});

afterAll(async () => {
  await stores[0]?.db.dropDatabase();
  await Promise.all(stores.map((store) => store.close()));
});

describe('ChainWriter', () => {
  it('keeps one unbroken chain holding each event once when appenders race', async () => {
    const tenant = 'racing';
    const events = Array.from({ length: 12 }, (_, i) => callEvents({ tenant, workspace: 'dev', toolCallId: `race-${i}`, attempts: [{ outcome: 'Completed' }] })).flat();
    const items: ChainItem[] = events.map((event) => ({ event, eventHash: eventHash(event) }));
    const writers = stores.map((store) => new ChainWriter(store, { now: () => new Date() }));
    // Each appender gets most of the events, in its own order and batches, so they overlap and interleave.
    await Promise.all(
      writers.map(async (writer, w) => {
        const mine = items.filter((_, i) => i % writers.length !== w).sort((a, b) => ((a.event.metadata.eventId < b.event.metadata.eventId) === (w % 2 === 0) ? -1 : 1));
        for (let start = 0; start < mine.length; start += 7) await writer.append(new Map([[tenant, mine.slice(start, start + 7)]]));
      }),
    );
    const { from, to } = chainIdRange(tenant);
    const stored = await (stores[0] as Store).collection(auditChain).raw.find({ _id: { $gte: from, $lt: to } }, { sort: { _id: 1 } }).toArray();
    expect(stored.map((entry) => entry.position)).toEqual(events.map((_, i) => i + 1));
    expect(stored.map((entry) => entry.eventId).sort()).toEqual(events.map((event) => event.metadata.eventId).sort());
    const verifier = new ChainVerifier(tenant);
    for (const entry of stored) verifier.push(entry);
    expect(verifier.finish()).toBeUndefined();
  }, 120_000);
});
