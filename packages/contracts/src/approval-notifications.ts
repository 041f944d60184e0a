import { z } from 'zod';
import { RiskClass, SideEffectClass } from './classification.js';
import { AgentRevision, EventId, ExternalId, IsoDateTime, PrincipalId, TenantId, ToolCallId, ToolId, ToolVersion, Uuid, WorkspaceId } from './primitives.js';

// The approval service's outgoing webhook: when a gated call waits for a human, the tenant's configured receiver is
// told (to route it to chat or paging). The body names the call and never carries its arguments or any secret.
//
// Each request is signed: `Toolplane-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`. A
// receiver recomputes the HMAC over the raw body it got, compares in constant time, and refuses a timestamp older than
// it tolerates (five minutes is usual) so a captured request cannot be replayed later. Delivery is at least once:
// `Toolplane-Webhook-Id` (the notification's `id`) is the same on every retry, for the receiver to drop copies.

/** The header carrying `t=<unix seconds>,v1=<hex HMAC-SHA256>`. */
export const WEBHOOK_SIGNATURE_HEADER = 'Toolplane-Signature';

/** The header carrying the notification's id, the same on every delivery attempt. */
export const WEBHOOK_ID_HEADER = 'Toolplane-Webhook-Id';

/** The text a webhook's signature is computed over: the timestamp, a dot, the raw body. */
export function webhookSignedText(timestampSeconds: number, rawBody: string): string {
  return `${timestampSeconds}.${rawBody}`;
}

/** The body of the webhook sent when an approval is requested. */
export const ApprovalRequestedNotification = z.strictObject({
  type: z.literal('approval.requested'),
  /** The ApprovalRequested event's id: the same on every retry. */
  id: EventId,
  occurredAt: IsoDateTime,
  tenant: TenantId,
  workspace: WorkspaceId,
  approvalId: Uuid,
  toolCallId: ToolCallId,
  toolId: ToolId,
  toolVersion: ToolVersion,
  sideEffectClass: SideEffectClass,
  riskClass: RiskClass,
  /** The principal the call runs for. */
  requestedBy: PrincipalId,
  agentId: ExternalId.optional(),
  agentRevision: AgentRevision.optional(),
  flowRunId: ExternalId.optional(),
  expiresAt: IsoDateTime,
  /** Where to decide it, when the console's public URL is configured. */
  consoleUrl: z.url().max(2048).optional(),
});
export type ApprovalRequestedNotification = z.infer<typeof ApprovalRequestedNotification>;
