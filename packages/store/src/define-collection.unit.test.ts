import { describe, expect, it } from 'vitest';
import { defineCollection, type IndexDefinition } from './define-collection.js';

describe('defineCollection', () => {
  it('keeps the name and indexes', () => {
    const indexes: IndexDefinition[] = [{ name: 'by_key', key: { tenant: 1, key: 1 }, unique: true }];
    expect(defineCollection({ name: 'tool_invocations', indexes })).toEqual({ name: 'tool_invocations', indexes });
  });

  it.each<[string, { name: string; indexes?: IndexDefinition[] }]>([
    ['a name with a dot', { name: 'a.b' }],
    ['an empty name', { name: '' }],
    ['a name with $', { name: 'a$' }],
    ['an index declared twice', { name: 'c', indexes: [{ name: 'x', key: { a: 1 } }, { name: 'x', key: { b: 1 } }] }],
    ['the _id index name', { name: 'c', indexes: [{ name: '_id_', key: { _id: 1 } }] }],
    ['an empty key', { name: 'c', indexes: [{ name: 'x', key: {} }] }],
    ['a $ key field', { name: 'c', indexes: [{ name: 'x', key: { $a: 1 } }] }],
    ['a bad direction', { name: 'c', indexes: [{ name: 'x', key: { a: 2 as 1 } }] }],
    ['a compound TTL index', { name: 'c', indexes: [{ name: 'x', key: { a: 1, b: 1 }, expireAfterSeconds: 5 }] }],
    ['a negative TTL', { name: 'c', indexes: [{ name: 'x', key: { a: 1 }, expireAfterSeconds: -1 }] }],
    ['sparse and partial together', { name: 'c', indexes: [{ name: 'x', key: { a: 1 }, sparse: true, partialFilterExpression: { a: { $exists: true } } }] }],
  ])('refuses %s with INVALID_ARGUMENT', (_label, definition) => {
    expect(() => defineCollection(definition)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
