import { describe, expect, it } from 'vitest';
import { LinearRegExpCache, compileLinearRegExp } from './linear-regexp.js';

describe('compileLinearRegExp', () => {
  it('matches ECMAScript patterns unanchored, like RegExp.prototype.test', () => {
    const compiled = compileLinearRegExp('^[a-z]+-\\d{2,}$');
    expect(compiled.ok).toBe(true);
    if (!compiled.ok) return;
    expect(compiled.regExp.test('abc-42')).toBe(true);
    expect(compiled.regExp.test('abc-4')).toBe(false);
    const unanchored = compileLinearRegExp('b+');
    expect(unanchored.ok && unanchored.regExp.test('aaabbbccc')).toBe(true);
  });

  it('translates ECMAScript-only syntax (named groups, \\u escapes)', () => {
    const named = compileLinearRegExp('(?<word>\\w+)');
    expect(named.ok && named.regExp.test('hello')).toBe(true);
    const escaped = compileLinearRegExp('^\\u00e9$');
    expect(escaped.ok && escaped.regExp.test('é')).toBe(true);
  });

  it('refuses backreferences and lookaround with a precise reason', () => {
    expect(compileLinearRegExp('(a)\\1')).toEqual({ ok: false, problem: expect.stringContaining('backreference (\\1)') as string });
    expect(compileLinearRegExp('(?<n>a)\\k<n>')).toEqual({ ok: false, problem: expect.stringContaining('named backreference') as string });
    expect(compileLinearRegExp('a(?=b)')).toEqual({ ok: false, problem: expect.stringContaining('lookahead') as string });
    expect(compileLinearRegExp('a(?!b)')).toEqual({ ok: false, problem: expect.stringContaining('lookahead') as string });
    expect(compileLinearRegExp('(?<=a)b')).toEqual({ ok: false, problem: expect.stringContaining('lookbehind') as string });
    expect(compileLinearRegExp('(?<!a)b')).toEqual({ ok: false, problem: expect.stringContaining('lookbehind') as string });
  });

  it('does not mistake escaped or bracketed look-alikes for unsupported constructs', () => {
    expect(compileLinearRegExp('[\\1]').ok).toBe(false); // an octal escape, which RE2 refuses
    expect(compileLinearRegExp('\\(\\?=x\\)').ok).toBe(true);
    expect(compileLinearRegExp('[(?=]').ok).toBe(true);
  });

  it('refuses invalid ECMAScript, over-long patterns and RE2 limits', () => {
    expect(compileLinearRegExp('(unclosed')).toEqual({ ok: false, problem: expect.stringContaining('not a valid ECMAScript') as string });
    expect(compileLinearRegExp('a'.repeat(5000))).toEqual({ ok: false, problem: expect.stringContaining('at most 4096') as string });
    expect(compileLinearRegExp('a{1001}').ok).toBe(false);
  });

  it('matches a catastrophic-backtracking pattern in linear time', () => {
    const compiled = compileLinearRegExp('^(a|aa)+$');
    expect(compiled.ok).toBe(true);
    if (!compiled.ok) return;
    const started = performance.now();
    expect(compiled.regExp.test(`${'a'.repeat(100_000)}!`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('compiles case-insensitively on request', () => {
    const compiled = compileLinearRegExp('drop database', { caseInsensitive: true });
    expect(compiled.ok && compiled.regExp.test('DROP DATABASE prod')).toBe(true);
  });
});

describe('LinearRegExpCache', () => {
  it('returns the same compilation for the same source and flags', () => {
    const cache = new LinearRegExpCache(2);
    const first = cache.compile('a+');
    expect(cache.compile('a+')).toBe(first);
    expect(cache.compile('a+', { caseInsensitive: true })).not.toBe(first);
    cache.compile('b+');
    cache.compile('c+');
    expect(cache.compile('c+').ok).toBe(true);
  });
});

describe('compileLinearRegExp on patterns written for either ECMAScript mode', () => {
  it('accepts patterns valid only without the u flag, as schemas in the wild use them', () => {
    const compiled = compileLinearRegExp('^[\\w.-]+$');
    expect(compiled.ok).toBe(true);
    if (!compiled.ok) return;
    expect(compiled.regExp.test('my-file.txt')).toBe(true);
    expect(compiled.regExp.test('a b')).toBe(false);
  });
});
