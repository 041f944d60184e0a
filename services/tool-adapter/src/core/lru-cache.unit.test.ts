import { describe, expect, it } from 'vitest';
import { LruCache } from './lru-cache.js';

describe('LruCache', () => {
  it('evicts the least recently used entry and reports it', () => {
    const evicted: [string, number][] = [];
    const cache = new LruCache<string, number>(2, (key, value) => evicted.push([key, value]));
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1);
    cache.set('c', 3);
    expect(cache.get('b')).toBeUndefined();
    expect(evicted).toEqual([['b', 2]]);
    cache.set('a', 10);
    expect(evicted).toEqual([
      ['b', 2],
      ['a', 1],
    ]);
    expect(cache.size).toBe(2);
  });

  it('needs room for at least one entry', () => {
    expect(() => new LruCache(0)).toThrow(RangeError);
  });
});
