// Every form in which a secret could leak into text: verbatim, URL-encoded (component and form style), JSON-
// escaped, hex, and base64/base64url at each of the three byte alignments it could have inside a larger
// encoded value.

/** The substrings whose presence in a text means the secret leaked. */
export function leakNeedles(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const needles = new Set<string>([secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2), JSON.stringify(secret).slice(1, -1), bytes.toString('hex')]);
  for (let offset = 0; offset < 3; offset += 1) {
    const shifted = Buffer.concat([Buffer.alloc(offset, 0x20), bytes]);
    for (const encoding of ['base64', 'base64url'] as const) {
      const encoded = shifted.toString(encoding).replace(/=+$/, '');
      // Characters that also encode the padding bytes before, or the unknown bytes after, are dropped.
      const start = Math.ceil((offset * 4) / 3);
      const end = Math.floor(((offset + bytes.length) * 4) / 3);
      needles.add(encoded.slice(start, end));
    }
  }
  return [...needles].filter((needle) => needle.length >= 12);
}

/** One place a secret was found. */
export interface LeakHit {
  readonly secret: string;
  readonly needle: string;
  readonly where: string;
  readonly excerpt: string;
}

/** Searches named texts for every form of every secret. */
export function findLeaks(secrets: readonly string[], haystacks: ReadonlyMap<string, string>): LeakHit[] {
  const hits: LeakHit[] = [];
  for (const secret of secrets) {
    for (const needle of leakNeedles(secret)) {
      for (const [where, text] of haystacks) {
        const index = text.indexOf(needle);
        if (index >= 0) hits.push({ secret: `${secret.slice(0, 14)}…`, needle: `${needle.slice(0, 14)}…`, where, excerpt: text.slice(Math.max(0, index - 80), index + needle.length + 80) });
      }
    }
  }
  return hits;
}
