import { canonicalHash, canonicalJson, deterministicUuid, sha256Hex, uuidFromDigest, type Scope, type Uuid } from '@toolplane/contracts';

// The adapter's derived ids (on the generic derivation of @toolplane/contracts): the same inputs give the same id,
// so a replayed step produces byte-identical events and decisions.

const EVENT_ID_PURPOSE = 'toolplane/v1/invocation-event-id';

/** The eventId of an invocation's event number `sequence`: a replayed event is the same event. */
export function invocationEventId(invocationId: Uuid, sequence: number): Uuid {
  // deterministicUuid('toolplane/v1/invocation-event-id', { invocationId, sequence }) with its canonical JSON written
  // out (keys in RFC 8785 order): every event of every call derives one, so it skips building and sorting objects.
  let text: string;
  try {
    text = `{"inputs":{"invocationId":${canonicalJson(invocationId)},"sequence":${canonicalJson(sequence)}},"purpose":"${EVENT_ID_PURPOSE}"}`;
  } catch {
    return deterministicUuid(EVENT_ID_PURPOSE, { invocationId, sequence }); // refused, with the generic derivation's reason
  }
  return uuidFromDigest(sha256Hex(text));
}

/**
 * The logical ToolCallId of a call whose runtime named none: derived from the scope and idempotency key, so every
 * attempt and replay of the same call carries the same id. Starts with a letter, as ExternalId requires.
 */
export function derivedToolCallId(scope: Scope, idempotencyKey: string): string {
  return `tc-${canonicalHash({ purpose: 'toolplane/v1/tool-call-id', ...scope, idempotencyKey }).slice(0, 40)}`;
}
