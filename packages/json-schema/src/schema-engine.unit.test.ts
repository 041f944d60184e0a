import { describe, expect, it } from 'vitest';
import { compileSchema, createSchemaEngine, schemaDialectOf, violationPath } from './schema-engine.js';

describe('schemaDialectOf', () => {
  it('names the dialect of each spelling of the three $schema URIs', () => {
    expect(schemaDialectOf('https://json-schema.org/draft/2020-12/schema')).toBe('2020-12');
    expect(schemaDialectOf('http://json-schema.org/draft/2020-12/schema#')).toBe('2020-12');
    expect(schemaDialectOf('https://json-schema.org/draft/2019-09/schema')).toBe('2019-09');
    expect(schemaDialectOf('https://json-schema.org/draft-07/schema#')).toBe('draft-07');
    expect(schemaDialectOf('http://json-schema.org/draft-04/schema#')).toBeUndefined();
  });
});

describe('compileSchema', () => {
  it('validates with the dialect it was given', () => {
    const compiled = compileSchema(createSchemaEngine('2020-12', 100), { type: 'object', properties: { list: { prefixItems: [{ type: 'string' }] } }, required: ['a'] }, 'urn:test:1');
    if ('problem' in compiled) throw new Error(compiled.problem);
    expect(compiled.validate({ a: 1 })).toBe(true);
    expect(compiled.validate({})).toBe(false);
    expect(violationPath(compiled.validate.errors![0]!)).toBe('/a');
  });

  it('runs patterns on RE2: a backreference does not compile, a long pattern is refused', () => {
    const engine = createSchemaEngine('2020-12', 20);
    const backreference = compileSchema(engine, { type: 'string', pattern: '(a)\\1' }, 'urn:test:2');
    expect('problem' in backreference && backreference.problem).toMatch(/does not compile/);
    const long = compileSchema(engine, { type: 'string', pattern: 'a'.repeat(21) }, 'urn:test:3');
    expect('problem' in long).toBe(true);
  });

  it('checks uniqueItems by canonical JSON (key order does not make two objects differ)', () => {
    const compiled = compileSchema(createSchemaEngine('2020-12', 100), { type: 'array', uniqueItems: true }, 'urn:test:4');
    if ('problem' in compiled) throw new Error(compiled.problem);
    expect(compiled.validate([{ a: 1, b: 2 }, { b: 2, a: 1 }])).toBe(false);
    expect(compiled.validate([{ a: 1 }, { a: 2 }])).toBe(true);
    const many = Array.from({ length: 20_000 }, (_, i) => ({ i }));
    expect(compiled.validate(many)).toBe(true);
  });

  it('refuses a schema that recurses into itself without consuming input', () => {
    const compiled = compileSchema(createSchemaEngine('2020-12', 100), { $ref: '#' }, 'urn:test:5');
    expect('problem' in compiled && compiled.problem).toMatch(/endless recursion|does not compile/);
  });

  it('does not register compiled schemas by id: two schemas with the same $id do not collide', () => {
    const engine = createSchemaEngine('2020-12', 100);
    const first = compileSchema(engine, { type: 'string' }, 'urn:test:same');
    const second = compileSchema(engine, { type: 'number' }, 'urn:test:same');
    if ('problem' in first || 'problem' in second) throw new Error('unexpected refusal');
    expect(first.validate('x')).toBe(true);
    expect(second.validate(1)).toBe(true);
    expect(second.validate('x')).toBe(false);
  });
});
