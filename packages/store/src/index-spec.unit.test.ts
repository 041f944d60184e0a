import { describe, expect, it } from 'vitest';
import type { IndexDefinition } from './define-collection.js';
import { createIndexOptions, effectiveIndex, indexDifferences } from './index-spec.js';
import type { StoreCapabilities } from './store.js';
import { capabilitiesFromBuildInfo } from './store-capabilities.js';

const mongo = capabilitiesFromBuildInfo({ version: '8.0.4', ok: 1 });
const ferret = capabilitiesFromBuildInfo({ version: '7.0.42', ferretdbVersion: 'v1.24.2', ok: 1 });

describe('capabilitiesFromBuildInfo', () => {
  it('recognises FerretDB by ferretdbVersion and MongoDB otherwise', () => {
    expect(ferret).toMatchObject<Partial<StoreCapabilities>>({ server: 'ferretdb', version: 'v1.24.2', atomicConditionalUpdates: false, ttlIndexes: false, partialIndexes: false });
    expect(mongo).toMatchObject<Partial<StoreCapabilities>>({ server: 'mongodb', version: '8.0.4', atomicConditionalUpdates: true, ttlIndexes: true, partialIndexes: true });
  });
});

describe('effectiveIndex', () => {
  const ttl: IndexDefinition = { name: 'expiry', key: { expiresAt: 1 }, expireAfterSeconds: 0 };
  const partial: IndexDefinition = { name: 'open', key: { state: 1 }, partialFilterExpression: { open: true } };

  it('keeps everything on MongoDB', () => {
    expect(effectiveIndex('c', ttl, mongo)).toEqual({ index: ttl, degraded: [] });
    expect(effectiveIndex('c', partial, mongo)).toEqual({ index: partial, degraded: [] });
  });

  it('drops TTL and a non-unique partial filter on FerretDB, and says so', () => {
    expect(effectiveIndex('c', ttl, ferret)).toEqual({ index: { name: 'expiry', key: { expiresAt: 1 } }, degraded: ['ttl-unsupported'] });
    expect(effectiveIndex('c', partial, ferret)).toEqual({ index: { name: 'open', key: { state: 1 } }, degraded: ['partial-filter-unsupported'] });
  });

  it('refuses a unique partial index where partial indexes do not exist', () => {
    expect(() => effectiveIndex('c', { ...partial, unique: true }, ferret)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('sparse') as unknown }));
  });
});

describe('createIndexOptions', () => {
  it('passes only what is declared', () => {
    expect(createIndexOptions({ name: 'a', key: { a: 1 } })).toEqual({ name: 'a' });
    expect(createIndexOptions({ name: 'a', key: { a: 1 }, unique: true, sparse: true, expireAfterSeconds: 5 })).toEqual({ name: 'a', unique: true, sparse: true, expireAfterSeconds: 5 });
  });
});

describe('indexDifferences', () => {
  const wanted: IndexDefinition = { name: 'k', key: { tenant: 1, key: -1 }, unique: true };

  it('finds none for the same index as the server lists it', () => {
    expect(indexDifferences({ v: 2, name: 'k', key: { tenant: 1, key: -1 }, unique: true }, wanted, mongo)).toEqual([]);
  });

  it('sees a different key order, direction, uniqueness, TTL and filter', () => {
    expect(indexDifferences({ name: 'k', key: { key: -1, tenant: 1 }, unique: true }, wanted, mongo)).toHaveLength(1);
    expect(indexDifferences({ name: 'k', key: { tenant: 1, key: 1 }, unique: true }, wanted, mongo)).toHaveLength(1);
    expect(indexDifferences({ name: 'k', key: { tenant: 1, key: -1 } }, wanted, mongo)).toEqual(['unique is false, wanted true']);
    expect(indexDifferences({ name: 'k', key: { tenant: 1, key: -1 }, unique: true, expireAfterSeconds: 60 }, wanted, mongo)).toEqual(['expireAfterSeconds is 60, wanted unset']);
    expect(indexDifferences({ name: 'k', key: { tenant: 1, key: -1 }, unique: true, partialFilterExpression: { a: 1 } }, wanted, mongo)).toHaveLength(1);
  });

  it('compares partial filters regardless of key order', () => {
    const filtered: IndexDefinition = { name: 'f', key: { a: 1 }, partialFilterExpression: { a: { $exists: true }, b: 1 } };
    expect(indexDifferences({ name: 'f', key: { a: 1 }, partialFilterExpression: { b: 1, a: { $exists: true } } }, filtered, mongo)).toEqual([]);
  });

  it('ignores sparse on FerretDB, which does not keep it', () => {
    const sparse: IndexDefinition = { name: 's', key: { a: 1 }, sparse: true };
    expect(indexDifferences({ name: 's', key: { a: 1 } }, sparse, ferret)).toEqual([]);
    expect(indexDifferences({ name: 's', key: { a: 1 } }, sparse, mongo)).toEqual(['sparse is false, wanted true']);
  });
});
