import { ToolplaneError } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { FORBIDDEN_FLOW_FUNCTIONS, effectiveBoolean, flowExpressions } from './flow-expressions.js';

const context = { input: { orderId: 'o-1', items: [{ sku: 'a', qty: 2 }, { sku: 'b', qty: 3 }] }, steps: { lookup: { total: 42, currency: 'EUR' } } };
const where = 'step "refund" arguments';

async function refusal(work: Promise<unknown> | (() => unknown)): Promise<ToolplaneError> {
  try {
    await (typeof work === 'function' ? work() : work);
  } catch (error) {
    expect(error).toBeInstanceOf(ToolplaneError);
    return error as ToolplaneError;
  }
  throw new Error('expected a refusal');
}

describe('flowExpressions: evaluation', () => {
  const expressions = flowExpressions();

  it('maps the input and earlier outputs into plain JSON', async () => {
    const value = await expressions.evaluateObject('{"id": input.orderId, "total": steps.lookup.total, "skus": input.items.sku, "one": [input.items[0].sku]}', context, where);
    expect(value).toEqual({ id: 'o-1', total: 42, skus: ['a', 'b'], one: ['a'] });
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.getOwnPropertyNames(value.skus)).toEqual(['0', '1', 'length']);
  });

  it('says nothing for an expression that yields nothing, and drops absent fields', async () => {
    expect(await expressions.evaluate('input.missing', context, where)).toBeUndefined();
    expect(await expressions.evaluate('{"a": input.missing, "b": 1}', context, where)).toEqual({ b: 1 });
  });

  it('requires an object where one is needed, naming where', async () => {
    for (const [source, kind] of [['input.missing', 'nothing'], ['input.items', 'an array'], ['1', 'a number'], ['null', 'null']] as const) {
      const error = await refusal(expressions.evaluateObject(source, context, where));
      expect(error.code).toBe('INVALID_ARGUMENT');
      expect(error.message).toBe(`${where}: must evaluate to a JSON object, not ${kind}`);
    }
  });

  it('turns a runtime error into INVALID_ARGUMENT naming where', async () => {
    const error = await refusal(expressions.evaluate('$error("no such order")', context, where));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain(`${where}: no such order`);
    expect((await refusal(expressions.evaluate('input.orderId + 1', context, where))).message).toMatch(/^step "refund" arguments: .*\[T2001\]/);
  });

  it('refuses results that are not JSON', async () => {
    for (const source of ['function($x) { $x }', '$string', '{"f": $uppercase}']) {
      const error = await refusal(expressions.evaluate(source, context, where));
      expect(error.message, source).toMatch(/^step "refund" arguments: the result has a function at \$/);
    }
  });

  it('bounds the result size as canonical JSON', async () => {
    const small = flowExpressions({ maxResultBytes: 1000 });
    await expect(small.evaluate('[1..50]', context, where)).resolves.toHaveLength(50);
    const error = await refusal(small.evaluate('[1..500].("abc")', context, where));
    expect(error.message).toMatch(/^step "refund" arguments: the result is \d+ bytes of JSON, more than the bound of 1000$/);
    await expect(expressions.evaluate('[1..40000].("abcdefgh")', context, where)).rejects.toThrow(/more than the bound of 262144/);
  });

  it('bounds the result depth', async () => {
    let deep: Record<string, unknown> = { leaf: true };
    for (let i = 0; i < 70; i++) deep = { next: deep };
    const error = await refusal(expressions.evaluate('input', { input: deep, steps: {} }, where));
    expect(error.message).toBe(`${where}: the result nests deeper than 64 levels`);
  });

  it('bounds strings as they are built, so doubling one cannot exhaust memory', async () => {
    const error = await refusal(expressions.evaluate('($d := function($s, $n) { $n = 0 ? $s : $d($s & $s, $n - 1) }; $d("ab", 40))', context, where));
    expect(error.message).toContain('built a string longer than 262144 characters');
    await expect(expressions.evaluate('$pad("x", 1000000000)', context, where)).rejects.toThrow(/\$pad to 1000000000 characters/);
  });

  it('keeps $pad as JSONata defines it within the bound', async () => {
    expect(await expressions.evaluate('[$pad("x", 3, "ab"), $pad("x", -3), $pad("xyz", 2), $pad("é", 3, "·")]', context, where)).toEqual(['xab', '  x', 'xyz', 'é··']);
  });

  it('time-boxes an evaluation and bounds its depth and sequences', async () => {
    const quick = flowExpressions({ timeoutMs: 1 });
    await expect(quick.evaluate('$reduce([1..99999], function($a, $x) { $a + $x })', context, where)).rejects.toThrow(/Evaluation timeout after 1 milliseconds.*\[D1012\]/);
    await expect(expressions.evaluate('($f := function($n) { $n = 0 ? 0 : 1 + $f($n - 1) }; $f(100000))', context, where)).rejects.toThrow(/\[D1011\]/);
    await expect(expressions.evaluate('$count([1..200000])', context, where)).rejects.toThrow(/\[D2015\]/);
  });

  it('stops when its signal aborts', async () => {
    const error = await refusal(expressions.evaluate('input', context, where, AbortSignal.abort()));
    expect(error.code).toBe('CANCELLED');
    const controller = new AbortController();
    const running = expressions.evaluate('$reduce([1..99999], function($a, $x) { $a + $x })', context, where, controller.signal);
    controller.abort();
    expect((await refusal(running)).code).toBe('CANCELLED');
  });

  it('is deterministic and does not alias its context', async () => {
    const source = '{"items": input.items, "lookup": steps.lookup}';
    const first = await expressions.evaluateObject(source, context, where);
    expect(await expressions.evaluateObject(source, context, where)).toEqual(first);
    expect(first.items).not.toBe(context.input.items);
  });
});

