import { hasErrorCode } from '@toolplane/contracts';
import { ObjectId } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { assertStorable, findUnstorableKey } from './assert-storable.js';

describe('findUnstorableKey', () => {
  it('accepts plain nested documents, arrays and BSON values', () => {
    expect(findUnstorableKey({ a: 1, b: { c: [1, { d: 'x' }] }, when: new Date(), id: new ObjectId(), bytes: new Uint8Array([1]), nothing: null })).toBeUndefined();
  });

  it.each([
    [{ $set: 1 }, 'document["$set"]', 'starts-with-dollar'],
    [{ schema: { properties: { $ref: '#/x' } } }, 'document.schema.properties["$ref"]', 'starts-with-dollar'],
    [{ a: { 'b.c': 1 } }, 'document.a["b.c"]', 'contains-dot'],
    [{ list: [{ ok: 1 }, { 'x.y': 2 }] }, 'document.list[1]["x.y"]', 'contains-dot'],
    [{ rows: [[{}, { $bad: 1 }]] }, 'document.rows[0][1]["$bad"]', 'starts-with-dollar'],
    [{ 'nul\0key': 1 }, 'document["nul\\u0000key"]', 'contains-nul'],
    [{ m: new Map([['a.b', 1]]) }, 'document.m["a.b"]', 'contains-dot'],
  ])('finds the bad key in %j at %s', (value, path, reason) => {
    expect(findUnstorableKey(value)).toMatchObject({ path, reason });
  });

  it('allows a `$` or `.` inside values, only keys matter', () => {
    expect(findUnstorableKey({ price: '$5.00', ref: '$ref' })).toBeUndefined();
  });

  it('reports a circular reference instead of looping', () => {
    const a: Record<string, unknown> = { x: 1 };
    a['self'] = a;
    expect(findUnstorableKey(a)).toMatchObject({ path: 'document.self', reason: 'circular' });
  });

  it('accepts the same object referenced twice (that is not a cycle)', () => {
    const shared = { k: 1 };
    expect(findUnstorableKey({ a: shared, b: [shared] })).toBeUndefined();
  });
});

describe('assertStorable', () => {
  it('throws INVALID_ARGUMENT naming the path', () => {
    let thrown: unknown;
    try {
      assertStorable({ inputSchema: { $schema: 'x' } }, 'descriptor');
    } catch (error) {
      thrown = error;
    }
    expect(hasErrorCode(thrown) && thrown.code).toBe('INVALID_ARGUMENT');
    expect((thrown as Error).message).toContain('descriptor.inputSchema["$schema"]');
    expect((thrown as { details?: unknown }).details).toMatchObject({ path: 'descriptor.inputSchema["$schema"]', key: '$schema' });
  });

  it('passes a storable document', () => {
    expect(() => assertStorable({ a: { b: 1 } })).not.toThrow();
  });
});
