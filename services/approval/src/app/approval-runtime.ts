// The shell around the Approval decider: every command goes through the one write path (read the approval's stream,
// decide, append at the version read, decide again after a lost race). Its outcome events are published from the
// stream by the event relay; MongoDB is only the read model, never read here.
import { ToolplaneError, type Approval, type ApprovalStreamEvent, type Scope, type ToolDescriptor } from '@toolplane/contracts';
import { foldEvents, handleCommand, type EventStore } from '@toolplane/event-store';
import type { Messaging } from '@toolplane/messaging';
import type { Logger } from '@toolplane/service-kit';
import type { StoreCollection } from '@toolplane/store';
import type { StoredApproval } from '../adapters/collections.js';
import { approvalDecider, type ApprovalCommand } from '../core/approval-decider.js';
import { decisionOf, type ApprovalDecision } from '../core/decision-timing.js';

/** What the approval service's handlers run with. */
export interface ApprovalRuntime {
  /** The record: one stream per approval. */
  readonly events: EventStore<ApprovalStreamEvent>;
  /** The read model, for list queries and for finding candidates to expire or void. */
  readonly approvals: StoreCollection<StoredApproval>;
  readonly messaging: Messaging;
  readonly clock: () => Date;
  readonly logger: Logger;
  /** Hears each approval's decision once, from the append that made it (the time-to-decision metric). */
  readonly onDecided: (decision: ApprovalDecision) => void;
  /**
   * The tool version as the registry's descriptor read model has it now, if wired: an approval requested for a version
   * retired before its request arrived (after the retirement's voiding ran) is voided when it opens.
   */
  readonly descriptorOf?: ((scope: Scope, toolId: string, toolVersion: string, signal?: AbortSignal) => Promise<ToolDescriptor | undefined>) | undefined;
}

/** An approval after a command, and whether this command changed it (false: already so, or nothing due). */
export interface CommandOutcome {
  readonly approval: Approval;
  readonly changed: boolean;
}

// Concurrent commands on one approval are few (a human, the adapter, a sweeper, a registry change); this bounds a storm.
const maxAttempts = 8;

/** Runs one command against an approval. Refusals are thrown as typed errors and append nothing. */
export async function runCommand(runtime: ApprovalRuntime, approvalId: string, command: ApprovalCommand, signal?: AbortSignal): Promise<CommandOutcome> {
  const handled = await handleCommand(runtime.events, approvalDecider, approvalId, command, { maxAttempts, ...(signal ? { signal } : {}) });
  // Only an opening can leave no approval, and an opening is never refused.
  if (handled.newState === null) throw new ToolplaneError('NOT_FOUND', `no approval ${approvalId}`);
  // Here and only here: every command goes through this append, and a lost race appends nothing on its retry.
  const decision = decisionOf(handled.newEvents, handled.newState);
  if (decision !== undefined) runtime.onDecided(decision);
  return { approval: handled.newState, changed: handled.newEvents.length > 0 };
}

/** The approval `approvalId` of a scope as its stream folds it now, or null: another scope's is as absent as a missing one. */
export async function readApproval(runtime: ApprovalRuntime, scope: Scope, approvalId: string, signal?: AbortSignal): Promise<Approval | null> {
  const { events } = await runtime.events.readStream(approvalId, signal ? { signal } : {});
  const approval = foldEvents(approvalDecider, events);
  return approval !== null && approval.tenant === scope.tenant && approval.workspace === scope.workspace ? approval : null;
}
