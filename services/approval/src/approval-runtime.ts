// The shell around the pure core: read an approval, decide, write the transition with compare-and-set (retrying
// on a lost race with what the winner left), then publish the outbox.
import { LifecycleEvent, ToolplaneError, eventMsgId, subjectOfEvent, type Approval, type Scope } from '@toolplane/contracts';
import { publish, type Messaging } from '@toolplane/messaging';
import type { Logger } from '@toolplane/service-kit';
import { compareAndSet, type StoreCollection } from '@toolplane/store';
import { decide, transitionFields, type ApprovalCommand } from './approval-core.js';
import { findApproval, toApproval, transitionApproval } from './approval-store.js';
import type { StoredApproval } from './collections.js';

/** What the approval service's handlers run with. */
export interface ApprovalRuntime {
  readonly approvals: StoreCollection<StoredApproval>;
  readonly messaging: Messaging;
  readonly clock: () => Date;
  readonly logger: Logger;
}

// A transition can lose its compare-and-set to an outbox clear or a competing command; a few re-reads settle it.
const maxAttempts = 8;

/** An approval after a command, and whether this command changed it (false: already so, or nothing due). */
export interface CommandOutcome {
  readonly approval: Approval;
  readonly changed: boolean;
}

/**
 * Runs one command against the approval of a scope. Refusals are thrown as typed errors and change nothing;
 * NOT_FOUND when the scope has no such approval.
 */
export async function runCommand(runtime: ApprovalRuntime, scope: Scope, approvalId: string, command: ApprovalCommand, signal?: AbortSignal): Promise<CommandOutcome> {
  let current = await findApproval(runtime.approvals, scope, approvalId, signal);
  for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
    if (current === null) throw new ToolplaneError('NOT_FOUND', `no approval ${approvalId} in ${scope.tenant}/${scope.workspace}`);
    const decision = decide(current, command, runtime.clock());
    if (decision.kind === 'refused') throw decision.error;
    // Nothing to change, but a predecessor's events may still wait in the outbox (its writer died).
    if (decision.kind === 'unchanged') return { approval: await flushOutbox(runtime, current, signal), changed: false };
    const result = await transitionApproval(runtime.approvals, current, transitionFields(current, decision), signal);
    if (result.ok) return { approval: await flushOutbox(runtime, result.approval, signal), changed: true };
    current = result.current;
  }
  throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `approval ${approvalId} kept changing under the request; retry`);
}

/**
 * Publishes the events waiting in an approval's outbox (each with its deterministic Nats-Msg-Id, so a
 * republication is dropped), then empties the outbox if nobody moved the approval on meanwhile (whoever did
 * carries the events on and publishes them). A failure leaves the outbox for the sweeper and is only logged: the
 * transition itself is already recorded.
 */
export async function flushOutbox(runtime: ApprovalRuntime, approval: Approval, signal?: AbortSignal): Promise<Approval> {
  const outbox = approval.outbox ?? [];
  if (outbox.length === 0) return approval;
  try {
    for (const event of outbox) {
      await publish(runtime.messaging, { subject: subjectOfEvent(event), schema: LifecycleEvent, message: event, msgId: eventMsgId(event), ...(signal ? { signal } : {}) });
    }
    const cleared = await compareAndSet(runtime.approvals, { id: approval.approvalId, expect: { version: approval.version }, set: { outbox: [] } }, signal ? { signal } : {});
    return cleared.ok ? toApproval(cleared.document) : approval;
  } catch (error) {
    runtime.logger.warn({ err: error, approvalId: approval.approvalId, pending: outbox.map((event) => event.type) }, 'approval events not published yet; the sweeper retries');
    return approval;
  }
}
