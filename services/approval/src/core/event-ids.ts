import { sha256Hex } from '@toolplane/contracts';

/**
 * A name-based UUID (RFC 9562 version 8, from SHA-256): the same name always gives the same id. Events derived
 * this way get the same eventId (and Nats-Msg-Id) however often a transition is retried or republished.
 */
export function nameBasedUuid(name: string): string {
  const hex = sha256Hex(name).slice(0, 32).split('');
  hex[12] = '8';
  // The variant: the two high bits of the 17th hex digit are 10.
  hex[16] = ((parseInt(hex[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  const s = hex.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20, 32)}`;
}

/** The eventId of an approval's transition event; an approval makes each transition at most once. */
export function approvalEventId(approvalId: string, type: string): string {
  return nameBasedUuid(`toolplane:approval:${approvalId}:${type}`);
}
