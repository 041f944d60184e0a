import { describe, expect, it } from 'vitest';
import { decodeFreeJson, encodeFreeJson } from './free-json.js';

describe('free-form JSON', () => {
  it('round-trips a JSON Schema with $-prefixed and dotted keys as a string', () => {
    const schema = { $schema: 'https://json-schema.org/draft/2020-12/schema', properties: { 'a.b': { $ref: '#/$defs/x' } }, $defs: { x: { type: 'string' } } };
    const text = encodeFreeJson(schema);
    expect(typeof text).toBe('string');
    expect(decodeFreeJson(text)).toEqual(schema);
  });

  it.each([[undefined], [() => 1], [10n]])('refuses %s with INVALID_ARGUMENT', (value) => {
    expect(() => encodeFreeJson(value)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('refuses a circular value with INVALID_ARGUMENT', () => {
    const a: Record<string, unknown> = {};
    a['a'] = a;
    expect(() => encodeFreeJson(a)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('reports damaged stored text as INTERNAL', () => {
    expect(() => decodeFreeJson('{not json')).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
  });
});
