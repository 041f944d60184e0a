import { describe, expect, it } from 'vitest';
import { pendingApproval } from '../../test/approvals.js';
import { mergePending, pendingOf } from './pending-list.js';

const older = pendingApproval({ requestedAt: '2026-03-01T09:00:00.000Z' });
const newer = pendingApproval({ requestedAt: '2026-03-01T11:00:00.000Z' });

describe('merging a fresh approval into the pending list', () => {
  it('puts a new pending approval in, newest request first', () => {
    expect(mergePending([older], newer).map((a) => a.approvalId)).toEqual([newer.approvalId, older.approvalId]);
    expect(mergePending([newer], older).map((a) => a.approvalId)).toEqual([newer.approvalId, older.approvalId]);
  });

  it('takes a decided, expired, consumed or voided one out', () => {
    for (const state of ['Granted', 'Rejected', 'Expired', 'Consumed', 'Voided'] as const) {
      expect(mergePending([newer, older], { ...older, state, version: 2 })).toEqual([newer]);
    }
  });

  it('replaces the older copy of the same approval instead of adding a second', () => {
    const merged = mergePending([older], { ...older, summary: 'changed', version: 2 });
    expect(merged).toHaveLength(1);
    expect(merged[0]?.summary).toBe('changed');
  });

  it('ignores a read older than what the list holds (a slow reply overtaken by a newer one)', () => {
    const stalePending = mergePending([{ ...older, summary: 'newer', version: 3 }], { ...older, state: 'Granted', version: 2 });
    expect(stalePending).toHaveLength(1);
    expect(stalePending[0]?.version).toBe(3);
  });

  it('gives the same list however often the same read is merged', () => {
    const once = mergePending([older], newer);
    expect(mergePending(once, newer)).toEqual(once);
  });

  it('keeps only pending approvals of a first read, in the page order', () => {
    expect(pendingOf([older, { ...newer, state: 'Granted' }, newer]).map((a) => a.approvalId)).toEqual([newer.approvalId, older.approvalId]);
  });
});
