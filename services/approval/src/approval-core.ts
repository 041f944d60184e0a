// The Approval aggregate as a pure core: what a command does to an approval, decided from the approval, the
// command and the time alone. No I/O, no clock, no random ids: the shell supplies `now`, stores the changes with
// compare-and-set and publishes the event the core built.
//
//   Pending --Approve--> Granted --Consume--> Consumed
//   Pending --Reject---> Rejected
//   Pending --Expire---> Expired            (the sweeper, once expiresAt has passed)
//   Pending|Granted --Void--> Voided        (the registry suspended or retired the bound tool version)
import {
  ToolplaneError,
  type Approval,
  type ApprovalEventMetadata,
  type ApprovalOutcomeEvent,
  type ApprovalRequested,
  type DescriptorRetirementReason,
  type Scope,
} from '@toolplane/contracts';
import { approvalEventId } from './event-ids.js';

/** A verified human who decides: who they are, the scope their operator token covers, and their roles. */
export interface Decider {
  readonly principal: string;
  readonly tenant: string;
  readonly workspaces: readonly string[];
  readonly roles: readonly string[];
}

/** What can be asked of an approval. */
export type ApprovalCommand =
  | { readonly type: 'Approve'; readonly decider: Decider; readonly reason?: string | undefined }
  | { readonly type: 'Reject'; readonly decider: Decider; readonly reason: string }
  | { readonly type: 'Consume'; readonly requestHash: string; readonly toolVersion: string }
  | { readonly type: 'Expire' }
  | { readonly type: 'Void'; readonly reason: DescriptorRetirementReason; readonly causationId?: string | undefined };

/** The fields a transition sets (with `version` incremented by the store's compare-and-set). */
export type ApprovalChanges = Partial<Omit<Approval, 'approvalId' | 'tenant' | 'workspace' | 'version'>>;

/** What a command does: a transition with its event, nothing (already so, or not due), or a typed refusal. */
export type Decision =
  | { readonly kind: 'changed'; readonly changes: ApprovalChanges; readonly event: ApprovalOutcomeEvent }
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'refused'; readonly error: ToolplaneError };

const unchanged: Decision = { kind: 'unchanged' };
const refuse = (code: ToolplaneError['code'], message: string): Decision => ({ kind: 'refused', error: new ToolplaneError(code, message) });

/** Whether the approval's decision deadline has passed at `now`. */
export function isPastExpiry(approval: Approval, now: Date): boolean {
  return now.getTime() >= Date.parse(approval.expiresAt);
}

/** The metadata of an event about `approval`, with its deterministic id. */
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

/** Who decides is checked before anything about the approval's state is told. */
function authorise(approval: Approval, decider: Decider): Decision | undefined {
  if (decider.tenant !== approval.tenant || !decider.workspaces.includes(approval.workspace)) {
    return refuse('AUTHORIZATION_DENIED', `${decider.principal} may not decide approvals of ${approval.tenant}/${approval.workspace}`);
  }
  if (decider.principal === approval.requestedBy || (approval.agentId !== undefined && decider.principal === approval.agentId)) {
    return refuse('AUTHORIZATION_DENIED', 'an approval cannot be decided by the principal or agent that requested it');
  }
  const listed = approval.approvers.principals.includes(decider.principal);
  const holdsRole = decider.roles.some((role) => approval.approvers.roles.includes(role));
  if (!listed && !holdsRole) {
    const roles = approval.approvers.roles.length > 0 ? `a role of ${approval.approvers.roles.join(', ')}` : 'to be named';
    return refuse('AUTHORIZATION_DENIED', `${decider.principal} is not an approver of approval ${approval.approvalId} (needs ${roles})`);
  }
  return undefined;
}

function decideHumanDecision(approval: Approval, command: Extract<ApprovalCommand, { type: 'Approve' | 'Reject' }>, now: Date): Decision {
  const denied = authorise(approval, command.decider);
  if (denied) return denied;
  const { principal } = command.decider;
  const target = command.type === 'Approve' ? 'Granted' : 'Rejected';
  switch (approval.state) {
    case 'Pending': {
      if (isPastExpiry(approval, now)) return refuse('APPROVAL_EXPIRED', `approval ${approval.approvalId} expired at ${approval.expiresAt}`);
      const decidedAt = now.toISOString();
      const changes: ApprovalChanges = { state: target, decidedBy: principal, decidedAt, updatedAt: decidedAt, ...(command.reason === undefined ? {} : { reason: command.reason }) };
      const metadata = metadataFor(approval, command.type === 'Approve' ? 'ApprovalGranted' : 'ApprovalRejected', now, { actor: principal });
      const event: ApprovalOutcomeEvent =
        command.type === 'Approve'
          ? { type: 'ApprovalGranted', data: { approvalId: approval.approvalId, requestHash: approval.requestHash, decidedBy: principal, ...(command.reason === undefined ? {} : { reason: command.reason }) }, metadata }
          : { type: 'ApprovalRejected', data: { approvalId: approval.approvalId, requestHash: approval.requestHash, decidedBy: principal, reason: command.reason }, metadata };
      return { kind: 'changed', changes, event };
    }
    case 'Granted':
    case 'Rejected':
      // The same human repeating the same decision (a retried request) is told it is done; anything else conflicts.
      if (approval.state === target && approval.decidedBy === principal) return unchanged;
      return refuse('CONFLICT', `approval ${approval.approvalId} was already ${approval.state === 'Granted' ? 'granted' : 'rejected'}`);
    case 'Expired':
      return refuse('APPROVAL_EXPIRED', `approval ${approval.approvalId} expired at ${approval.expiresAt}`);
    case 'Consumed':
      return refuse('CONFLICT', `approval ${approval.approvalId} was already granted and used`);
    case 'Voided':
      return refuse('CONFLICT', `approval ${approval.approvalId} is void: its tool version is no longer invocable (${approval.voidReason ?? 'retired'})`);
  }
}

