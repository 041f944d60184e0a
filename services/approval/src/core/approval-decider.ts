// The Approval aggregate as a Decider: what a command does to an approval, decided from the approval's events, the
// command and the time the command carries. No I/O, no clock, no random ids: the shell reads the approval's stream,
// appends what was decided at the version it read, and publishes the outcome events after the append.
//
//   (none) --Open--> Pending --Grant--> Granted --Consume--> Consumed
//                    Pending --Reject--> Rejected
//                    Pending --Expire--> Expired            (the sweeper, once expiresAt has passed)
//                    Pending|Granted --Void--> Voided       (the registry suspended or retired the bound tool version)
import {
  ToolplaneError,
  type Approval,
  type ApprovalEventMetadata,
  type ApprovalOpened,
  type ApprovalOutcomeEvent,
  type ApprovalRequested,
  type ApprovalStreamEvent,
  type DescriptorRetirementReason,
  type Scope,
} from '@toolplane/contracts';
import type { Decider } from '@toolplane/event-store';
import { approvalEventId } from './event-ids.js';

/** A verified human who decides: who they are, the scope their operator token covers, and their roles. */
export interface DecidingHuman {
  readonly principal: string;
  readonly tenant: string;
  readonly workspaces: readonly string[];
  readonly roles: readonly string[];
}

/** What every command but Open names: the approval, the scope it was asked in (another scope's is absent), the time. */
export interface CommandMetadata {
  readonly approvalId: string;
  readonly scope: Scope;
  readonly now: Date;
}

/** What can be asked of an approval. */
export type ApprovalCommand =
  | { readonly type: 'OpenApproval'; readonly data: { readonly opened: ApprovalOpened } }
  | { readonly type: 'GrantApproval'; readonly data: { readonly decider: DecidingHuman; readonly reason?: string | undefined }; readonly metadata: CommandMetadata }
  | { readonly type: 'RejectApproval'; readonly data: { readonly decider: DecidingHuman; readonly reason: string }; readonly metadata: CommandMetadata }
  | { readonly type: 'ConsumeApproval'; readonly data: { readonly requestHash: string; readonly toolVersion: string }; readonly metadata: CommandMetadata }
  | { readonly type: 'ExpireApproval'; readonly metadata: CommandMetadata }
  | { readonly type: 'VoidApproval'; readonly data: { readonly reason: DescriptorRetirementReason; readonly causationId?: string | undefined }; readonly metadata: CommandMetadata };

/** The approval as its events fold it; null before it was opened. */
export type ApprovalAggregate = Approval | null;

const refuse = (code: ToolplaneError['code'], message: string): never => {
  throw new ToolplaneError(code, message);
};

/** Whether the approval's decision deadline has passed at `now`. */
export function isPastExpiry(approval: Approval, now: Date): boolean {
  return now.getTime() >= Date.parse(approval.expiresAt);
}

/**
 * The ApprovalOpened an ApprovalRequested asks for, in the scope of the subject it arrived on. Refused
 * (INVALID_ARGUMENT) when the event's scope differs from its subject's or it names no tool version.
 */
export function openingOf(event: ApprovalRequested, subjectScope: Scope, now: Date): ApprovalOpened {
  const { metadata, data } = event;
  if (metadata.tenant !== subjectScope.tenant || metadata.workspace !== subjectScope.workspace) {
    throw new ToolplaneError('INVALID_ARGUMENT', 'ApprovalRequested names another scope than its subject');
  }
  if (metadata.toolVersion === undefined) {
    throw new ToolplaneError('INVALID_ARGUMENT', 'ApprovalRequested names no tool version; an approval is bound to an exact one');
  }
  return {
    type: 'ApprovalOpened',
    data: {
      approvalId: data.approvalId,
      tenant: subjectScope.tenant,
      workspace: subjectScope.workspace,
      invocationId: metadata.invocationId,
      toolCallId: metadata.toolCallId,
      toolId: metadata.toolId,
      toolVersion: metadata.toolVersion,
      requestHash: data.requestHash,
      sideEffectClass: data.sideEffectClass,
      riskClass: data.riskClass,
      summary: data.summary,
      requestedBy: metadata.principal,
      ...(metadata.agentId === undefined ? {} : { agentId: metadata.agentId }),
      ...(metadata.agentRevision === undefined ? {} : { agentRevision: metadata.agentRevision }),
      approvers: data.approvers,
      // Normalised to toISOString's form, so stored instants compare correctly as strings.
      requestedAt: new Date(metadata.occurredAt).toISOString(),
      expiresAt: new Date(data.expiresAt).toISOString(),
      correlationId: metadata.correlationId,
      ...(metadata.flowRunId === undefined ? {} : { flowRunId: metadata.flowRunId }),
      ...(metadata.workItemId === undefined ? {} : { workItemId: metadata.workItemId }),
    },
    metadata: { occurredAt: now.toISOString(), causationId: metadata.eventId },
  };
}

