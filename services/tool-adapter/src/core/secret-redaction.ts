// Removing leased secret values from tool results. A tool may echo a credential it was given, or an encoding of
// it: each secret is searched for as written, JSON-escaped, URL-encoded (several spellings), as hex, and as base64
// (standard and URL-safe, padded or not) at all three byte alignments, so a secret embedded anywhere in a longer
// base64 blob is found too. Every character that carries bits of the secret is replaced.

/** What replaces a secret value. */
export const REDACTION_MARKER = '[REDACTED]';

/** Encodings shorter than this are not searched for (they would match by chance); the raw value always is. */
const MIN_ENCODED_LENGTH = 8;

const BASE64_CHARS = /[A-Za-z0-9+/=_-]/;

interface Needle {
  readonly text: string;
  /** Base64 needles cover only the characters fully determined by the secret: neighbours carry some of its bits. */
  readonly base64: boolean;
}

function base64Alphabets(encoded: string): string[] {
  return [encoded, encoded.replaceAll('+', '-').replaceAll('/', '_')];
}

/**
 * The base64 text a secret's bytes produce at byte offset `shift` (0–2) of a longer byte string: only the
 * characters whose 6 bits all come from the secret, so it is the same whatever surrounds the secret.
 */
function base64Core(bytes: Buffer, shift: number): string {
  const padded = Buffer.concat([Buffer.alloc(shift), bytes, Buffer.alloc(3)]);
  const encoded = padded.toString('base64');
  const firstBit = 8 * shift;
  const endBit = 8 * (shift + bytes.length);
  return encoded.slice(Math.ceil(firstBit / 6), Math.floor(endBit / 6));
}

function percentEncodedForms(secret: string): string[] {
  const component = encodeURIComponent(secret);
  const strict = component.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const forms = [component, strict, component.replaceAll('%20', '+'), strict.replaceAll('%20', '+')];
  return [...forms, ...forms.map((form) => form.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()))];
}

/** Every form of one secret that is searched for. */
function needlesOf(secret: string): Needle[] {
  if (secret === '') return [];
  const needles: Needle[] = [{ text: secret, base64: false }];
  const plain = (text: string) => {
    if (text.length >= MIN_ENCODED_LENGTH && text !== secret) needles.push({ text, base64: false });
  };
  plain(JSON.stringify(secret).slice(1, -1));
  for (const form of percentEncodedForms(secret)) plain(form);
  const bytes = Buffer.from(secret, 'utf8');
  plain(bytes.toString('hex'));
  plain(bytes.toString('hex').toUpperCase());
  for (const exact of base64Alphabets(bytes.toString('base64'))) plain(exact);
  for (let shift = 0; shift < 3; shift++) {
    for (const core of base64Alphabets(base64Core(bytes, shift))) {
      if (core.length >= MIN_ENCODED_LENGTH) needles.push({ text: core, base64: true });
    }
  }
  const seen = new Set<string>();
  return needles.filter((needle) => {
    const key = `${needle.base64 ? 'b' : 'p'}${needle.text}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** A text after redaction, and how many secret occurrences were removed. */
export interface RedactedText {
  readonly text: string;
  readonly redactions: number;
}

/** Finds and replaces the values of a call's leased secrets, in every form, in texts and JSON values. */
export class SecretRedactor {
  readonly #needles: readonly Needle[];
  readonly #rawSecrets: readonly string[];

  constructor(secrets: readonly string[]) {
    this.#rawSecrets = secrets.filter((secret) => secret !== '');
    // Longest first, so when two forms overlap the wider one decides the span.
    this.#needles = this.#rawSecrets.flatMap(needlesOf).toSorted((a, b) => b.text.length - a.text.length);
  }

  /** Whether there is anything to redact at all. */
  get empty(): boolean {
    return this.#needles.length === 0;
  }

  /**
   * Replaces every occurrence of every form of every secret in `text`. With `cutAtEnd`, the text was cut short
   * before it got here, so a secret's beginning (at least 4 characters) at its very end is removed too.
   */
  redact(text: string, cutAtEnd = false): RedactedText {
    if (this.#needles.length === 0 || text === '') return { text, redactions: 0 };
    const spans: [number, number][] = [];
    for (const needle of this.#needles) {
      for (let at = text.indexOf(needle.text); at >= 0; at = text.indexOf(needle.text, at + 1)) {
        let start = at;
        let end = at + needle.text.length;
        if (needle.base64) {
          if (start > 0 && BASE64_CHARS.test(text.charAt(start - 1))) start--;
          while (end < text.length && BASE64_CHARS.test(text.charAt(end)) && (end === at + needle.text.length || text.charAt(end) === '=')) end++;
        }
        spans.push([start, end]);
      }
    }
    if (cutAtEnd) {
      const tail = this.#secretPrefixAtEnd(text);
      if (tail > 0) spans.push([text.length - tail, text.length]);
    }
    if (spans.length === 0) return { text, redactions: 0 };
    spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    let result = '';
    let cursor = 0;
    let redactions = 0;
    let open: [number, number] | undefined;
    for (const span of spans) {
      if (open !== undefined && span[0] < open[1]) {
        open[1] = Math.max(open[1], span[1]);
        continue;
      }
      if (open !== undefined) {
        result += text.slice(cursor, open[0]) + REDACTION_MARKER;
        cursor = open[1];
        redactions++;
      }
      open = [span[0], span[1]];
    }
    if (open !== undefined) {
      result += text.slice(cursor, open[0]) + REDACTION_MARKER;
      cursor = open[1];
      redactions++;
    }
    return { text: result + text.slice(cursor), redactions };
  }

  #secretPrefixAtEnd(text: string): number {
    let longest = 0;
    for (const needle of this.#needles) {
      for (let length = Math.min(needle.text.length - 1, text.length); length >= 4 && length > longest; length--) {
        if (text.endsWith(needle.text.slice(0, length))) {
          longest = length;
          break;
        }
      }
    }
    return longest;
  }

  /** Whether a number's decimal spelling contains a secret (a numeric PIN or account number). */
  containsSecret(text: string): boolean {
    return this.#rawSecrets.some((secret) => text.includes(secret));
  }
}
