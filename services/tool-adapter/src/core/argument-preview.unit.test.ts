import { ARGUMENT_PREVIEW_MAX_CHARS, ARGUMENT_REDACTION_MARKER, ArgumentPreview, canonicalJson, type JsonObject } from '@toolplane/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WELL_KNOWN_CREDENTIAL_NAMES, argumentPreview } from './argument-preview.js';

const R = ARGUMENT_REDACTION_MARKER;

function shown(preview: ArgumentPreview): unknown {
  return JSON.parse(preview.text);
}

describe('argumentPreview', () => {
  it('shows non-sensitive arguments as canonical JSON, unchanged', () => {
    const args = { query: 'status', limit: 10, nested: { b: [1, 2], a: null } };
    expect(argumentPreview(args, { type: 'object' }, [])).toEqual({ text: canonicalJson(args), redacted: [], truncated: false });
  });

  it('redacts well-known credential names at any depth, ignoring case, dashes and underscores', () => {
    const args = { user: 'ada', Password: 'hunter2', auth: { API_KEY: 'k1', 'refresh-token': 'r1', header: { Authorization: 'Bearer x' } }, items: [{ client_secret: 's' }] };
    const preview = argumentPreview(args, undefined, []);
    expect(shown(preview)).toEqual({ user: 'ada', Password: R, auth: { API_KEY: R, 'refresh-token': R, header: { Authorization: R } }, items: [{ client_secret: R }] });
    // In the text's order: canonical JSON sorts keys by UTF-16 code units.
    expect(preview.redacted).toEqual(['/Password', '/auth/API_KEY', '/auth/header/Authorization', '/auth/refresh-token', '/items/0/client_secret']);
  });

  it('matches credential names exactly, not as parts of longer names', () => {
    const args = { tokenizer: 'bpe', secretary: 'bob', passwordHint: 'pet name' };
    expect(argumentPreview(args, undefined, []).redacted).toEqual([]);
  });

  it('redacts the names the tenant policy lists, case-insensitively and at any depth', () => {
    const args = { ssn: '123', patient: { SSN: '456', dob: '1990-01-01' }, note: 'ok' };
    const preview = argumentPreview(args, undefined, ['ssn', 'DOB']);
    expect(shown(preview)).toEqual({ ssn: R, patient: { SSN: R, dob: R }, note: 'ok' });
  });

  it('redacts what the input schema marks writeOnly or format password, at the matching path only', () => {
    const schema = {
      type: 'object',
      properties: {
        pin: { type: 'string', writeOnly: true },
        account: { type: 'object', properties: { passphrase: { type: 'string', format: 'password' }, name: { type: 'string' } } },
        cards: { type: 'array', items: { type: 'object', properties: { cvv: { type: 'string', writeOnly: true } } } },
        name: { type: 'string' },
      },
    };
    // `pin` at the top is marked; a `pin` elsewhere in the arguments is not (the schema names a path, not a name).
    const args = { pin: '1234', account: { passphrase: 'open sesame', name: 'main', pin: 'visible' }, cards: [{ cvv: '111' }, { cvv: '222' }], name: 'ada' };
    const preview = argumentPreview(args, schema, []);
    expect(shown(preview)).toEqual({ pin: R, account: { passphrase: R, name: 'main', pin: 'visible' }, cards: [{ cvv: R }, { cvv: R }], name: 'ada' });
    expect(preview.redacted).toEqual(['/account/passphrase', '/cards/0/cvv', '/cards/1/cvv', '/pin']);
  });

  it('follows combinators, local references, additional and pattern properties, and tuples, redacting if any branch marks a field', () => {
    const schema = {
      $defs: { hidden: { type: 'string', writeOnly: true } },
      type: 'object',
      anyOf: [{ properties: { otp: { type: 'string' } } }, { properties: { otp: { $ref: '#/$defs/hidden' } } }],
      properties: {
        vault: { type: 'object', additionalProperties: { format: 'password' }, properties: { label: { type: 'string' } } },
        env: { type: 'object', patternProperties: { '^SECRET_': { writeOnly: true } } },
        pair: { type: 'array', prefixItems: [{ type: 'string' }, { writeOnly: true }] },
      },
    };
    const args = { otp: '999', vault: { label: 'v', one: 'x', two: 'y' }, env: { SECRET_A: 'a', HOME: '/h' }, pair: ['shown', 'hidden'] };
    // Pattern properties are not matched (the tool author's regular expressions are not run): every key counts.
    expect(shown(argumentPreview(args, schema, []))).toEqual({ otp: R, vault: { label: 'v', one: R, two: R }, env: { SECRET_A: R, HOME: R }, pair: ['shown', R] });
  });

  it('replaces a sensitive field whatever its type, an object or array included', () => {
    const preview = argumentPreview({ credentials: { user: 'u', pass: 'p' }, secret: ['a', 'b'], token: 42 }, undefined, []);
    expect(shown(preview)).toEqual({ credentials: R, secret: R, token: R });
  });

  it('escapes JSON pointers as RFC 6901 says', () => {
    expect(argumentPreview({ 'a/b': { 'c~d': 'x' } }, undefined, ['c~d']).redacted).toEqual(['/a~1b/c~0d']);
  });

  it('survives a self-referencing schema and ignores references it cannot resolve', () => {
    const schema = { $id: 'x', type: 'object', properties: { child: { $ref: '#' }, other: { $ref: 'https://example.com/s.json' }, bad: { $ref: '#/%zz' } }, writeOnly: false };
    const args = { child: { child: { child: { password: 'p', v: 1 } } }, other: 'o', bad: 'b' };
    expect(shown(argumentPreview(args, schema, []))).toEqual({ child: { child: { child: { password: R, v: 1 } } }, other: 'o', bad: 'b' });
  });

  it('redacts everything when the schema marks the arguments themselves', () => {
    expect(argumentPreview({ a: 1 }, { type: 'object', writeOnly: true }, [])).toEqual({ text: JSON.stringify(R), redacted: [''], truncated: false });
  });

  it('cuts a long preview to the bound, after redacting, never on half a surrogate pair', () => {
    const long = { password: 'p'.repeat(20_000), body: 'x'.repeat(20_000) };
    const preview = argumentPreview(long, undefined, []);
    expect(preview.truncated).toBe(true);
    expect(preview.text).toHaveLength(ARGUMENT_PREVIEW_MAX_CHARS);
    expect(preview.text.startsWith(`{"body":"xxx`)).toBe(true);
    expect(preview.redacted).toEqual(['/password']);
    // `{"a":"` is 6 characters: an emoji (two UTF-16 units) then straddles the cut unless the cut moves back.
    const emoji = argumentPreview({ a: 'x'.repeat(ARGUMENT_PREVIEW_MAX_CHARS - 7) + '😀'.repeat(10) }, undefined, []);
    expect(emoji.text).toHaveLength(ARGUMENT_PREVIEW_MAX_CHARS - 1);
    expect(emoji.text.endsWith('x')).toBe(true);
    expect(ArgumentPreview.parse(emoji)).toEqual(emoji);
  });

  it('names at most the first 256 redacted fields, as the contract bounds the list', () => {
    const args = { list: Array.from({ length: 300 }, (_, i) => ({ token: i })) };
    const preview = argumentPreview(args, undefined, []);
    expect(preview.redacted).toHaveLength(256);
    expect(preview.truncated).toBe(false);
    expect(preview.redacted.at(-1)).toBe('/list/255/token');
    expect(preview.text).not.toMatch(/"token":\d/);
  });

  // Sensitive values are strings no non-sensitive value can contain (only they hold `§`), so finding one in the text
  // can only mean it leaked.
  const sensitiveLeaf = fc.string({ minLength: 1, maxLength: 12 }).map((s) => `§${s}§`);
  const sensitiveValue = fc.oneof(sensitiveLeaf, fc.array(sensitiveLeaf, { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 6 }), sensitiveLeaf, { maxKeys: 3 }));
  const plainText = fc.string({ maxLength: 12 }).map((s) => s.replaceAll('§', ''));
  const wellKnown = fc.constantFrom(...WELL_KNOWN_CREDENTIAL_NAMES).chain((name) => fc.constantFrom(name, name.toUpperCase(), `${name.slice(0, 1)}_${name.slice(1)}`, `-${name}`));
  const policyName = fc.constantFrom('ssn', 'Iban', 'cardNumber');
  const schemaMarked = fc.constantFrom('pin', 'cvv');
  const sensitiveKey = fc.oneof(wellKnown, policyName, schemaMarked);
  const plainKey = fc.constantFrom('query', 'limit', 'note', 'items', 'user', 'tokenizer', 'ssn_hint');

  const tree: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      plainText,
      fc.integer(),
      fc.constant(null),
      fc.array(tie('node'), { maxLength: 3 }),
      fc
        .array(fc.oneof(fc.tuple(plainKey, tie('node')), fc.tuple(sensitiveKey, sensitiveValue)), { maxLength: 4 })
        .map((entries) => Object.fromEntries(entries)),
    ),
  })).node;

  // A schema that marks `pin` and `cvv` writeOnly/password wherever the arguments nest them (through every object
  // property and array item), as a recursive schema would.
  const schema = {
    $defs: {
      any: {
        type: ['object', 'array', 'string', 'integer', 'null'],
        properties: { pin: { writeOnly: true }, cvv: { format: 'password' } },
        additionalProperties: { $ref: '#/$defs/any' },
        items: { $ref: '#/$defs/any' },
      },
    },
    $ref: '#/$defs/any',
  };

  it('never shows any value of a sensitive field, whatever the nesting', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.tuple(plainKey, tree), fc.tuple(sensitiveKey, sensitiveValue)), { maxLength: 5 }).map((entries) => Object.fromEntries(entries) as JsonObject),
        (args) => {
          const preview = argumentPreview(args, schema, ['SSN', 'iban', 'CARDNUMBER']);
          expect(preview.text).not.toContain('§');
          expect(ArgumentPreview.safeParse(preview).success).toBe(true);
          // Every redaction is named, and only redactions hold the marker.
          expect(preview.text.split(JSON.stringify(R)).length - 1).toBe(preview.redacted.length);
        },
      ),
      { numRuns: 500 },
    );
  });
});
