// The approvals read model: what list queries, the sweeper and voiding search. Written by the projector alone, one
// whole folded document per approval; never read for a decision.
import { Approval, ToolplaneError, type Scope } from '@toolplane/contracts';
import { findPage, toStoreError, type Filter, type Page, type StoreCollection } from '@toolplane/store';
import type { StoredApproval } from './collections.js';

/** A stored document as the contract's Approval (bookkeeping such as `_id` dropped); INTERNAL if it does not parse. */
export function toApproval(document: unknown): Approval {
  const parsed = Approval.safeParse(document);
  if (!parsed.success) {
    const id = (document as { approvalId?: unknown } | null)?.approvalId;
    throw new ToolplaneError('INTERNAL', `stored approval ${typeof id === 'string' ? id : '?'} does not match its contract`);
  }
  return parsed.data;
}

/**
 * Writes an approval as folded, whole, by `_id`. Idempotent: writing the same fold again changes nothing, and the
 * projector (the only writer, one message at a time) always writes the fold of everything stored so far.
 */
export async function putApproval(collection: StoreCollection<StoredApproval>, approval: Approval, signal?: AbortSignal): Promise<void> {
  try {
    await collection.raw.replaceOne({ _id: approval.approvalId }, { ...approval }, { upsert: true, ...(signal ? { signal } : {}) });
  } catch (error) {
    throw toStoreError(error, `writing approval ${approval.approvalId} to the read model`);
  }
}

/** One page of a scope's approvals, newest request first. */
export async function listApprovals(
  collection: StoreCollection<StoredApproval>,
  scope: Scope,
  query: { readonly state?: Approval['state'] | undefined; readonly limit: number; readonly after?: string | undefined },
  signal?: AbortSignal,
): Promise<{ items: Approval[]; next: string | null }> {
  const filter: Filter<StoredApproval> = { tenant: scope.tenant, workspace: scope.workspace, ...(query.state === undefined ? {} : { state: query.state }) };
  const page: Page<StoredApproval> = await findPage(collection, {
    filter,
    sortBy: 'requestedAt',
    direction: 'desc',
    limit: query.limit,
    ...(query.after === undefined ? {} : { after: query.after }),
    ...(signal ? { signal } : {}),
  });
  return { items: page.items.map(toApproval), next: page.next };
}

/** Up to `limit` approvals matching `filter`, in `sortBy` order, across every scope (candidates for the sweeper and voiding). */
export async function findApprovals(collection: StoreCollection<StoredApproval>, filter: Filter<StoredApproval>, sortBy: string, limit: number, signal?: AbortSignal): Promise<Approval[]> {
  const page = await findPage(collection, { filter, sortBy, limit, ...(signal ? { signal } : {}) });
  return page.items.map(toApproval);
}

/**
 * How many approvals are Pending in the read model, across every scope, counting no further than `limit` (so a
 * scrape stays one bounded index read however many wait). The read model may lag a decision by a moment.
 */
export async function countPendingApprovals(collection: StoreCollection<StoredApproval>, limit: number, signal?: AbortSignal): Promise<number> {
  try {
    return await collection.raw.countDocuments({ state: 'Pending' }, { limit, ...(signal ? { signal } : {}) });
  } catch (error) {
    throw toStoreError(error, 'counting pending approvals in the read model');
  }
}
