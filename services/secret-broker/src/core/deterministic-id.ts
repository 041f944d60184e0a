import { createHash } from 'node:crypto';

/**
 * A UUID (version 8, RFC 9562) derived from a name: the same name always gives the same id, so a fact
 * republished after a retry gets the same event id and JetStream drops the duplicate.
 */
export function deterministicUuid(name: string): string {
  const bytes = createHash('sha256').update(`toolplane/secret-broker/${name}`, 'utf8').digest().subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x80;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
