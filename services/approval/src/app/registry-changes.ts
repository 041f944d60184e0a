// Voids approvals whose tool version the registry suspended or retired (durable consumer `approval-registry`).
import { approvalStream, scopeOfSubject, sleep, ToolplaneError, type DescriptorRetirementReason, type RegistryEvent } from '@toolplane/contracts';
import { consumerProgress, streamPosition, type DeliveryContext } from '@toolplane/messaging';
import { findApprovals } from '../adapters/approval-read-model.js';
import { approvalConsumers } from '../consumers.js';
import { runCommand, type ApprovalRuntime } from './approval-runtime.js';

/**
 * The tool version a registry event suspends or retires, and why; undefined for events that do neither, and for a
 * release's retirement whose in-flight policy is FINISH (calls already accepted, parked ones included, may finish).
 */
export function suspendedToolVersion(event: RegistryEvent): { toolId: string; toolVersion: string; reason: DescriptorRetirementReason } | undefined {
  switch (event.type) {
    case 'McpToolDefinitionChanged':
      // An unbound tool changing suspends no descriptor, so no approval can be bound to it.
      if (event.data.toolId === undefined || event.data.toolVersion === undefined) return undefined;
      return { toolId: event.data.toolId, toolVersion: event.data.toolVersion, reason: event.data.change === 'Changed' ? 'DefinitionChanged' : 'ToolRemoved' };
    case 'ToolDescriptorRetired':
      if (event.data.inFlight === 'FINISH') return undefined;
      return { toolId: event.data.toolId, toolVersion: event.data.toolVersion, reason: event.data.reason };
    default:
      return undefined;
  }
}

const pageSize = 100;
// How long a registry change waits for the read model to hold every approval opened before it.
const catchUpMs = 5_000;

/**
 * Waits until the projector has written every approval appended so far, so the read model lists all candidates
 * opened before now; TEMPORARY_UNAVAILABLE (retried) if it does not catch up in time.
 */
async function readModelCaughtUp(runtime: ApprovalRuntime, signal: AbortSignal): Promise<void> {
  const target = (await streamPosition(runtime.messaging, approvalStream.name, signal)).lastSequence;
  const deadline = Date.now() + catchUpMs;
  while ((await consumerProgress(runtime.messaging, approvalStream.name, approvalConsumers.projector, signal)).ackFloor < target) {
    if (Date.now() > deadline) throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `the approvals read model is behind its stream (sequence ${target})`);
    await sleep(50, signal, 'waiting for the approvals read model');
  }
}

/**
 * Voids every pending or granted approval of the event's scope bound to the suspended or retired tool version: the
 * read model names the candidates, and each is voided through the write path (the decider leaves alone what is no
 * longer pending or granted). Idempotent: a redelivery finds them void already. ApprovalVoided names the registry
 * event as its cause.
 */
export async function onRegistryEvent(runtime: ApprovalRuntime, event: RegistryEvent, delivery: Pick<DeliveryContext, 'subject' | 'signal'>): Promise<void> {
  const suspended = suspendedToolVersion(event);
  if (suspended === undefined) return;
  const scope = scopeOfSubject(delivery.subject);
  await readModelCaughtUp(runtime, delivery.signal);
  const filter = { ...scope, toolId: suspended.toolId, toolVersion: suspended.toolVersion, state: { $in: ['Pending' as const, 'Granted' as const] } };
  let after: string | undefined;
  for (;;) {
    // By id, past the previous page: the read model may not show this handler's own voids yet.
    const batch = await findApprovals(runtime.approvals, after === undefined ? filter : { ...filter, _id: { $gt: after } }, '_id', pageSize, delivery.signal);
    for (const approval of batch) {
      const command = { type: 'VoidApproval', data: { reason: suspended.reason, causationId: event.metadata.eventId }, metadata: { approvalId: approval.approvalId, scope, now: runtime.clock() } } as const;
      const outcome = await runCommand(runtime, approval.approvalId, command, delivery.signal);
      if (outcome.changed) runtime.logger.info({ approvalId: approval.approvalId, toolId: approval.toolId, toolVersion: approval.toolVersion, reason: suspended.reason }, 'approval voided');
    }
    if (batch.length < pageSize) return;
    after = batch.at(-1)?.approvalId;
  }
}
