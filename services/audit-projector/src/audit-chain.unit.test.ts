import { describe, expect, it } from 'vitest';
import { callEvents } from '../test/events.js';
import { ChainVerifier, GENESIS_HASH, chainEntries, chainEntryId, emptyHead, entryHash, eventHash, type ChainRecord } from './audit-chain.js';

const events = callEvents({ tenant: 'acme', workspace: 'dev', toolCallId: 'chain-call', attempts: [{ outcome: 'Failed' }, { outcome: 'Completed', sandbox: true }] });
const items = events.map((event) => ({ event, eventHash: eventHash(event) }));
const at = '2026-03-01T12:00:00.000Z';

function verify(entries: readonly Record<string, unknown>[], head?: { position: number; hash: string }) {
  const verifier = new ChainVerifier('acme');
  for (const entry of entries) if (!verifier.push(entry)) break;
  return { firstBreak: verifier.finish(head), head: verifier.head, entries: verifier.entries };
}

describe('the audit chain', () => {
  const chain = chainEntries('acme', emptyHead, items, at);

  it('links each entry to the one before, from the genesis hash, under zero-padded ids', () => {
    expect(chain.map((entry) => entry.position)).toEqual(events.map((_, i) => i + 1));
    expect(chain[0]?.prevHash).toBe(GENESIS_HASH);
    for (let i = 1; i < chain.length; i += 1) expect(chain[i]?.prevHash).toBe(chain[i - 1]?.hash);
    expect(chain[2]?._id).toBe('acme/000000000003');
    expect(chainEntryId('acme', 12)).toBe('acme/000000000012');
    // Appending later continues the same chain.
    const [first, ...rest] = items;
    const head = chainEntries('acme', emptyHead, [first as (typeof items)[number]], at)[0] as ChainRecord;
    expect(chainEntries('acme', { position: 1, hash: head.hash }, rest, at)).toEqual(chain.slice(1));
  });

  it('verifies an intact chain and names its head', () => {
    const last = chain.at(-1) as ChainRecord;
    expect(verify(chain, { position: last.position, hash: last.hash })).toEqual({ firstBreak: undefined, head: { position: last.position, hash: last.hash }, entries: chain.length });
  });

  it('names an edited entry', () => {
    const edited = chain.map((entry) => (entry.position === 3 ? { ...entry, eventHash: 'f'.repeat(64) } : entry));
    expect(verify(edited).firstBreak).toMatchObject({ position: 3, kind: 'EntryEdited', entryId: 'acme/000000000003', eventId: chain[2]?.eventId });
  });

  it('names an entry whose hash was recomputed after an edit: it no longer links to its successor', () => {
    const forged = chain.map((entry) => {
      if (entry.position !== 3) return entry;
      const { hash: _old, _id, ...content } = { ...entry, eventType: 'ToolCallCompleted' };
      return { _id, ...content, hash: entryHash(content) };
    });
    expect(verify(forged).firstBreak).toMatchObject({ position: 4, kind: 'LinkBroken' });
  });

  it('names a deleted entry by its position, in the middle and at the end', () => {
    expect(verify(chain.filter((entry) => entry.position !== 4)).firstBreak).toMatchObject({ position: 4, kind: 'EntryMissing', entryId: 'acme/000000000004' });
    const last = chain.at(-1) as ChainRecord;
    expect(verify(chain.slice(0, -1), { position: last.position, hash: last.hash }).firstBreak).toMatchObject({ position: last.position, kind: 'EntryMissing' });
  });

  it('names reordered entries: swapped contents no longer match their ids', () => {
    const swapped = chain.map((entry) => {
      if (entry.position === 2) return { ...(chain[4] as ChainRecord), _id: entry._id };
      if (entry.position === 5) return { ...(chain[1] as ChainRecord), _id: entry._id };
      return entry;
    });
    expect(verify(swapped).firstBreak).toMatchObject({ position: 2, kind: 'EntryMoved', eventId: chain[4]?.eventId });
  });

  it('names a malformed entry', () => {
    const broken = chain.map((entry) => (entry.position === 2 ? { _id: entry._id, tenant: 'acme' } : entry));
    expect(verify(broken).firstBreak).toMatchObject({ position: 2, kind: 'EntryMalformed' });
  });
});
