import { sha256Hex } from '@toolplane/contracts';

/**
 * A deterministic event id: an RFC 9562 version-8 UUID made from a hash of what the event is the `index`-th
 * consequence of (an aggregate and the version its change produced). The same change always yields the same
 * ids, so a republished event carries the same Nats-Msg-Id and JetStream drops the duplicate, and two replicas
 * that decided the same change cannot emit it under two ids.
 */
export function deterministicEventId(origin: string, index: number): string {
  const hex = sha256Hex(`toolplane/v1/registry-event:${origin}#${index}`).slice(0, 32).split('');
  hex[12] = '8';
  // The variant bits 10xx in the high nibble of the clock sequence.
  hex[16] = ((Number.parseInt(hex[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  const s = hex.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20, 32)}`;
}
