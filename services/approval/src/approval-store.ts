// The approval service's store adapter: reads, idempotent creation and guarded transitions of approvals.
import { Approval, ToolplaneError, type Scope } from '@toolplane/contracts';
import { compareAndSet, findPage, insertIfAbsent, type Filter, type Page, type StoreCollection } from '@toolplane/store';
import type { ApprovalChanges } from './approval-core.js';
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

/** The approval `approvalId` of a scope, or null: another scope's approval is as absent as a missing one. */
export async function findApproval(collection: StoreCollection<StoredApproval>, scope: Scope, approvalId: string, signal?: AbortSignal): Promise<Approval | null> {
  try {
    const document = await collection.raw.findOne({ _id: approvalId, tenant: scope.tenant, workspace: scope.workspace }, { signal });
    return document === null ? null : toApproval(document);
  } catch (error) {
    if (error instanceof ToolplaneError) throw error;
    throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `reading approval ${approvalId} failed`, { cause: error });
  }
}

/** Stores a new approval unless one with its id exists; exactly one of concurrent creators gets `created: true`. */
export async function createApproval(collection: StoreCollection<StoredApproval>, approval: Approval, signal?: AbortSignal): Promise<{ created: boolean; approval: Approval }> {
  const result = await insertIfAbsent(collection, { ...approval, _id: approval.approvalId }, { key: { approvalId: approval.approvalId }, ...(signal ? { signal } : {}) });
  return result.created ? { created: true, approval } : { created: false, approval: toApproval(result.existing) };
}

/**
 * Moves `approval` on from the version and state it was read at. Of concurrent writers exactly one succeeds;
 * the others get the approval as the winner left it (null if it vanished).
 */
export async function transitionApproval(
  collection: StoreCollection<StoredApproval>,
  approval: Approval,
  set: ApprovalChanges,
  signal?: AbortSignal,
): Promise<{ ok: true; approval: Approval } | { ok: false; current: Approval | null }> {
  const result = await compareAndSet(
    collection,
    { id: approval.approvalId, expect: { version: approval.version, state: approval.state }, where: { tenant: approval.tenant, workspace: approval.workspace }, set },
    signal ? { signal } : {},
  );
  return result.ok ? { ok: true, approval: toApproval(result.document) } : { ok: false, current: result.current === null ? null : toApproval(result.current) };
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

/** Up to `limit` approvals matching `filter`, in `sortBy` order, across every scope (for the sweeper and voiding). */
export async function findApprovals(collection: StoreCollection<StoredApproval>, filter: Filter<StoredApproval>, sortBy: string, limit: number, signal?: AbortSignal): Promise<Approval[]> {
  const page = await findPage(collection, { filter, sortBy, limit, ...(signal ? { signal } : {}) });
  return page.items.map(toApproval);
}
