import { describe, expect, it } from 'vitest';
import { isNonObjectSchemaRoot, objectOutputSchema, objectStructuredContent } from './era-projection.js';

describe('objectOutputSchema', () => {
  it('keeps an object schema as it is', () => {
    const schema = { type: 'object', properties: { n: { type: 'number' } } };
    expect(objectOutputSchema(schema)).toBe(schema);
  });

  it('wraps another root as { result }, the shape a 2025-era client receives', () => {
    expect(isNonObjectSchemaRoot({ anyOf: [{ type: 'string' }, { type: 'number' }] })).toBe(true);
    expect(objectOutputSchema({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', items: { type: 'string' } })).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { result: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', items: { type: 'string' } } },
      required: ['result'],
    });
  });

  it('moves same-document references under the wrapper, but not data, names that look like keywords, or other documents', () => {
    const wrapped = objectOutputSchema({
      type: 'array',
      items: { $ref: '#/$defs/node' },
      $defs: { node: { type: 'object', properties: { children: { $ref: '#' }, default: { $ref: '#/$defs/node' } }, default: { $ref: '#/not/a/pointer' } } },
      examples: [{ $ref: '#/literal' }],
      $comment: 'see https://example.com/schema#/x',
      contains: { $ref: 'https://example.com/other.json#/x' },
    });
    expect(wrapped['properties']).toEqual({
      result: {
        type: 'array',
        items: { $ref: '#/properties/result/$defs/node' },
        $defs: {
          node: {
            type: 'object',
            properties: { children: { $ref: '#/properties/result' }, default: { $ref: '#/properties/result/$defs/node' } },
            default: { $ref: '#/not/a/pointer' },
          },
        },
        examples: [{ $ref: '#/literal' }],
        $comment: 'see https://example.com/schema#/x',
        contains: { $ref: 'https://example.com/other.json#/x' },
      },
    });
  });

  it('leaves references under a schema that sets its own base ($id) alone', () => {
    const natural = { $id: 'https://example.com/list.json', type: 'array', items: { $ref: '#/$defs/item' }, $defs: { item: { type: 'string' } } };
    expect(objectOutputSchema(natural)['properties']).toEqual({ result: natural });
  });

  it("turns a 2019-09 $recursiveRef to the root into a $ref to the wrapper's result", () => {
    const wrapped = objectOutputSchema({ $schema: 'https://json-schema.org/draft/2019-09/schema', type: 'array', items: { $recursiveRef: '#' } });
    expect(wrapped['properties']).toEqual({ result: { $schema: 'https://json-schema.org/draft/2019-09/schema', type: 'array', items: { $ref: '#/properties/result' } } });
  });
});

describe('objectStructuredContent', () => {
  it('keeps an object, and wraps anything else (or any value of a wrapped schema) as { result }', () => {
    expect(objectStructuredContent({ n: 1 }, false)).toEqual({ n: 1 });
    expect(objectStructuredContent([1, 2], false)).toEqual({ result: [1, 2] });
    expect(objectStructuredContent(null, false)).toEqual({ result: null });
    expect(objectStructuredContent('text', false)).toEqual({ result: 'text' });
    expect(objectStructuredContent({ n: 1 }, true)).toEqual({ result: { n: 1 } });
  });
});
