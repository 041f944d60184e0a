import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseUriTemplate, type UriTemplate } from './uri-template.js';

// Expected expansions are RFC 6570's own examples (§3.2), never computed with the code under test.
const rfcValues = { var: 'value', hello: 'Hello World!', half: '50%', path: '/foo/bar', empty: '', x: '1024', y: '768', who: 'fred', base: 'http://example.com/home/' };

function parsed(template: string): UriTemplate {
  const result = parseUriTemplate(template);
  if (!result.ok) throw new Error(`${template}: ${result.problem}`);
  return result.template;
}

describe('parseUriTemplate', () => {
  it.each([
    ['{var}', 'value'],
    ['{hello}', 'Hello%20World%21'],
    ['{half}', '50%25'],
    ['O{empty}X', 'OX'],
    ['{+var}', 'value'],
    ['{+hello}', 'Hello%20World!'],
    ['{+half}', '50%25'],
    ['{base}index', 'http%3A%2F%2Fexample.com%2Fhome%2Findex'],
    ['{+base}index', 'http://example.com/home/index'],
    ['{+path}/here', '/foo/bar/here'],
    ['here?ref={+path}', 'here?ref=/foo/bar'],
    ['X{#var}', 'X#value'],
    ['X{#hello}', 'X#Hello%20World!'],
    ['map?{x,y}', 'map?1024,768'],
    ['{x,hello,y}', '1024,Hello%20World%21,768'],
    ['{+x,hello,y}', '1024,Hello%20World!,768'],
    ['{+path,x}/here', '/foo/bar,1024/here'],
    ['{#x,hello,y}', '#1024,Hello%20World!,768'],
    ['{#path,x}/here', '#/foo/bar,1024/here'],
    ['X{.var}', 'X.value'],
    ['X{.x,y}', 'X.1024.768'],
    ['{/var}', '/value'],
    ['{/var,x}/here', '/value/1024/here'],
    ['{;x,y}', ';x=1024;y=768'],
    ['{;x,y,empty}', ';x=1024;y=768;empty'],
    ['{?x,y}', '?x=1024&y=768'],
    ['{?x,y,empty}', '?x=1024&y=768&empty='],
    ['?fixed=yes{&x}', '?fixed=yes&x=1024'],
    ['{&x,y,empty}', '&x=1024&y=768&empty='],
  ])('expands %s as RFC 6570 does, and matches the expansion back to the same values', (template, expected) => {
    const parsedTemplate = parsed(template);
    const used = Object.fromEntries(parsedTemplate.variables.map((name) => [name, rfcValues[name as keyof typeof rfcValues]]));
    expect(parsedTemplate.expand(used)).toBe(expected);
    expect(parsedTemplate.match(expected)).toEqual(used);
  });

  it('lists each variable once, in the order it first appears', () => {
    expect(parsed('test://template/{id}/data').variables).toEqual(['id']);
    expect(parsed('demo://{+path}{?q,page}{&q}').variables).toEqual(['path', 'q', 'page']);
    expect(parsed('test://static').variables).toEqual([]);
  });

  it('matches the URI a server expects, and nothing else', () => {
    const template = parsed('test://template/{id}/data');
    expect(template.match('test://template/123/data')).toEqual({ id: '123' });
    expect(template.match('test://template/a%20b/data')).toEqual({ id: 'a b' });
    expect(template.match('test://template/1/2/data')).toBeUndefined();
    expect(template.match('test://template/123/data/more')).toBeUndefined();
    expect(template.match('test://static-text')).toBeUndefined();
    // A variable written twice must be given one value.
    expect(parsed('x://{a}/{a}').match('x://1/1')).toEqual({ a: '1' });
    expect(parsed('x://{a}/{a}').match('x://1/2')).toBeUndefined();
  });

  it.each([
    ['x://{id', 'not closed'],
    ['x://id}', 'closes no expression'],
    ['x://{}', 'not a variable name'],
    ['x://{a b}', 'not a variable name'],
    ['x://{=a}', 'reserved'],
    ['x://{var:3}', 'level-4'],
    ['x://{/list*}', 'level-4'],
    [`x://${'{a}'.repeat(33)}`, 'more than 32 expressions'],
    [`x://${'a'.repeat(2048)}`, 'longer than 2048'],
  ])('refuses %s with a reason', (template, reason) => {
    const result = parseUriTemplate(template);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problem).toContain(reason);
  });

  it('gives back, from any URI it expanded to, values that expand to that URI again', () => {
    const operator = fc.constantFrom('', '+', '#', '.', '/', ';', '?', '&');
    const literal = fc.constantFrom('', 'x://', '/', '-', 'data', '.json', ',');
    // Each variable once, split over one to four expressions.
    const template = fc
      .tuple(fc.shuffledSubarray(['a', 'b', 'c', 'id'], { minLength: 1 }), fc.array(fc.tuple(literal, operator), { minLength: 4, maxLength: 4 }), fc.integer({ min: 1, max: 4 }))
      .map(([names, shapes, count]) => {
        const per = Math.ceil(names.length / count);
        return shapes
          .map(([text, symbol], index) => ({ text, symbol, names: names.slice(index * per, (index + 1) * per) }))
          .filter((expression) => expression.names.length > 0)
          .map(({ text, symbol, names: used }) => `${text}{${symbol}${used.join(',')}}`)
          .join('');
      });
    const values = fc.record({
      a: fc.string(),
      b: fc.string({ unit: 'grapheme' }),
      c: fc.constantFrom('', '%41', '%2541', '50%', '%C3%A9', '%c3%a9', '%80', 'a b/c', 'x=1&y', '#,;'),
      id: fc.string({ unit: 'binary' }),
    });
    fc.assert(
      fc.property(template, values, (text, given) => {
        const parsedTemplate = parsed(text);
        const uri = parsedTemplate.expand(given);
        const found = parsedTemplate.match(uri);
        expect(found).toBeDefined();
        expect(parsedTemplate.expand(found!)).toBe(uri);
      }),
      { numRuns: 2000 },
    );
  });
});
