// Voids approvals whose tool version the registry suspended or retired (durable consumer `approval-registry`).
import { scopeOfSubject, type DescriptorRetirementReason, type RegistryEvent } from '@toolplane/contracts';
import type { DeliveryContext } from '@toolplane/messaging';
import { runCommand, type ApprovalRuntime } from './approval-runtime.js';
import { findApprovals } from './approval-store.js';

/** The tool version a registry event suspends or retires, and why; undefined for events that do neither. */
export function suspendedToolVersion(event: RegistryEvent): { toolId: string; toolVersion: string; reason: DescriptorRetirementReason } | undefined {
  switch (event.type) {
    case 'McpToolDefinitionChanged':
      // An unbound tool changing suspends no descriptor, so no approval can be bound to it.
      if (event.data.toolId === undefined || event.data.toolVersion === undefined) return undefined;
      return { toolId: event.data.toolId, toolVersion: event.data.toolVersion, reason: event.data.change === 'Changed' ? 'DefinitionChanged' : 'ToolRemoved' };
    case 'ToolDescriptorRetired':
      return { toolId: event.data.toolId, toolVersion: event.data.toolVersion, reason: event.data.reason };
    default:
      return undefined;
  }
}

const pageSize = 100;

/**
 * Voids every pending or granted approval of the event's scope bound to the suspended or retired tool version.
 * Idempotent: a redelivery finds them void already. ApprovalVoided names the registry event as its cause.
 */
export async function onRegistryEvent(runtime: ApprovalRuntime, event: RegistryEvent, delivery: Pick<DeliveryContext, 'subject' | 'signal'>): Promise<void> {
  const suspended = suspendedToolVersion(event);
  if (suspended === undefined) return;
  const scope = scopeOfSubject(delivery.subject);
  const filter = { ...scope, toolId: suspended.toolId, toolVersion: suspended.toolVersion, state: { $in: ['Pending' as const, 'Granted' as const] } };
  const seen = new Set<string>();
  for (;;) {
    // Voided ones drop out of the filter; `seen` ends the loop should one stay (a refusal, a lost race).
    const batch = (await findApprovals(runtime.approvals, filter, '_id', pageSize, delivery.signal)).filter((approval) => !seen.has(approval.approvalId));
    if (batch.length === 0) return;
    for (const approval of batch) {
      seen.add(approval.approvalId);
      const outcome = await runCommand(runtime, scope, approval.approvalId, { type: 'Void', reason: suspended.reason, causationId: event.metadata.eventId }, delivery.signal);
      if (outcome.changed) runtime.logger.info({ approvalId: approval.approvalId, toolId: approval.toolId, toolVersion: approval.toolVersion, reason: suspended.reason }, 'approval voided');
    }
  }
}
