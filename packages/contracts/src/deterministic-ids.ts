import { canonicalHash } from './canonical-json.js';
import type { Uuid } from './primitives.js';

// Ids derived instead of drawn at random: the same inputs give the same id, so a replayed step produces
// byte-identical events and decisions (and JetStream / projections deduplicate them).

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
