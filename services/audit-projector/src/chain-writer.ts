// Appends events to their tenant's audit chain. One replica at a time appends (the projector's consumer is pinned
// to one client), but what keeps the chain from forking is the store, not that: an entry's id is its position, and
// an insert against a unique id is atomic (on FerretDB too), so of two appenders that both think the chain ends at
// n (a replica that stalled past its pin and the one pinned after it) only one stores n + 1; the other finds the new
// end and tries again. An event is chained once per tenant by a unique (tenant, eventId) index. Inserts are ordered
// and stop at the first refusal, so nothing is ever stored after a position that was not. The recorded head only
// saves the appender from searching for the end of the chain.
import { throwIfAborted, ToolplaneError } from '@toolplane/contracts';
import { findByIds, insertInOrder, replaceManyById, type Store } from '@toolplane/store';
import { chainEntries, chainEntryId, emptyHead, type ChainHead, type ChainItem, type ChainRecord } from './audit-chain.js';
import { auditChain, auditChainHeads } from './collections.js';

/** What a chain writer needs besides the store. */
export interface ChainWriterOptions {
  readonly now: () => Date;
}

const maxRounds = 1000;

/** Appends events to per-tenant audit chains. */
export class ChainWriter {
  constructor(
    private readonly store: Store,
    private readonly options: ChainWriterOptions,
  ) {}

  /** Appends each tenant's events (in the given order) to its chain; events already chained are skipped. */
  async append(byTenant: ReadonlyMap<string, readonly ChainItem[]>, signal?: AbortSignal): Promise<void> {
    // Tenants' chains are independent: appended side by side, so their round trips overlap.
    const outcomes = await Promise.allSettled([...byTenant].map(([tenant, items]) => this.appendTenant(tenant, items, signal)));
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async appendTenant(tenant: string, items: readonly ChainItem[], signal?: AbortSignal): Promise<void> {
    const seen = new Set<string>();
    let remaining = items.filter(({ event }) => !seen.has(event.metadata.eventId) && seen.add(event.metadata.eventId));
    if (remaining.length === 0) return;
    let head = await this.recordedHead(tenant, signal);
    const start = head.position;
    for (let round = 0; remaining.length > 0; round += 1) {
      if (round >= maxRounds) throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `the audit chain of ${tenant} keeps moving under this appender`);
      throwIfAborted(signal, `appending to the audit chain of ${tenant}`);
      const entries = chainEntries(tenant, head, remaining, this.options.now().toISOString());
      const outcome = await insertInOrder(this.store.collection(auditChain), entries, signal ? { signal } : {});
      if (outcome.inserted > 0) {
        const last = entries[outcome.inserted - 1] as ChainRecord;
        head = { position: last.position, hash: last.hash };
        remaining = remaining.slice(outcome.inserted);
      }
      if (outcome.duplicateAt === undefined) break;
      const refused = entries[outcome.duplicateAt] as ChainRecord;
      const [taken] = await findByIds(this.store.collection(auditChain), [refused._id], signal ? { signal } : {});
      if (taken) {
        // The position is taken: the recorded head was behind, or another appender went on meanwhile. Find the end.
        head = await this.findEnd(tenant, { position: taken.position, hash: taken.hash }, signal);
      } else {
        // The position is free, so the unique (tenant, eventId) index refused it: the event is chained already.
        remaining = remaining.slice(1);
      }
    }
    if (head.position > start) await this.recordHead(tenant, head);
  }

  /** The head appenders last recorded; the chain may have grown past it (then an insert says so). */
  private async recordedHead(tenant: string, signal?: AbortSignal): Promise<ChainHead> {
    const [recorded] = await findByIds(this.store.collection(auditChainHeads), [tenant], signal ? { signal } : {});
    return recorded ? { position: recorded.position, hash: recorded.hash } : emptyHead;
  }

  private async recordHead(tenant: string, head: ChainHead): Promise<void> {
    // A hint: a stale value only costs the next appender a search, never a fork.
    await replaceManyById(this.store.collection(auditChainHeads), [{ _id: tenant, position: head.position, hash: head.hash, updatedAt: this.options.now().toISOString() }]);
  }

  /** The last entry of the chain, searching forward from an entry known to exist (positions have no gaps). */
  private async findEnd(tenant: string, known: ChainHead, signal?: AbortSignal): Promise<ChainHead> {
    const collection = this.store.collection(auditChain);
    const at = async (position: number) => (await findByIds(collection, [chainEntryId(tenant, position)], signal ? { signal } : {}))[0] ?? null;
    let low = known;
    let step = 1;
    let high: number | undefined;
    // Gallop forward until a free position, then bisect between the last taken and the first free one.
    while (high === undefined) {
      const probe = await at(low.position + step);
      if (probe) {
        low = { position: probe.position, hash: probe.hash };
        step *= 2;
      } else {
        high = low.position + step;
      }
    }
    while (high - low.position > 1) {
      const middle = Math.floor((low.position + high) / 2);
      const probe = await at(middle);
      if (probe) low = { position: probe.position, hash: probe.hash };
      else high = middle;
    }
    return low;
  }
}
