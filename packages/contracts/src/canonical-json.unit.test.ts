import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalHash, canonicalJson, deriveIdempotencyKey, requestHash, requestHashAndArgumentsJson, sha256Hex } from './canonical-json.js';
import { hasErrorCode } from './errors.js';
import { jsonProblem } from './json.js';

// Expected hashes were computed independently with Python's hashlib over the canonical strings written out
// here (cross-checked with json.dumps(sort_keys=True, separators=(',', ':'))), never with the code under test.

function double(bits: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${bits}`));
  return view.getFloat64(0);
}

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (hasErrorCode(error)) return error.code;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('canonicalJson (RFC 8785)', () => {
  it('serializes the RFC 8785 §3.2.2 example exactly', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        '"string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    ) as unknown;
    const expected = '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}';
    expect(canonicalJson(input)).toBe(expected);
    expect(canonicalHash(input)).toBe('2d5e01a318d0f0879ab568c4be289c8b1f64ef8921a53c6277d5e069978baacb');
  });

  it('sorts keys by UTF-16 code units (RFC 8785 §3.2.3)', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    expect(canonicalJson(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it.each([
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555555', '333333333.3333333'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
  ])('serializes the IEEE 754 double %s as %s (RFC 8785 Appendix B)', (bits, expected) => {
    expect(canonicalJson(double(bits))).toBe(expected);
  });

  it('escapes only what JSON requires, in lowercase hex', () => {
    expect(canonicalJson('\u0000\u001f"\\/\u007f\u2028é')).toBe('"\\u0000\\u001f\\"\\\\/\u007f\u2028é"');
  });

  it('leaves out undefined properties, as JSON.stringify does', () => {
    expect(canonicalJson({ b: 1, a: undefined, c: { d: undefined } })).toBe('{"b":1,"c":{}}');
  });

  it.each([
    ['NaN', { n: Number.NaN }],
    ['Infinity', [Number.POSITIVE_INFINITY]],
    ['undefined in an array', [1, undefined]],
    ['an array hole', [1, , 3]], // eslint-disable-line no-sparse-arrays
    ['a function', { f: () => 1 }],
    ['a bigint', { n: 1n }],
    ['a symbol', { s: Symbol('s') }],
    ['a Date', { at: new Date(0) }],
    ['a Map', new Map()],
    ['a lone surrogate', { s: '\ud800' }],
    ['top-level undefined', undefined],
  ])('refuses %s with INVALID_ARGUMENT', (_what, value) => {
    expect(refusal(() => canonicalJson(value))).toBe('INVALID_ARGUMENT');
  });

  it('refuses cycles but accepts a value shared by two properties', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = { back: cyclic };
    expect(refusal(() => canonicalJson(cyclic))).toBe('INVALID_ARGUMENT');
  });

  it('refuses nesting deeper than the bound without exhausting the stack', () => {
    let deep: unknown = 0;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(refusal(() => canonicalJson(deep))).toBe('INVALID_ARGUMENT');
    expect(jsonProblem(deep)).toMatch(/deeper than 64/);
  });
});

/** What canonicalJson did before its one-pass writer, as the reference: jsonProblem's check, then canonicalize's text. */
function reference(value: unknown): string {
  const problem = jsonProblem(value);
  if (problem !== undefined) throw new Error(`not canonicalizable JSON: ${problem}`);
  try {
    const text = canonicalize(value);
    if (text === undefined) throw new Error('not canonicalizable JSON: no value');
    return text;
  } catch (error) {
    throw new Error(`not canonicalizable JSON: ${error instanceof Error ? error.message.replace(/^not canonicalizable JSON: /, '') : String(error)}`, { cause: error });
  }
}

function outcome(run: () => string): { text: string } | { refused: string } {
  try {
    return { text: run() };
  } catch (error) {
    return { refused: error instanceof Error ? error.message : String(error) };
  }
}

// Strings rich in what needs care: halves of surrogate pairs alone and paired, quotes, backslashes, controls, U+2028.
const edgyUnit = fc.oneof(fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\ud83d\ude00', '"', '\\', '\u0000', '\u001f', '\u2028', '\u20ac'), fc.string({ minLength: 1, maxLength: 1 }));
const edgyString = fc.string({ unit: edgyUnit, maxLength: 6 });

// Values near JSON and across its edges: lone surrogates, -0, NaN and the infinities, undefined entries and
// properties, holes, dates, bigints, null-prototype objects, nesting around the depth bound.
const { value: nearJson } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string({ unit: 'binary' }),
    edgyString,
    fc.double(),
    fc.integer(),
    fc.constantFrom(0, -0, Number.NaN, Number.POSITIVE_INFINITY, 1e21, 1e-7, 5e-324, Number.MAX_SAFE_INTEGER + 2),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.date({ noInvalidDate: true }),
    fc.bigInt(),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.sparseArray(tie('value'), { maxLength: 5 }),
    fc.dictionary(edgyString, tie('value'), { maxKeys: 5 }),
    fc.dictionary(fc.string({ maxLength: 4 }), tie('value'), { maxKeys: 5, noNullPrototype: false }),
  ),
}));

function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i += 1) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

describe('canonicalJson against the reference (jsonProblem, then canonicalize)', () => {
  it('writes the same text, and refuses the same values with the same reason', () => {
    fc.assert(
      fc.property(nearJson, (value) => {
        expect(outcome(() => canonicalJson(value))).toEqual(outcome(() => reference(value)));
      }),
      { numRuns: 3000 },
    );
  });

  it('agrees on JSON values of every kind', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(reference(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('agrees at the depth bound and on cycles', () => {
    for (const depth of [62, 63, 64, 65, 66]) {
      for (const leaf of [1, [], {}, '\ud800', undefined]) {
        expect(outcome(() => canonicalJson(nested(depth, leaf)))).toEqual(outcome(() => reference(nested(depth, leaf))));
      }
    }
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = [cyclic];
    expect(outcome(() => canonicalJson(cyclic))).toEqual(outcome(() => reference(cyclic)));
  });
});

describe('hashes', () => {
  it('sha256Hex matches the FIPS 180-2 vectors', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex(new TextEncoder().encode('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  const args = { title: 'Hi', labels: ['bug'], n: 1 };

  it('requestHash covers purpose, scope, tool, version and arguments', () => {
    // sha256 of {"arguments":{"labels":["bug"],"n":1,"title":"Hi"},"purpose":"toolplane/v1/request-hash","tenant":"acme","toolId":"github.create_issue","toolVersion":"1.0.0","workspace":"main"}
    const base = { tenant: 'acme', workspace: 'main', toolId: 'github.create_issue', toolVersion: '1.0.0', arguments: args };
    expect(requestHash(base)).toBe('395ab129507ceb7ce12e7e1d8817450a6008c1df90c11a7875123a4958a7308a');
    expect(requestHash({ ...base, arguments: { n: 1, labels: ['bug'], title: 'Hi' } })).toBe(requestHash(base));
    for (const changed of [{ tenant: 'other' }, { workspace: 'other' }, { toolVersion: '1.0.1' }, { arguments: { ...args, n: 2 } }]) {
      expect(requestHash({ ...base, ...changed })).not.toBe(requestHash(base));
    }
  });

  it('requestHash and deriveIdempotencyKey cover a completion’s argument and partial value, and are unchanged without one', () => {
    const base = { tenant: 'acme', workspace: 'main', toolId: 'github.triage', toolVersion: '1.0.0', arguments: { repo: 'toolplane' } };
    const completing = (name: string, value: string) => ({ ...base, completion: { argument: { name, value } } });
    expect(requestHash({ ...base, completion: undefined })).toBe(requestHash(base));
    expect(requestHash(completing('label', 'bu'))).not.toBe(requestHash(base));
    expect(requestHash(completing('label', 'bu'))).toBe(requestHash(completing('label', 'bu')));
    expect(requestHash(completing('label', 'bu'))).not.toBe(requestHash(completing('label', 'bug')));
    expect(requestHash(completing('label', 'bu'))).not.toBe(requestHash(completing('owner', 'bu')));
    const key = { durableExecutionId: 'run-1', agentRevision: '7', toolId: 'github.triage', arguments: { repo: 'toolplane' } };
    expect(deriveIdempotencyKey({ ...key, completion: { argument: { name: 'label', value: 'bu' } } })).not.toBe(deriveIdempotencyKey({ ...key, completion: { argument: { name: 'label', value: 'bug' } } }));
    expect(deriveIdempotencyKey({ ...key, completion: undefined })).toBe(deriveIdempotencyKey(key));
  });

  it('deriveIdempotencyKey is deterministic and independent of key order', () => {
    // sha256 of {"agentRevision":"7","arguments":{"labels":["bug"],"n":1,"title":"Hi"},"durableExecutionId":"run-42:step-3","purpose":"toolplane/v1/idempotency-key","toolId":"github.create_issue"}
    const input = { durableExecutionId: 'run-42:step-3', agentRevision: '7', toolId: 'github.create_issue', arguments: args };
    expect(deriveIdempotencyKey(input)).toBe('5503e2b92aa7d2327599d11f4dd10d308aff5636d7629249452d5eba1931bb42');
    expect(deriveIdempotencyKey({ ...input, arguments: { n: 1, title: 'Hi', labels: ['bug'] } })).toBe(deriveIdempotencyKey(input));
    expect(deriveIdempotencyKey({ ...input, agentRevision: '8' })).not.toBe(deriveIdempotencyKey(input));
  });

  it('requestHashAndArgumentsJson gives requestHash and canonicalJson of the arguments, and refuses what requestHash refuses', () => {
    const args = fc.oneof(fc.dictionary(edgyString, fc.jsonValue(), { maxKeys: 6 }), fc.dictionary(edgyString, nearJson, { maxKeys: 4 }), fc.constantFrom(nested(62, 1), nested(63, 1), nested(64, 1), nested(65, 1)));
    fc.assert(
      fc.property(edgyString, edgyString, edgyString, edgyString, args, fc.option(fc.tuple(edgyString, edgyString), { nil: undefined }), (tenant, workspace, toolId, toolVersion, value, completed) => {
        const completion = completed === undefined ? undefined : { argument: { name: completed[0], value: completed[1] } };
        const input = { tenant, workspace, toolId, toolVersion, arguments: value as Record<string, never>, completion };
        const both = outcome(() => JSON.stringify(requestHashAndArgumentsJson(input)));
        const apart = outcome(() => JSON.stringify({ requestHash: requestHash(input), argumentsJson: canonicalJson(value) }));
        expect(both).toEqual(apart);
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses arguments that are not JSON', () => {
    expect(refusal(() => requestHash({ tenant: 'a', workspace: 'b', toolId: 'x.y', toolVersion: '1', arguments: { n: Number.NaN } }))).toBe('INVALID_ARGUMENT');
  });
});
