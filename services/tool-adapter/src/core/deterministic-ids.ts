import { canonicalHash, canonicalJson, sha256Hex, type Scope, type Uuid } from '@toolplane/contracts';

// Ids the core derives instead of drawing at random: the same inputs give the same id, so a replayed step
// produces byte-identical events and decisions (and JetStream / projections deduplicate them).

/** Formats the first 128 bits of a hex digest as an RFC 9562 version-8 (custom) UUID. */
export function uuidFromDigest(hex: string): Uuid {
  if (!/^[0-9a-f]{32,}$/.test(hex)) throw new RangeError('uuidFromDigest needs at least 32 lowercase hex digits');
  const version = `8${hex.slice(13, 16)}`;
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16) + hex.slice(17, 20);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${version}-${variant}-${hex.slice(20, 32)}`;
}

/** A UUID derived from a purpose and JSON inputs: SHA-256 of their canonical JSON, as a version-8 UUID. */
export function deterministicUuid(purpose: string, inputs: unknown): Uuid {
  return uuidFromDigest(canonicalHash({ purpose, inputs }));
}

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
