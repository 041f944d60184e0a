import { z } from 'zod';
import { ApprovalConsumed, ApprovalExpired, ApprovalGranted, ApprovalRejected, ApprovalRequested, ApprovalVoided } from './approval-events.js';
import {
  InvocationDenied,
  InvocationReceived,
  SandboxLeased,
  SandboxReleased,
  ToolCallCancelled,
  ToolCallCompleted,
  ToolCallFailed,
  ToolCallStarted,
  ToolEffectUncertain,
} from './invocation-events.js';
import {
  McpCapabilitiesDiscovered,
  McpServerRegistered,
  McpServerStateChanged,
  McpToolDefinitionChanged,
  ReleaseDeprecated,
  ReleasePublished,
  ReleaseRevoked,
  ToolDescriptorActivated,
  ToolDescriptorRetired,
} from './registry-events.js';
import { ToolplaneError } from './errors.js';
import { SecretLeaseDenied, SecretLeased } from './secret-events.js';

/** The events of one invocation's path through the pipeline, emitted by the tool adapter. */
export const InvocationEvent = z.discriminatedUnion('type', [
  InvocationReceived,
  InvocationDenied,
  ToolCallStarted,
  ToolCallCompleted,
  ToolCallFailed,
  ToolCallCancelled,
  ToolEffectUncertain,
  SandboxLeased,
  SandboxReleased,
]);
export type InvocationEvent = z.infer<typeof InvocationEvent>;

/** The events of an approval: requested by the adapter, decided and consumed through the approval service. */
export const ApprovalEvent = z.discriminatedUnion('type', [ApprovalRequested, ApprovalGranted, ApprovalRejected, ApprovalExpired, ApprovalConsumed, ApprovalVoided]);
export type ApprovalEvent = z.infer<typeof ApprovalEvent>;

/** The events of the MCP server registry and its tool descriptors. */
export const RegistryEvent = z.discriminatedUnion('type', [
  McpServerRegistered,
  McpServerStateChanged,
  McpCapabilitiesDiscovered,
  McpToolDefinitionChanged,
  ToolDescriptorActivated,
  ToolDescriptorRetired,
  ReleasePublished,
  ReleaseDeprecated,
  ReleaseRevoked,
]);
export type RegistryEvent = z.infer<typeof RegistryEvent>;

/** The events of the secret broker. */
export const SecretEvent = z.discriminatedUnion('type', [SecretLeased, SecretLeaseDenied]);
export type SecretEvent = z.infer<typeof SecretEvent>;

/** Every v1 lifecycle event, discriminated by `type`. */
export const LifecycleEvent = z
  .discriminatedUnion('type', [...InvocationEvent.options, ...ApprovalEvent.options, ...RegistryEvent.options, ...SecretEvent.options])
  .meta({ description: 'Any v1 lifecycle event: { type, data, metadata }, discriminated by type.' });
export type LifecycleEvent = z.infer<typeof LifecycleEvent>;

/** The name of a lifecycle event type. */
export type EventType = LifecycleEvent['type'];

/** An event family: the subject token that groups event types (`tp.v1.evt.{tenant}.{workspace}.{family}.{type}`). */
export const EventFamily = z.enum(['invocation', 'approval', 'registry', 'secret', 'flow']);
export type EventFamily = z.infer<typeof EventFamily>;

const typesOf = <T extends { shape: { type: { value: string } } }>(options: readonly T[]): T['shape']['type']['value'][] =>
  options.map((option) => option.shape.type.value);

/** The event types of each family; `flow` has none yet. */
export const eventTypesByFamily: { readonly [F in EventFamily]: readonly EventType[] } = {
  invocation: typesOf(InvocationEvent.options),
  approval: typesOf(ApprovalEvent.options),
  registry: typesOf(RegistryEvent.options),
  secret: typesOf(SecretEvent.options),
  flow: [],
};

const familyByType = new Map<string, EventFamily>(
  EventFamily.options.flatMap((family) => eventTypesByFamily[family].map((type) => [type, family] as const)),
);

/** The family an event type belongs to. */
export function eventFamilyOf(type: EventType): EventFamily {
  const family = familyByType.get(type);
  if (family === undefined) throw new ToolplaneError('INVALID_ARGUMENT', `unknown event type: ${String(type)}`);
  return family;
}

/** Whether a string names a known event type. */
export function isEventType(type: string): type is EventType {
  return familyByType.has(type);
}

/**
 * The Nats-Msg-Id an event is published with, so JetStream drops a republished duplicate: for events in an
 * invocation's own sequence `{invocationId}:{sequence}` (a redelivered request that republishes the same fact
 * gets the same id), for every other event its eventId.
 */
export function eventMsgId(event: LifecycleEvent): string {
  const metadata = event.metadata;
  return 'sequence' in metadata ? `${metadata.invocationId}:${metadata.sequence}` : metadata.eventId;
}
