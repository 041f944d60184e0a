import { z } from 'zod';
import { Approvers } from './approval-events.js';
import { RiskClass, SideEffectClass } from './classification.js';
import { AgentRevision, ExternalId, InvocationId, IsoDateTime, PrincipalId, Sha256Hex, TenantId, ToolCallId, ToolId, ToolVersion, Uuid, WorkspaceId, boundedText } from './primitives.js';
import { DescriptorRetirementReason } from './registry-events.js';
import { ApprovalState } from './states.js';

/**
 * One approval: lets exactly one invocation, identified by its request hash, of exactly one tool version run, once.
 * Decided by an authorised human other than the requester, before it expires. Folded from the approval's stream
 * (`approvalStream`); the approval service's read model `approvals` holds it as folded.
 */
export const Approval = z.object({
  approvalId: Uuid,
  tenant: TenantId,
  workspace: WorkspaceId,
  invocationId: InvocationId,
  toolCallId: ToolCallId,
  toolId: ToolId,
  toolVersion: ToolVersion,
  requestHash: Sha256Hex,
  sideEffectClass: SideEffectClass,
  riskClass: RiskClass,
  summary: boundedText(2000),
  /** The principal on whose behalf the invocation runs; never its decider. */
  requestedBy: PrincipalId,
  agentId: ExternalId.optional(),
  agentRevision: AgentRevision.optional(),
  approvers: Approvers,
  state: ApprovalState,
  requestedAt: IsoDateTime,
  expiresAt: IsoDateTime,
  decidedBy: PrincipalId.optional(),
  decidedAt: IsoDateTime.optional(),
  reason: boundedText(1024).optional(),
  consumedAt: IsoDateTime.optional(),
  /** Why the approval is Voided: what happened to the tool version it is bound to. */
  voidReason: DescriptorRetirementReason.optional(),
  correlationId: ExternalId,
  flowRunId: ExternalId.optional(),
  workItemId: ExternalId.optional(),
  updatedAt: IsoDateTime,
  /** How many recorded changes the approval has had, its request included (1 while Pending). */
  version: z.number().int().positive(),
});
export type Approval = z.infer<typeof Approval>;
