import { describe, expect, it } from 'vitest';
import { REDACTION_MARKER, SecretRedactor } from './secret-redaction.js';

const secret = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';

describe('SecretRedactor', () => {
  it('removes the raw value wherever it appears', () => {
    const { text, redactions } = new SecretRedactor([secret]).redact(`token=${secret}; again ${secret}!`);
    expect(text).toBe(`token=${REDACTION_MARKER}; again ${REDACTION_MARKER}!`);
    expect(redactions).toBe(2);
  });

  it('removes standard and URL-safe base64, padded or not', () => {
    const tricky = 'p@ss>?w0rd~~with/slashes+plus';
    const standard = Buffer.from(tricky).toString('base64');
    const urlSafe = Buffer.from(tricky).toString('base64url');
    expect(standard).not.toBe(urlSafe);
    const redactor = new SecretRedactor([tricky]);
    for (const encoded of [standard, urlSafe, standard.replace(/=+$/, '')]) {
      const { text } = redactor.redact(`Authorization: Basic ${encoded}\n`);
      expect(text, encoded).toBe(`Authorization: Basic ${REDACTION_MARKER}\n`);
    }
  });

  it('removes a secret embedded at any byte offset of a longer base64 blob, leaving no character that carries its bits', () => {
    const redactor = new SecretRedactor([secret]);
    for (const prefix of ['', 'a', 'ab', 'abc', 'user:', '{"apiKey":"']) {
      for (const suffix of ['', 'x', 'xy', '"}']) {
        const blob = Buffer.from(`${prefix}${secret}${suffix}`).toString('base64');
        const { text, redactions } = redactor.redact(`data ${blob} end`);
        expect(redactions, `${prefix}|${suffix}`).toBeGreaterThan(0);
        // Decoding what is left must not reveal any 4+ character piece of the secret.
        const remaining = text.replace(`data `, '').replace(' end', '').split(REDACTION_MARKER);
        for (const part of remaining) {
          const decoded = Buffer.from(part, 'base64').toString('latin1');
          for (let i = 0; i + 4 <= secret.length; i++) expect(decoded).not.toContain(secret.slice(i, i + 4));
        }
      }
    }
  });

  it('removes URL-encoded, JSON-escaped and hex forms', () => {
    const withSpecials = 'a b/c?d=e&f"g\\h';
    const redactor = new SecretRedactor([withSpecials]);
    for (const form of [encodeURIComponent(withSpecials), encodeURIComponent(withSpecials).replaceAll('%20', '+'), encodeURIComponent(withSpecials).toLowerCase(), JSON.stringify(withSpecials).slice(1, -1), Buffer.from(withSpecials).toString('hex')]) {
      expect(redactor.redact(`before ${form} after`).text, form).toBe(`before ${REDACTION_MARKER} after`);
    }
  });

  it('merges overlapping matches of several secrets into one marker', () => {
    const redactor = new SecretRedactor(['abcdef', 'defghi']);
    expect(redactor.redact('xxabcdefghixx').text).toBe(`xx${REDACTION_MARKER}xx`);
  });

  it('removes a secret cut off at the end of a text that was truncated upstream', () => {
    const redactor = new SecretRedactor([secret]);
    expect(redactor.redact(`value: ${secret.slice(0, 12)}`, true).text).toBe(`value: ${REDACTION_MARKER}`);
    expect(redactor.redact(`value: ${secret.slice(0, 12)}`, false).text).toBe(`value: ${secret.slice(0, 12)}`);
  });

  it('does nothing without secrets, and ignores empty ones', () => {
    expect(new SecretRedactor([]).redact('anything')).toEqual({ text: 'anything', redactions: 0 });
    expect(new SecretRedactor(['']).empty).toBe(true);
  });

  it('stays fast on a large text', () => {
    const redactor = new SecretRedactor([secret, 'another-secret-value-123']);
    const big = `${'lorem ipsum '.repeat(100_000)}${secret}`;
    const started = performance.now();
    expect(redactor.redact(big).redactions).toBe(1);
    expect(performance.now() - started).toBeLessThan(3000);
  });
});
