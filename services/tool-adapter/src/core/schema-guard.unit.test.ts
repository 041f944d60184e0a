import { describe, expect, it } from 'vitest';
import { defaultSchemaLimits, inspectInputSchema } from './schema-guard.js';

describe('inspectInputSchema', () => {
  it('strips the root $schema and $id and reports the dialect', () => {
    const inspected = inspectInputSchema(JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', $id: 'https://x.example/s', type: 'object' }));
    expect(inspected).toEqual({ ok: true, schema: { type: 'object' }, dialect: 'draft-07', declared: true });
    expect(inspectInputSchema('{"type":"object"}')).toEqual({ ok: true, schema: { type: 'object' }, dialect: '2020-12', declared: false });
    expect(inspectInputSchema(JSON.stringify({ $schema: 'https://json-schema.org/draft/2019-09/schema' }))).toMatchObject({ ok: true, dialect: '2019-09' });
  });

  it('bounds size and depth on the text, before parsing', () => {
    expect(inspectInputSchema(`"${'x'.repeat(300_000)}"`)).toMatchObject({ ok: false, problem: expect.stringContaining('larger than') as string });
    const deep = `${'['.repeat(65)}${']'.repeat(65)}`;
    expect(inspectInputSchema(deep)).toMatchObject({ ok: false, problem: expect.stringContaining('nests deeper than 64') as string });
    // Brackets inside strings do not count.
    expect(inspectInputSchema(JSON.stringify({ description: '['.repeat(500) }))).toMatchObject({ ok: true });
    expect(inspectInputSchema('{"a":"\\"[[["}')).toMatchObject({ ok: true });
  });

  it('limits the number of patterns', () => {
    const properties = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`p${i}`, { type: 'string', pattern: `^${i}$` }]));
    expect(inspectInputSchema(JSON.stringify({ properties }), { ...defaultSchemaLimits, maxPatterns: 10 })).toMatchObject({ ok: false, problem: expect.stringContaining('more than 10 patterns') as string });
  });

  it('checks patternProperties keys and $dynamicRef', () => {
    expect(inspectInputSchema(JSON.stringify({ patternProperties: { '(a)\\1': {} } }))).toMatchObject({ ok: false });
    expect(inspectInputSchema(JSON.stringify({ $dynamicRef: 'https://x.example#meta' }))).toMatchObject({ ok: false });
    expect(inspectInputSchema(JSON.stringify({ $defs: { a: { $anchor: 'a' } }, $ref: '#a' }))).toMatchObject({ ok: true });
  });
});
