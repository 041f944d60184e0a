import { ToolplaneError } from '@toolplane/contracts';
import { BSON } from 'mongodb';

/** Where a page ended: the last item's sort value and `_id`, for the ordering the page was read in. */
export interface PagePosition {
  readonly sortBy: string;
  readonly direction: 1 | -1;
  readonly value: unknown;
  readonly id: unknown;
}

// Bounds what a client can make the server parse; real cursors are a few hundred characters.
const maxCursorLength = 4096;

/**
 * An opaque cursor for a position: base64url of canonical Extended JSON, so dates and ObjectIds survive
 * the round trip with their types (a date compared as a string would match nothing).
 */
export function encodePageCursor(position: PagePosition): string {
  const text = BSON.EJSON.stringify({ s: position.sortBy, d: position.direction, v: position.value, i: position.id }, { relaxed: false });
  return Buffer.from(text, 'utf8').toString('base64url');
}

/** Reads a cursor back; INVALID_ARGUMENT if it is malformed or was made for another ordering. */
export function decodePageCursor(cursor: string, sortBy: string, direction: 1 | -1): { readonly value: unknown; readonly id: unknown } {
  if (cursor.length === 0 || cursor.length > maxCursorLength || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw malformed();
  let parsed: unknown;
  try {
    parsed = BSON.EJSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'), { relaxed: false });
  } catch {
    throw malformed();
  }
  if (typeof parsed !== 'object' || parsed === null || !('s' in parsed) || !('d' in parsed) || !('i' in parsed) || !('v' in parsed)) throw malformed();
  const fields = parsed;
  // relaxed: false keeps numbers as BSON Int32/Double wrappers; compare the direction by value.
  if (fields.s !== sortBy || Number(fields.d) !== direction) {
    throw new ToolplaneError('INVALID_ARGUMENT', `page cursor was made for another ordering (${String(fields.s)}); start again without a cursor`);
  }
  return { value: unwrapNumber(fields.v), id: unwrapNumber(fields.i) };
}

// Canonical EJSON turns JS numbers into Int32/Double objects on the way back; queries want plain numbers.
function unwrapNumber(value: unknown): unknown {
  if (typeof value === 'object' && value !== null && '_bsontype' in value) {
    if (value._bsontype === 'Int32' || value._bsontype === 'Double') return Number(value);
  }
  return value;
}

function malformed(): ToolplaneError {
  return new ToolplaneError('INVALID_ARGUMENT', 'page cursor is malformed');
}
