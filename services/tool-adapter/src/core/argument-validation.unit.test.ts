import { describe, expect, it } from 'vitest';
import { ArgumentValidators, type InputSchemaSource } from './argument-validation.js';

let nextHash = 0;
function source(schema: unknown, toolId = 'demo.tool'): InputSchemaSource {
  nextHash++;
  return {
    toolId,
    toolVersion: '1.0.0',
    definitionHash: nextHash.toString(16).padStart(64, '0'),
    inputSchemaJson: typeof schema === 'string' ? schema : JSON.stringify(schema),
  };
}

const issueSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    title: { type: 'string', minLength: 1, maxLength: 200 },
    labels: { type: 'array', items: { type: 'string' }, uniqueItems: true },
    priority: { enum: ['low', 'high'] },
    email: { type: 'string', format: 'email' },
  },
  required: ['title'],
  additionalProperties: false,
};

describe('ArgumentValidators', () => {
  it('accepts arguments that match the schema', () => {
    const validators = new ArgumentValidators();
    expect(validators.validate(source(issueSchema), { title: 'Broken build', labels: ['ci'], priority: 'high', email: 'a@example.com' })).toEqual({ valid: true });
  });

  it('refuses arguments that miss the schema with INVALID_ARGUMENT, the error paths, and no argument values', () => {
    const validators = new ArgumentValidators();
    const secretLooking = 'sk-live-THIS-VALUE-MUST-NOT-BE-ECHOED';
    const check = validators.validate(source(issueSchema), { title: 42, priority: secretLooking, extra: secretLooking, email: secretLooking });
    expect(check.valid).toBe(false);
    if (check.valid) return;
    expect(check.failure.code).toBe('INVALID_ARGUMENT');
    expect(check.failure.retryable).toBe(false);
    expect(check.violations.map((v) => v.path).sort()).toEqual(['/email', '/extra', '/priority', '/title']);
    expect(check.violations.map((v) => v.keyword).sort()).toEqual(['additionalProperties', 'enum', 'format', 'type']);
    expect(JSON.stringify(check)).not.toContain(secretLooking);
    expect(check.failure.message).toContain('demo.tool@1.0.0');
  });

  it('names a missing required property in the path', () => {
    const check = new ArgumentValidators().validate(source(issueSchema), {});
    expect(check).toMatchObject({ valid: false, violations: [{ path: '/title', keyword: 'required' }] });
  });

  it('bounds the list of violations and says how many were left out', () => {
    const schema = { type: 'object', additionalProperties: { type: 'integer' } };
    const args = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p${i}`, 'x']));
    const check = new ArgumentValidators({ maxViolations: 7 }).validate(source(schema), args);
    expect(check.valid).toBe(false);
    if (check.valid) return;
    expect(check.violations).toHaveLength(7);
    expect(check.omitted).toBe(93);
    expect(check.failure.message).toContain('and 95 more');
    expect(check.failure.message.length).toBeLessThanOrEqual(4096);
  });

  it('runs a catastrophic-backtracking pattern in linear time', () => {
    const validators = new ArgumentValidators();
    const evil = source({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } });
    const started = performance.now();
    const check = validators.validate(evil, { s: `${'a'.repeat(50_000)}b` });
    const elapsed = performance.now() - started;
    expect(check.valid).toBe(false);
    // A backtracking engine needs ~2^50000 steps here; linear matching takes milliseconds (generous bound for a busy box).
    expect(elapsed).toBeLessThan(2000);
    expect(validators.validate(evil, { s: 'a'.repeat(50_000) })).toEqual({ valid: true });
  });

  it('keeps patterns apart (ajv shares compiled patterns by their text)', () => {
    const validators = new ArgumentValidators();
    const check = validators.validate(source({ type: 'object', properties: { a: { type: 'string', pattern: '^a+$' }, b: { type: 'string', pattern: '^b+$' } } }), { a: 'aaa', b: 'aaa' });
    expect(check).toMatchObject({ valid: false, violations: [{ path: '/b', keyword: 'pattern' }] });
  });

  it('refuses a pattern that needs backtracking with CONFLICT and a clear reason', () => {
    const validators = new ArgumentValidators();
    for (const pattern of ['(a)\\1', '(?<x>a)\\k<x>', 'a(?=b)', 'a(?!b)', '(?<=a)b']) {
      const s = source({ type: 'object', properties: { s: { type: 'string', pattern } } });
      const status = validators.schemaStatus(s);
      expect(status.usable, pattern).toBe(false);
      const check = validators.validate(s, { s: 'a' });
      expect(check).toMatchObject({ valid: false, failure: { code: 'CONFLICT' } });
      if (!check.valid) expect(check.failure.message).toMatch(/backreference|lookahead|lookbehind/);
    }
  });

  it('refuses a deeply nested schema quickly, without a stack overflow', () => {
    const depth = 10_000;
    const text = `${'{"items":'.repeat(depth)}{"type":"string"}${'}'.repeat(depth)}`;
    const started = performance.now();
    const status = new ArgumentValidators().schemaStatus(source(text));
    expect(status).toEqual({ usable: false, problem: expect.stringContaining('nests deeper than') as string });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('refuses a huge schema', () => {
    const properties = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`property_${i}`, { type: 'string' }]));
    const status = new ArgumentValidators().schemaStatus(source({ type: 'object', properties }));
    expect(status).toEqual({ usable: false, problem: expect.stringContaining('larger than') as string });
  });

  it('refuses remote references and foreign ids, and allows local ones', () => {
    const validators = new ArgumentValidators();
    expect(validators.schemaStatus(source({ $ref: 'https://evil.example/schema.json' }))).toMatchObject({ usable: false, problem: expect.stringContaining('outside the schema') as string });
    expect(validators.schemaStatus(source({ properties: { a: { $ref: 'other.json#/x' } } }))).toMatchObject({ usable: false });
    expect(validators.schemaStatus(source({ properties: { a: { $id: 'https://x.example/a', type: 'string' } } }))).toMatchObject({ usable: false });
    const local = source({ type: 'object', properties: { a: { $ref: '#/$defs/name' } }, $defs: { name: { type: 'string' } } });
    expect(validators.validate(local, { a: 'x' })).toEqual({ valid: true });
    expect(validators.validate(local, { a: 1 })).toMatchObject({ valid: false, violations: [{ path: '/a', keyword: 'type' }] });
  });

  it('does not mistake a property named $ref, or data, for a reference', () => {
    const validators = new ArgumentValidators();
    const s = source({ type: 'object', properties: { $ref: { type: 'string' } }, default: { $ref: 'https://x.example' }, examples: [{ $ref: 'http://y' }] });
    expect(validators.validate(s, { $ref: 'anything' })).toEqual({ valid: true });
  });

  it('supports recursive schemas through local references', () => {
    const tree = source({ type: 'object', properties: { value: { type: 'number' }, children: { type: 'array', items: { $ref: '#' } } }, required: ['value'] });
    const validators = new ArgumentValidators();
    expect(validators.validate(tree, { value: 1, children: [{ value: 2, children: [{ value: 3 }] }] })).toEqual({ valid: true });
    expect(validators.validate(tree, { value: 1, children: [{ children: [] }] })).toMatchObject({ valid: false, violations: [{ path: '/children/0/value' }] });
  });

  it('refuses a schema that recurses into itself without consuming input', () => {
    const status = new ArgumentValidators().schemaStatus(source({ allOf: [{ $ref: '#' }] }));
    expect(status).toEqual({ usable: false, problem: expect.stringContaining('endless recursion') as string });
  });

  it('refuses invalid schemas, unknown dialects, nested $schema and non-JSON text without throwing', () => {
    const validators = new ArgumentValidators();
    expect(validators.schemaStatus(source({ type: 'strin' }))).toMatchObject({ usable: false, problem: expect.stringContaining('does not compile') as string });
    expect(validators.schemaStatus(source({ $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' }))).toMatchObject({ usable: false });
    expect(validators.schemaStatus(source({ properties: { a: { $schema: 'https://json-schema.org/draft/2020-12/schema' } } }))).toMatchObject({ usable: false });
    expect(validators.schemaStatus(source('{"type":'))).toEqual({ usable: false, problem: 'the schema is not valid JSON' });
    expect(validators.schemaStatus(source('[1,2]'))).toMatchObject({ usable: false });
  });

  it('accepts draft-07 and 2019-09 schemas, labelled or not', () => {
    const validators = new ArgumentValidators();
    const draft7 = source({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'array', items: [{ type: 'string' }, { type: 'number' }] });
    expect(validators.validate(draft7, ['a', 1])).toEqual({ valid: true });
    expect(validators.validate(draft7, [1, 'a'])).toMatchObject({ valid: false });
    const unlabelledDraft7 = source({ type: 'array', items: [{ type: 'string' }] });
    expect(validators.validate(unlabelledDraft7, [1])).toMatchObject({ valid: false, violations: [{ path: '/0' }] });
    const draft2019 = source({ $schema: 'https://json-schema.org/draft/2019-09/schema', type: 'object', properties: { a: { type: 'string' } }, unevaluatedProperties: false });
    expect(validators.validate(draft2019, { a: 'x', b: 1 })).toMatchObject({ valid: false, violations: [{ path: '/b', keyword: 'unevaluatedProperties' }] });
  });

  it('checks uniqueItems by canonical JSON in linear time', () => {
    const validators = new ArgumentValidators();
    const s = source({ type: 'array', uniqueItems: true });
    expect(validators.validate(s, [{ a: 1, b: 2 }, { b: 2, a: 1 }])).toMatchObject({ valid: false, violations: [{ keyword: 'uniqueItems' }] });
    const many = Array.from({ length: 100_000 }, (_, i) => ({ i }));
    const started = performance.now();
    expect(validators.validate(s, many)).toEqual({ valid: true });
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('compiles a schema once per (tool, version, definition hash), and recompiles when the text differs', () => {
    const validators = new ArgumentValidators();
    const s = source({ type: 'object' });
    validators.validate(s, {});
    validators.validate(s, {});
    expect(validators.size).toBe(1);
    const changed = { ...s, inputSchemaJson: JSON.stringify({ type: 'object', required: ['a'] }) };
    expect(validators.validate(changed, {})).toMatchObject({ valid: false });
    expect(validators.validate(s, {})).toEqual({ valid: true });
    expect(validators.size).toBe(1);
  });

  it('evicts the least recently used schema when full, and keeps working across engine generations', () => {
    const validators = new ArgumentValidators({ maxEntries: 3, compilationsPerEngine: 2 });
    const sources = Array.from({ length: 10 }, (_, i) => source({ type: 'object', properties: { n: { const: i } } }, `demo.tool_${i}`));
    for (const [i, s] of sources.entries()) expect(validators.validate(s, { n: i })).toEqual({ valid: true });
    expect(validators.size).toBe(3);
    for (const [i, s] of sources.entries()) expect(validators.validate(s, { n: i + 1 })).toMatchObject({ valid: false });
  });

  it('does not let one tool resolve references against another tool whose schema has the same $id', () => {
    const validators = new ArgumentValidators();
    const a = source({ $id: 'https://shared.example/s', type: 'object', properties: { x: { $ref: '#/$defs/t' } }, $defs: { t: { type: 'string' } } });
    const b = source({ $id: 'https://shared.example/s', type: 'object', properties: { x: { $ref: '#/$defs/t' } }, $defs: { t: { type: 'number' } } });
    expect(validators.validate(a, { x: 'text' })).toEqual({ valid: true });
    expect(validators.validate(b, { x: 1 })).toEqual({ valid: true });
    expect(validators.validate(b, { x: 'text' })).toMatchObject({ valid: false });
  });

  it('checks structured results against the output schema, naming violations and never values', () => {
    const validators = new ArgumentValidators();
    const output = { ...source({ type: 'object' }), outputSchemaJson: JSON.stringify({ type: 'object', properties: { id: { type: 'integer' } }, required: ['id'], additionalProperties: false }) };
    expect(validators.validateOutput(output, { id: 7 })).toEqual({ valid: true });
    const secretLooking = 'sk-live-RESULT-VALUE';
    const check = validators.validateOutput(output, { id: secretLooking, extra: secretLooking });
    expect(check).toMatchObject({ valid: false, problem: expect.stringMatching(/^its structured content does not match its output schema: /) as string });
    if (check.valid) return;
    expect(check.violations.map((v) => v.path).sort()).toEqual(['/extra', '/id']);
    expect(JSON.stringify(check)).not.toContain(secretLooking);
    expect(validators.validateOutput(output, undefined)).toMatchObject({ valid: false, problem: expect.stringContaining('returned no structured content') as string });
    // Input and output schemas of one tool version are cached apart.
    expect(validators.validate(output, {})).toEqual({ valid: true });
    expect(validators.size).toBe(2);
  });

  it('refuses a call before it runs when the output schema is unusable, and says which schema it is', () => {
    const validators = new ArgumentValidators();
    const bad = { ...source({ type: 'object' }), outputSchemaJson: JSON.stringify({ $ref: 'https://evil.example/out.json' }) };
    expect(validators.validate(bad, {})).toMatchObject({ valid: false, failure: { code: 'CONFLICT', message: expect.stringContaining('its output schema is unusable') as string } });
    expect(validators.schemaStatus(bad)).toMatchObject({ usable: false, schema: 'output' });
    expect(validators.validateOutput(bad, {})).toMatchObject({ valid: false, problem: expect.stringContaining('its output schema is unusable') as string });
    expect(validators.schemaStatus({ ...bad, outputSchemaJson: JSON.stringify({ type: 'object' }) })).toEqual({ usable: true });
  });
});
