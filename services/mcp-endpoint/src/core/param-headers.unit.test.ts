import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkParamHeaders, decodeParamHeaderValue, paramHeadersOf, type ParamHeader } from './param-headers.js';

const wrapped = (text: string) => `=?base64?${Buffer.from(text, 'utf8').toString('base64')}?=`;
/** How a client writes a string argument: as it is when a header carries it unchanged, else wrapped. */
const clientForm = (text: string) => (/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(text) && !text.startsWith('=?base64?') ? text : wrapped(text));
/** Strings a client can send (well-formed UTF-16: a lone surrogate has no UTF-8). */
const texts = fc.string({ unit: 'binary', maxLength: 40 }).filter((text) => Buffer.from(text, 'utf8').toString('utf8') === text);
const headerOf = (headers: Record<string, string>) => (name: string) => Object.entries(headers).find(([key]) => key.toLowerCase() === name.toLowerCase())?.[1];

const region: ParamHeader = { name: 'Region', path: ['region'], type: 'string' };

describe('x-mcp-header declarations of an input schema', () => {
  it('finds each annotated primitive property reached by properties keys, at any depth', () => {
    const schema = {
      type: 'object',
      properties: {
        region: { type: 'string', 'x-mcp-header': 'Region' },
        query: { type: 'string' },
        options: { type: 'object', properties: { limit: { type: 'integer', 'x-mcp-header': 'Limit' }, dry: { type: 'boolean', 'x-mcp-header': 'Dry-Run' } } },
        ratio: { type: 'number', 'x-mcp-header': 'Ratio' },
      },
    };
    expect(paramHeadersOf(schema)).toEqual({
      valid: true,
      headers: [
        { name: 'Region', path: ['region'], type: 'string' },
        { name: 'Limit', path: ['options', 'limit'], type: 'integer' },
        { name: 'Dry-Run', path: ['options', 'dry'], type: 'boolean' },
        { name: 'Ratio', path: ['ratio'], type: 'number' },
      ],
    });
    expect(paramHeadersOf({ type: 'object', properties: { a: { type: 'string' } } })).toEqual({ valid: true, headers: [] });
    expect(paramHeadersOf(undefined)).toEqual({ valid: true, headers: [] });
  });

  it('calls a declaration set invalid when an annotation is unreachable, not a token, repeated regardless of case, or on a non-primitive', () => {
    const property = (extra: Record<string, unknown>) => ({ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'A' } }, ...extra });
    const invalid = [
      { type: 'object', 'x-mcp-header': 'Root' },
      property({ items: { type: 'string', 'x-mcp-header': 'B' } }),
      property({ additionalProperties: { type: 'string', 'x-mcp-header': 'B' } }),
      property({ anyOf: [{ properties: { b: { type: 'string', 'x-mcp-header': 'B' } } }] }),
      property({ if: { properties: { b: { type: 'string', 'x-mcp-header': 'B' } } } }),
      property({ $defs: { b: { type: 'string', 'x-mcp-header': 'B' } } }),
      property({ patternProperties: { '^b': { type: 'string', 'x-mcp-header': 'B' } } }),
      { type: 'object', properties: { list: { type: 'array', items: { type: 'object', properties: { b: { type: 'string', 'x-mcp-header': 'B' } } } } } },
      { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Has Space' } } },
      { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Colon:' } } },
      { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': '' } } },
      { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Régión' } } },
      { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 7 } } },
      { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Same' }, b: { type: 'string', 'x-mcp-header': 'same' } } },
      { type: 'object', properties: { a: { type: 'object', 'x-mcp-header': 'A' } } },
      { type: 'object', properties: { a: { type: 'array', 'x-mcp-header': 'A' } } },
      { type: 'object', properties: { a: { type: ['string', 'null'], 'x-mcp-header': 'A' } } },
      { type: 'object', properties: { a: { 'x-mcp-header': 'A' } } },
    ];
    for (const schema of invalid) expect({ schema, valid: paramHeadersOf(schema).valid }).toEqual({ schema, valid: false });
    expect(paramHeadersOf(invalid[7])).toMatchObject({ reason: expect.stringContaining('list.(items).b') as unknown });
  });
});

describe('decoding a header value', () => {
  it('decodes a whole =?base64?…?= wrapper of UTF-8, and takes anything else literally', () => {
    expect(decodeParamHeaderValue('=?base64?SGVsbG8=?=')).toBe('Hello');
    expect(decodeParamHeaderValue('=?base64?4pyTIMOgIGxhIG1vZGU=?=')).toBe('✓ à la mode');
    expect(decodeParamHeaderValue('=?base64??=')).toBe('');
    expect(decodeParamHeaderValue('SGVsbG8=')).toBe('SGVsbG8=');
    expect(decodeParamHeaderValue('=?base64?SGVsbG8=')).toBe('=?base64?SGVsbG8=');
    expect(decodeParamHeaderValue('SGVsbG8=?=')).toBe('SGVsbG8=?=');
    // The prefix and the suffix overlap: not a wrapper.
    expect(decodeParamHeaderValue('=?base64?=')).toBe('=?base64?=');
  });

  it('refuses a wrapped payload that is not canonical base64 or not UTF-8', () => {
    for (const payload of ['SGVsbG8', 'SGVsbG8==', 'SGVs!!!bG8=', 'SGVs bG8=', 'SGVsbG9=', '-_-_', 'SGVsbG8=\n', '/w==']) {
      expect({ payload, decoded: decodeParamHeaderValue(`=?base64?${payload}?=`) }).toEqual({ payload, decoded: undefined });
    }
  });

  it('gives back any text a client wrapped, and any text it sent as it is (property)', () => {
    fc.assert(
      fc.property(texts, (text) => {
        expect(decodeParamHeaderValue(wrapped(text))).toBe(text);
        expect(decodeParamHeaderValue(clientForm(text))).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses every wrapped encoding but the canonical one (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 20 }), fc.nat(), fc.constantFrom('', '=', '==', '!', ' ', '-'), (bytes, at, noise) => {
        const canonical = Buffer.from(bytes).toString('base64');
        const index = canonical.length === 0 ? 0 : at % (canonical.length + 1);
        const altered = canonical.slice(0, index) + noise + canonical.slice(index);
        const unpadded = canonical.replace(/=+$/, '');
        if (altered !== canonical) expect(decodeParamHeaderValue(`=?base64?${altered}?=`)).toBeUndefined();
        if (unpadded !== canonical) expect(decodeParamHeaderValue(`=?base64?${unpadded}?=`)).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });
});

describe('checking a call’s headers against its arguments', () => {
  it('accepts matching headers, plain or wrapped, under any case of the name', () => {
    expect(checkParamHeaders([region], { region: 'eu-west-1' }, headerOf({ 'Mcp-Param-Region': 'eu-west-1' }))).toEqual({ ok: true });
    expect(checkParamHeaders([region], { region: 'eu-west-1' }, headerOf({ 'mcp-param-region': 'eu-west-1' }))).toEqual({ ok: true });
    expect(checkParamHeaders([region], { region: 'Hello' }, headerOf({ 'Mcp-Param-Region': '=?base64?SGVsbG8=?=' }))).toEqual({ ok: true });
    // A literal that only looks like base64 is the argument itself.
    expect(checkParamHeaders([region], { region: 'SGVsbG8=' }, headerOf({ 'Mcp-Param-Region': 'SGVsbG8=' }))).toEqual({ ok: true });
  });

  it('refuses a missing header, a bad wrapper and a different value, naming the header and why', () => {
    expect(checkParamHeaders([region], { region: 'eu' }, headerOf({}))).toEqual({ ok: false, header: 'Mcp-Param-Region', reason: expect.stringContaining('absent') as unknown });
    expect(checkParamHeaders([region], { region: 'Hello' }, headerOf({ 'Mcp-Param-Region': '=?base64?SGVsbG8?=' }))).toEqual({
      ok: false,
      header: 'Mcp-Param-Region',
      reason: expect.stringContaining('base64') as unknown,
    });
    expect(checkParamHeaders([region], { region: 'eu' }, headerOf({ 'Mcp-Param-Region': 'us' }))).toEqual({
      ok: false,
      header: 'Mcp-Param-Region',
      reason: 'the Mcp-Param-Region header says "us" but the arguments carry region="eu"',
    });
  });

  it('expects no header for an absent, null or unmirrorable argument, and ignores one sent anyway', () => {
    expect(checkParamHeaders([region], {}, headerOf({}))).toEqual({ ok: true });
    expect(checkParamHeaders([region], { region: null }, headerOf({ 'Mcp-Param-Region': 'anything' }))).toEqual({ ok: true });
    expect(checkParamHeaders([region], { region: { nested: true } }, headerOf({}))).toEqual({ ok: true });
    const deep: ParamHeader = { name: 'Limit', path: ['options', 'limit'], type: 'integer' };
    expect(checkParamHeaders([deep], { options: 'not an object' }, headerOf({}))).toEqual({ ok: true });
    expect(checkParamHeaders([deep], { options: { limit: 2 ** 60 } }, headerOf({}))).toEqual({ ok: true });
  });

  it('compares numbers by value and booleans as true/false', () => {
    const limit: ParamHeader = { name: 'Limit', path: ['limit'], type: 'integer' };
    const ratio: ParamHeader = { name: 'Ratio', path: ['ratio'], type: 'number' };
    const dry: ParamHeader = { name: 'Dry', path: ['dry'], type: 'boolean' };
    expect(checkParamHeaders([limit], { limit: 42 }, headerOf({ 'Mcp-Param-Limit': '42.0' }))).toEqual({ ok: true });
    expect(checkParamHeaders([ratio], { ratio: 0.5 }, headerOf({ 'Mcp-Param-Ratio': '5e-1' }))).toEqual({ ok: true });
    expect(checkParamHeaders([limit], { limit: 42 }, headerOf({ 'Mcp-Param-Limit': '43' }))).toMatchObject({ ok: false });
    expect(checkParamHeaders([limit], { limit: 42 }, headerOf({ 'Mcp-Param-Limit': '0x2a' }))).toMatchObject({ ok: false });
    expect(checkParamHeaders([dry], { dry: false }, headerOf({ 'Mcp-Param-Dry': 'false' }))).toEqual({ ok: true });
    expect(checkParamHeaders([dry], { dry: true }, headerOf({ 'Mcp-Param-Dry': 'TRUE' }))).toMatchObject({ ok: false });
    // A string parameter is compared as text, even when it reads as a number.
    expect(checkParamHeaders([region], { region: '42' }, headerOf({ 'Mcp-Param-Region': '42.0' }))).toMatchObject({ ok: false });
  });

  it('accepts what a client writes for any argument and refuses it for any other (property)', () => {
    fc.assert(
      fc.property(texts, texts, (argument, other) => {
        expect(checkParamHeaders([region], { region: argument }, headerOf({ 'Mcp-Param-Region': clientForm(argument) }))).toEqual({ ok: true });
        if (other !== argument) expect(checkParamHeaders([region], { region: argument }, headerOf({ 'Mcp-Param-Region': clientForm(other) }))).toMatchObject({ ok: false, header: 'Mcp-Param-Region' });
      }),
      { numRuns: 500 },
    );
  });

  it('finds each declaration a schema makes checked against the arguments it names (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e9, max: 1e9 }), fc.boolean(), (limit, dry) => {
        const declared = paramHeadersOf({ type: 'object', properties: { limit: { type: 'integer', 'x-mcp-header': 'Limit' }, dry: { type: 'boolean', 'x-mcp-header': 'Dry' } } });
        if (!declared.valid) throw new Error(declared.reason);
        const args = { limit, dry };
        expect(checkParamHeaders(declared.headers, args, headerOf({ 'Mcp-Param-Limit': String(limit), 'Mcp-Param-Dry': String(dry) }))).toEqual({ ok: true });
        expect(checkParamHeaders(declared.headers, args, headerOf({ 'Mcp-Param-Limit': String(limit + 1), 'Mcp-Param-Dry': String(dry) }))).toMatchObject({ ok: false, header: 'Mcp-Param-Limit' });
        expect(checkParamHeaders(declared.headers, args, headerOf({ 'Mcp-Param-Limit': String(limit) }))).toMatchObject({ ok: false, header: 'Mcp-Param-Dry' });
      }),
      { numRuns: 200 },
    );
  });
});
