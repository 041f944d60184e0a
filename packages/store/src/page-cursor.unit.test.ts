import { ObjectId } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { decodePageCursor, encodePageCursor } from './page-cursor.js';

describe('page cursors', () => {
  it.each([
    ['a string and a string id', 'name', 'tool-a', 'id-1'],
    ['a number', 'attempt', 3, 'id-2'],
    ['a fractional number', 'score', 2.5, 7],
    ['a date and an ObjectId', 'createdAt', new Date('2026-01-02T03:04:05.678Z'), new ObjectId('65a1b2c3d4e5f60718293a4b')],
  ])('round-trips %s with its types', (_label, sortBy, value, id) => {
    const cursor = encodePageCursor({ sortBy, direction: -1, value, id });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    const decoded = decodePageCursor(cursor, sortBy, -1);
    expect(decoded.value).toEqual(value);
    expect(decoded.id).toEqual(id);
    if (value instanceof Date) expect(decoded.value).toBeInstanceOf(Date);
    if (id instanceof ObjectId) expect(decoded.id).toBeInstanceOf(ObjectId);
  });

  it('refuses a cursor made for another field or direction', () => {
    const cursor = encodePageCursor({ sortBy: 'name', direction: 1, value: 'a', id: 'b' });
    expect(() => decodePageCursor(cursor, 'createdAt', 1)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => decodePageCursor(cursor, 'name', -1)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it.each([[''], ['not base64!'], [Buffer.from('{"nope":1}').toString('base64url')], [Buffer.from('garbage').toString('base64url')], ['A'.repeat(5000)]])(
    'refuses the malformed cursor %j',
    (cursor) => {
      expect(() => decodePageCursor(cursor, 'name', 1)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: 'page cursor is malformed' }));
    },
  );
});