function decideConsume(approval: Approval, command: Extract<ApprovalCommand, { type: 'Consume' }>, now: Date): Decision {
  // The binding is checked first: a different hash or version is a different request, whatever the state.
  if (command.requestHash !== approval.requestHash) return refuse('CONFLICT', `approval ${approval.approvalId} is bound to another request hash`);
  if (command.toolVersion !== approval.toolVersion) return refuse('CONFLICT', `approval ${approval.approvalId} is bound to another version of ${approval.toolId}`);
  switch (approval.state) {
    case 'Granted': {
      const consumedAt = now.toISOString();
      return {
        kind: 'changed',
        changes: { state: 'Consumed', consumedAt, updatedAt: consumedAt },
        event: { type: 'ApprovalConsumed', data: { approvalId: approval.approvalId, requestHash: approval.requestHash }, metadata: metadataFor(approval, 'ApprovalConsumed', now, {}) },
      };
    }
    case 'Pending':
      if (isPastExpiry(approval, now)) return refuse('APPROVAL_EXPIRED', `approval ${approval.approvalId} expired at ${approval.expiresAt}`);
      return refuse('CONFLICT', `approval ${approval.approvalId} has not been decided yet`);
    case 'Rejected':
      return refuse('APPROVAL_REJECTED', `approval ${approval.approvalId} was rejected`);
    case 'Expired':
      return refuse('APPROVAL_EXPIRED', `approval ${approval.approvalId} expired at ${approval.expiresAt}`);
    case 'Consumed':
      return refuse('CONFLICT', `approval ${approval.approvalId} was already used`);
    case 'Voided':
      return refuse('CONFLICT', `approval ${approval.approvalId} is void: its tool version is no longer invocable (${approval.voidReason ?? 'retired'})`);
  }
}

/** Decides what `command` does to `approval` at `now`. Pure: the same inputs always give the same decision. */
export function decide(approval: Approval, command: ApprovalCommand, now: Date): Decision {
  switch (command.type) {
    case 'Approve':
    case 'Reject':
      return decideHumanDecision(approval, command, now);
    case 'Consume':
      return decideConsume(approval, command, now);
    case 'Expire': {
      if (approval.state !== 'Pending' || !isPastExpiry(approval, now)) return unchanged;
      return {
        kind: 'changed',
        changes: { state: 'Expired', updatedAt: now.toISOString() },
        event: { type: 'ApprovalExpired', data: { approvalId: approval.approvalId, requestHash: approval.requestHash }, metadata: metadataFor(approval, 'ApprovalExpired', now, {}) },
      };
    }
    case 'Void': {
      if (approval.state !== 'Pending' && approval.state !== 'Granted') return unchanged;
      return {
        kind: 'changed',
        changes: { state: 'Voided', voidReason: command.reason, updatedAt: now.toISOString() },
        event: {
          type: 'ApprovalVoided',
          data: { approvalId: approval.approvalId, requestHash: approval.requestHash, reason: command.reason },
          metadata: metadataFor(approval, 'ApprovalVoided', now, { causationId: command.causationId }),
        },
      };
    }
  }
}

/**
 * The fields a decided transition writes: its changes, plus its event appended to the outbox in the same guarded
 * write, so the event is never lost between the write and its publication.
 */
export function transitionFields(approval: Approval, decision: Extract<Decision, { kind: 'changed' }>): ApprovalChanges {
  return { ...decision.changes, outbox: [...(approval.outbox ?? []), decision.event] };
}

/** The approval after a transition (what the store holds once compare-and-set succeeded). */
export function evolve(approval: Approval, decision: Extract<Decision, { kind: 'changed' }>): Approval {
  return { ...approval, ...transitionFields(approval, decision), version: approval.version + 1 };
}

/**
 * The new approval an ApprovalRequested event asks for, in the scope of the subject it arrived on. Refused
 * (INVALID_ARGUMENT) when the event's scope differs from its subject's or it names no tool version.
 */
export function approvalFromRequest(event: ApprovalRequested, subjectScope: Scope, now: Date): { ok: true; approval: Approval } | { ok: false; error: ToolplaneError } {
  const { metadata, data } = event;
  if (metadata.tenant !== subjectScope.tenant || metadata.workspace !== subjectScope.workspace) {
    return { ok: false, error: new ToolplaneError('INVALID_ARGUMENT', 'ApprovalRequested names another scope than its subject') };
  }
  if (metadata.toolVersion === undefined) {
    return { ok: false, error: new ToolplaneError('INVALID_ARGUMENT', 'ApprovalRequested names no tool version; an approval is bound to an exact one') };
  }
  return {
    ok: true,
    approval: {
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
      state: 'Pending',
      // Normalised to toISOString's form, so stored instants compare correctly as strings.
      requestedAt: new Date(metadata.occurredAt).toISOString(),
      expiresAt: new Date(data.expiresAt).toISOString(),
      correlationId: metadata.correlationId,
      ...(metadata.flowRunId === undefined ? {} : { flowRunId: metadata.flowRunId }),
      ...(metadata.workItemId === undefined ? {} : { workItemId: metadata.workItemId }),
      outbox: [],
      updatedAt: now.toISOString(),
      version: 1,
    },
  };
}
