// The per-tenant audit chain: pure. Each entry commits to its event (by hash) and to the entry before it, so
// an entry that is edited, deleted, moved or replaced breaks the chain exactly there.
import { AuditChainEntry, canonicalJson, sha256Hex, type AuditChainBreak, type LifecycleEvent } from '@toolplane/contracts';

/** The previous-hash of the first entry of every chain. */
export const GENESIS_HASH = '0'.repeat(64);

const positionDigits = 12;
const hashPurpose = 'toolplane/v1/audit-chain-entry';

/** Where a chain ends: its last position (0 for an empty chain) and that entry's hash. */
export interface ChainHead {
  readonly position: number;
  readonly hash: string;
}

/** The head of an empty chain. */
export const emptyHead: ChainHead = { position: 0, hash: GENESIS_HASH };

/** An audit chain entry with its document id. */
export type ChainRecord = AuditChainEntry & { readonly _id: string };

/** SHA-256 of the canonical JSON of a whole event. */
export function eventHash(event: LifecycleEvent): string {
  return sha256Hex(canonicalJson(event));
}

/** The id of a tenant's entry at a position: zero-padded, so ids sort in chain order. */
export function chainEntryId(tenant: string, position: number): string {
  return `${tenant}/${String(position).padStart(positionDigits, '0')}`;
}

/** The first and last possible ids of a tenant's entries (tenant ids have no `/`, and `0` follows `/`). */
export function chainIdRange(tenant: string): { readonly from: string; readonly to: string } {
  return { from: `${tenant}/`, to: `${tenant}0` };
}

/** The position an entry id names, if it is an entry id of this tenant. */
export function positionOfId(tenant: string, id: unknown): number | undefined {
  if (typeof id !== 'string' || !id.startsWith(`${tenant}/`)) return undefined;
  const digits = id.slice(tenant.length + 1);
  if (!/^[0-9]{12}$/.test(digits)) return undefined;
  const position = Number(digits);
  return position > 0 ? position : undefined;
}

/** The hash an entry's fields commit to (every field but the hash itself). */
export function entryHash(entry: Omit<AuditChainEntry, 'hash'>): string {
  const { tenant, position, workspace, eventId, eventType, eventHash: ofEvent, prevHash, appendedAt } = entry;
  return sha256Hex(canonicalJson({ purpose: hashPurpose, tenant, position, workspace, eventId, eventType, eventHash: ofEvent, prevHash, appendedAt }));
}

/** What appending needs of an event. */
export interface ChainItem {
  readonly event: LifecycleEvent;
  readonly eventHash: string;
}

/** The entries that append `items`, in order, after `head`; `appendedAt` is the caller's clock. */
export function chainEntries(tenant: string, head: ChainHead, items: readonly ChainItem[], appendedAt: string): ChainRecord[] {
  const entries: ChainRecord[] = [];
  let previous = head;
  for (const { event, eventHash: ofEvent } of items) {
    const fields = {
      tenant,
      position: previous.position + 1,
      workspace: event.metadata.workspace,
      eventId: event.metadata.eventId,
      eventType: event.type,
      eventHash: ofEvent,
      prevHash: previous.hash,
      appendedAt,
    };
    const hash = entryHash(fields);
    entries.push({ _id: chainEntryId(tenant, fields.position), ...fields, hash });
    previous = { position: fields.position, hash };
  }
  return entries;
}

/**
 * Walks a tenant's chain entry by entry, in id order, and stops at the first break. Feed it every stored
 * document of the tenant's id range with `push`; then `finish`, optionally with the head the appenders last
 * recorded, which reveals entries deleted from the end.
 */
export class ChainVerifier {
  private verified: ChainHead = emptyHead;
  private read = 0;
  private broken: AuditChainBreak | undefined;

  constructor(private readonly tenant: string) {}

  /** The first break found so far. */
  get firstBreak(): AuditChainBreak | undefined {
    return this.broken;
  }

  /** The last position that verified, and its hash. */
  get head(): ChainHead {
    return this.verified;
  }

  /** How many entries were read. */
  get entries(): number {
    return this.read;
  }

  /** Checks the next stored document; returns false once the chain is broken (there is no point reading on). */
  push(document: { readonly _id?: unknown } & Record<string, unknown>): boolean {
    if (this.broken !== undefined) return false;
    this.read += 1;
    const expected = this.verified.position + 1;
    const id = typeof document._id === 'string' ? document._id : undefined;
    const position = positionOfId(this.tenant, document._id);
    if (position === undefined) return this.fail({ position: expected, kind: 'EntryMalformed', ...(id ? { entryId: id } : {}), message: `a stored document in the chain's range has an id that names no position` });
    if (position > expected) {
      return this.fail({
        position: expected,
        kind: 'EntryMissing',
        entryId: chainEntryId(this.tenant, expected),
        message: `entry ${expected} is missing: the chain goes on at ${position}`,
      });
    }
    const { _id: _ignored, ...fields } = document;
    const parsed = AuditChainEntry.safeParse(fields);
    if (!parsed.success) return this.fail({ position, kind: 'EntryMalformed', ...(id ? { entryId: id } : {}), message: `entry ${position} is not a chain entry: ${parsed.error.issues[0]?.message ?? 'invalid'}`.slice(0, 1000) });
    const entry = parsed.data;
    const withEvent = { entryId: id as string, eventId: entry.eventId };
    if (entry.tenant !== this.tenant || entry.position !== position) {
      return this.fail({ position, kind: 'EntryMoved', ...withEvent, message: `entry ${position} was appended as ${entry.tenant} position ${entry.position}` });
    }
    const { hash, ...content } = entry;
    if (entryHash(content) !== hash) return this.fail({ position, kind: 'EntryEdited', ...withEvent, message: `entry ${position} does not match its hash: it was edited` });
    if (entry.prevHash !== this.verified.hash) {
      return this.fail({
        position,
        kind: 'LinkBroken',
        ...withEvent,
        message: `entry ${position} does not link to entry ${position - 1}: one of them was replaced or they were reordered`,
      });
    }
    this.verified = { position, hash };
    return true;
  }

  /** Ends the walk; a recorded head beyond the last entry means entries were deleted from the end. */
  finish(recordedHead?: ChainHead): AuditChainBreak | undefined {
    if (this.broken === undefined && recordedHead !== undefined && recordedHead.position > this.verified.position) {
      const position = this.verified.position + 1;
      this.broken = {
        position,
        kind: 'EntryMissing',
        entryId: chainEntryId(this.tenant, position),
        message: `entry ${position} is missing: the chain's recorded head is at ${recordedHead.position}`,
      };
    }
    return this.broken;
  }

  private fail(found: AuditChainBreak): false {
    this.broken = found;
    return false;
  }
}
