// The pending list a live page shows, kept up to date from fresh reads. The read model's list may lag a change, so
// each change is applied from the approval as its own record shows it right after the event: a Pending one is put in
// (or replaces its older copy), any other state takes it out. The result does not depend on how often a fresh read
// is merged, and a read of an older version never replaces a newer one.
import type { ApprovalView } from '@toolplane/contracts';

/** Newest request first, as the service lists them; the id breaks ties so the order is total. */
function newestFirst(a: ApprovalView, b: ApprovalView): number {
  if (a.requestedAt !== b.requestedAt) return a.requestedAt < b.requestedAt ? 1 : -1;
  return a.approvalId < b.approvalId ? -1 : a.approvalId > b.approvalId ? 1 : 0;
}

/** The pending list with one freshly read approval merged in or out. */
export function mergePending(pending: readonly ApprovalView[], fresh: ApprovalView): ApprovalView[] {
  const known = pending.find((approval) => approval.approvalId === fresh.approvalId);
  // An approval's version only grows; an older read (a slow reply overtaken by a newer one) changes nothing.
  if (known !== undefined && known.version > fresh.version) return [...pending];
  const others = pending.filter((approval) => approval.approvalId !== fresh.approvalId);
  return (fresh.state === 'Pending' ? [...others, fresh] : others).sort(newestFirst);
}

/** The list of a first read, in the page's order and without anything but Pending approvals. */
export function pendingOf(listed: readonly ApprovalView[]): ApprovalView[] {
  return listed.filter((approval) => approval.state === 'Pending').sort(newestFirst);
}
