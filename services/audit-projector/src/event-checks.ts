// What the projector refuses beyond the event contract itself (the consumer validates that): events it would
// otherwise file under the wrong scope, and events too big to be what they claim. Pure.
import { MAX_EVENT_BYTES, ToolplaneError, canonicalJson, parseSubject, subjectOfEvent, type LifecycleEvent } from '@toolplane/contracts';

/** An event the projector accepted: the event, its canonical JSON (what the audit chain hashes) and its size. */
export interface AcceptedEvent {
  readonly event: LifecycleEvent;
  readonly canonical: string;
}

/**
 * Accepts an event delivered on `subject`, or throws INVALID_ARGUMENT (not retryable: the consumer dead-letters
 * it with this reason). The subject is what NATS permissions pinned to the publisher, so an event whose metadata
 * names another tenant, workspace or type than its subject is refused rather than filed under either.
 */
export function acceptEvent(event: LifecycleEvent, subject: string, maxBytes: number = MAX_EVENT_BYTES): AcceptedEvent {
  const canonical = canonicalJson(event);
  const bytes = Buffer.byteLength(canonical);
  if (bytes > maxBytes) {
    throw new ToolplaneError('INVALID_ARGUMENT', `the event is ${bytes} bytes; lifecycle events hold ids and hashes and may not exceed ${maxBytes} bytes`);
  }
  const expected = subjectOfEvent(event);
  if (subject !== expected) {
    let scope: { tenant: string; workspace: string } | undefined;
    try {
      const parsed = parseSubject(subject);
      if (parsed.kind === 'event') scope = { tenant: parsed.tenant, workspace: parsed.workspace };
    } catch {
      scope = undefined;
    }
    const { tenant, workspace } = event.metadata;
    if (scope === undefined) throw new ToolplaneError('INVALID_ARGUMENT', 'the event arrived on a subject that is not an event subject');
    if (scope.tenant !== tenant || scope.workspace !== workspace) {
      throw new ToolplaneError('INVALID_ARGUMENT', `the event's metadata names ${tenant}/${workspace} but it was published on a subject of ${scope.tenant}/${scope.workspace}`);
    }
    throw new ToolplaneError('INVALID_ARGUMENT', `an event of type ${event.type} was published on another type's subject`);
  }
  return { event, canonical };
}