/** The metadata of an event about `approval`, with its deterministic id (each event type at most once per approval). */
function metadataFor(approval: Approval, type: ApprovalOutcomeEvent['type'], now: Date, extra: { actor?: string; causationId?: string | undefined }): ApprovalEventMetadata {
  return {
    eventId: approvalEventId(approval.approvalId, type),
    tenant: approval.tenant,
    workspace: approval.workspace,
    occurredAt: now.toISOString(),
    correlationId: approval.correlationId,
    ...(extra.causationId === undefined ? {} : { causationId: extra.causationId }),
    ...(extra.actor === undefined ? {} : { actor: extra.actor }),
    invocationId: approval.invocationId,
    toolCallId: approval.toolCallId,
    toolId: approval.toolId,
    toolVersion: approval.toolVersion,
    ...(approval.flowRunId === undefined ? {} : { flowRunId: approval.flowRunId }),
    ...(approval.workItemId === undefined ? {} : { workItemId: approval.workItemId }),
  };
}

/** The approval a command of `scope` is about; NOT_FOUND when there is none there (another scope's is as absent). */
function existing(state: ApprovalAggregate, { approvalId, scope }: CommandMetadata): Approval {
  if (state === null || state.approvalId !== approvalId || state.tenant !== scope.tenant || state.workspace !== scope.workspace) {
    return refuse('NOT_FOUND', `no approval ${approvalId} in ${scope.tenant}/${scope.workspace}`);
  }
  return state;
}

/** Who decides is checked before anything about the approval's state is told. */
function authorise(approval: Approval, decider: DecidingHuman): void {
  if (decider.tenant !== approval.tenant || !decider.workspaces.includes(approval.workspace)) {
    refuse('AUTHORIZATION_DENIED', `${decider.principal} may not decide approvals of ${approval.tenant}/${approval.workspace}`);
  }
  if (decider.principal === approval.requestedBy || (approval.agentId !== undefined && decider.principal === approval.agentId)) {
    refuse('AUTHORIZATION_DENIED', 'an approval cannot be decided by the principal or agent that requested it');
  }
  const listed = approval.approvers.principals.includes(decider.principal);
  const holdsRole = decider.roles.some((role) => approval.approvers.roles.includes(role));
  if (!listed && !holdsRole) {
    const roles = approval.approvers.roles.length > 0 ? `a role of ${approval.approvers.roles.join(', ')}` : 'to be named';
    refuse('AUTHORIZATION_DENIED', `${decider.principal} is not an approver of approval ${approval.approvalId} (needs ${roles})`);
  }
}

const expired = (approval: Approval) => refuse('APPROVAL_EXPIRED', `approval ${approval.approvalId} expired at ${approval.expiresAt}`);
const isVoid = (approval: Approval) => refuse('CONFLICT', `approval ${approval.approvalId} is void: its tool version is no longer invocable (${approval.voidReason ?? 'retired'})`);

function decideHumanDecision(approval: Approval, command: Extract<ApprovalCommand, { type: 'GrantApproval' | 'RejectApproval' }>): ApprovalOutcomeEvent[] {
  authorise(approval, command.data.decider);
  const { now } = command.metadata;
  const { principal } = command.data.decider;
  const target = command.type === 'GrantApproval' ? 'Granted' : 'Rejected';
  switch (approval.state) {
    case 'Pending': {
      if (isPastExpiry(approval, now)) return expired(approval);
      if (command.type === 'GrantApproval') {
        const { reason } = command.data;
        const metadata = metadataFor(approval, 'ApprovalGranted', now, { actor: principal });
        return [{ type: 'ApprovalGranted', data: { approvalId: approval.approvalId, requestHash: approval.requestHash, decidedBy: principal, ...(reason === undefined ? {} : { reason }) }, metadata }];
      }
      const metadata = metadataFor(approval, 'ApprovalRejected', now, { actor: principal });
      return [{ type: 'ApprovalRejected', data: { approvalId: approval.approvalId, requestHash: approval.requestHash, decidedBy: principal, reason: command.data.reason }, metadata }];
    }
    case 'Granted':
    case 'Rejected':
      // The same human repeating the same decision (a retried request) is told it is done; anything else conflicts.
      if (approval.state === target && approval.decidedBy === principal) return [];
      return refuse('CONFLICT', `approval ${approval.approvalId} was already ${approval.state === 'Granted' ? 'granted' : 'rejected'}`);
    case 'Expired':
      return expired(approval);
    case 'Consumed':
      return refuse('CONFLICT', `approval ${approval.approvalId} was already granted and used`);
    case 'Voided':
      return isVoid(approval);
  }
}