describe('flowExpressions: compile', () => {
  const expressions = flowExpressions();

  it('refuses a syntax error with where and the position', () => {
    const error = expressions.compile.bind(expressions, '{"a": input.', where);
    expect(error).toThrow(ToolplaneError);
    expect(error).toThrow(/^step "refund" arguments: the expression does not compile: .*\(at position \d+\) \[S\d{4}\]$/);
  });

  it('refuses every clock, random or eval function, also when aliased', async () => {
    for (const name of FORBIDDEN_FLOW_FUNCTIONS) {
      expect(() => expressions.compile(`$${name}()`, where), name).toThrow(`${where}: $${name} is not available in flow expressions (they must be deterministic)`);
      expect(() => expressions.compile(`($f := $${name}; $f())`, where), name).toThrow(/is not available/);
    }
    await expect(expressions.evaluate('$now()', context, where)).rejects.toThrow(/\$now is not available/);
    // A binding shadows them too: a lambda parameter cannot name them, and no other path reaches them.
    await expect(expressions.evaluate('$lookup({"now": 1}, "now")', context, where)).resolves.toBe(1);
  });

  it('refuses regular expressions', () => {
    expect(() => expressions.compile('$replace(input.orderId, /o-/, "")', where)).toThrow(/regular expressions are not available in flow expressions .*\(at position \d+\)/);
    expect(() => expressions.compile('$replace(input.orderId, "o-", "")', where)).not.toThrow();
  });

  it('lists the steps an expression reads by name', () => {
    const compiled = expressions.compile('{"a": steps.lookup.total, "b": $$.steps.prices[0], "c": input.steps.fake, "d": $count(steps.`fetch`.rows), "e": [steps.lookup]}', where);
    expect(compiled.stepReferences).toEqual(['fetch', 'lookup', 'prices']);
    expect(expressions.compile('input.items[qty > 2].(steps.inner.x)', where).stepReferences).toEqual(['inner']);
    expect(expressions.compile('{"all": $keys(steps)}', where).stepReferences).toEqual([]);
  });

  it('caches compiled expressions by source, within its bound', () => {
    const small = flowExpressions({ cacheSize: 2 });
    const first = small.compile('input.a', where);
    expect(small.compile('input.a', where)).toBe(first);
    small.compile('input.b', where);
    small.compile('input.c', where);
    expect(small.compile('input.a', where)).not.toBe(first);
  });
});

describe('effectiveBoolean', () => {
  it('follows $boolean, with nothing as false', () => {
    for (const value of [undefined, null, false, 0, '', [], {}, [0, ''], [[]]]) expect(effectiveBoolean(value), JSON.stringify(value)).toBe(false);
    for (const value of [true, 1, -1, 'x', [0, 1], { a: 0 }, [[true]]]) expect(effectiveBoolean(value), JSON.stringify(value)).toBe(true);
  });
});