function decideConsume(approval: Approval, command: Extract<ApprovalCommand, { type: 'ConsumeApproval' }>): ApprovalOutcomeEvent[] {
  // The binding is checked first: a different hash or version is a different request, whatever the state.
  if (command.data.requestHash !== approval.requestHash) return refuse('CONFLICT', `approval ${approval.approvalId} is bound to another request hash`);
  if (command.data.toolVersion !== approval.toolVersion) return refuse('CONFLICT', `approval ${approval.approvalId} is bound to another version of ${approval.toolId}`);
  switch (approval.state) {
    case 'Granted':
      return [{ type: 'ApprovalConsumed', data: { approvalId: approval.approvalId, requestHash: approval.requestHash }, metadata: metadataFor(approval, 'ApprovalConsumed', command.metadata.now, {}) }];
    case 'Pending':
      if (isPastExpiry(approval, command.metadata.now)) return expired(approval);
      return refuse('CONFLICT', `approval ${approval.approvalId} has not been decided yet`);
    case 'Rejected':
      return refuse('APPROVAL_REJECTED', `approval ${approval.approvalId} was rejected`);
    case 'Expired':
      return expired(approval);
    case 'Consumed':
      return refuse('CONFLICT', `approval ${approval.approvalId} was already used`);
    case 'Voided':
      return isVoid(approval);
  }
}

/** Decides what `command` does to the approval: the events to append, none (already so, or not due), or a refusal. */
export function decide(command: ApprovalCommand, state: ApprovalAggregate): ApprovalStreamEvent[] {
  if (command.type === 'OpenApproval') {
    // The first request under an id stays authoritative: a repeat, or a different binding, changes nothing.
    return state === null ? [command.data.opened] : [];
  }
  const approval = existing(state, command.metadata);
  const { now } = command.metadata;
  switch (command.type) {
    case 'GrantApproval':
    case 'RejectApproval':
      return decideHumanDecision(approval, command);
    case 'ConsumeApproval':
      return decideConsume(approval, command);
    case 'ExpireApproval':
      if (approval.state !== 'Pending' || !isPastExpiry(approval, now)) return [];
      return [{ type: 'ApprovalExpired', data: { approvalId: approval.approvalId, requestHash: approval.requestHash }, metadata: metadataFor(approval, 'ApprovalExpired', now, {}) }];
    case 'VoidApproval':
      if (approval.state !== 'Pending' && approval.state !== 'Granted') return [];
      return [
        {
          type: 'ApprovalVoided',
          data: { approvalId: approval.approvalId, requestHash: approval.requestHash, reason: command.data.reason },
          metadata: metadataFor(approval, 'ApprovalVoided', now, { causationId: command.data.causationId }),
        },
      ];
  }
}

/** Folds one event into the approval. Total: an event that does not apply (none before the opening) changes nothing. */
export function evolve(state: ApprovalAggregate, event: ApprovalStreamEvent): ApprovalAggregate {
  if (event.type === 'ApprovalOpened') return state ?? { ...event.data, state: 'Pending', updatedAt: event.metadata.occurredAt, version: 1 };
  if (state === null) return null;
  const at = event.metadata.occurredAt;
  const moved = { ...state, updatedAt: at, version: state.version + 1 };
  switch (event.type) {
    case 'ApprovalGranted':
      return { ...moved, state: 'Granted', decidedBy: event.data.decidedBy, decidedAt: at, ...(event.data.reason === undefined ? {} : { reason: event.data.reason }) };
    case 'ApprovalRejected':
      return { ...moved, state: 'Rejected', decidedBy: event.data.decidedBy, decidedAt: at, reason: event.data.reason };
    case 'ApprovalExpired':
      return { ...moved, state: 'Expired' };
    case 'ApprovalConsumed':
      return { ...moved, state: 'Consumed', consumedAt: at };
    case 'ApprovalVoided':
      return { ...moved, state: 'Voided', voidReason: event.data.reason };
  }
}

/** The Approval aggregate on the one write path. */
export const approvalDecider: Decider<ApprovalAggregate, ApprovalCommand, ApprovalStreamEvent> = {
  decide,
  evolve,
  initialState: () => null,
};
