import { MAX_RESULT_BYTES, canonicalJson, jsonProblem, sha256Hex, type JsonObject, type ToolFailure } from '@toolplane/contracts';
import { SecretRedactor } from './secret-redaction.js';

// Sanitization turns what a provider returned into the normalized result a model may see: text and structured
// content only, leased secret values removed in every form, lone surrogates repaired (so it can be hashed),
// bounded to MAX_RESULT_BYTES with an explicit marker, and tagged as untrusted tool data by the reply.

/**
 * What a provider returned, in MCP's CallToolResult shape (the MCP adapter passes it through unchanged): content
 * blocks and optional structured content. Untrusted: any field may be missing or of the wrong type.
 */
export interface ProviderOutput {
  readonly content?: unknown;
  readonly structuredContent?: unknown;
}

/** The sanitized, bounded result of a call. */
export interface SanitizedResult {
  readonly structuredContent?: JsonObject;
  readonly textContent?: string;
  /** True when content was cut or dropped to respect the size bound. */
  readonly truncated: boolean;
  /** How many secret occurrences were removed. */
  readonly redactions: number;
  /** The canonical JSON of `{ structuredContent, textContent, truncated }`: what is stored and replayed. */
  readonly resultJson: string;
  /** SHA-256 of `resultJson`: the receipt's result hash. */
  readonly resultHash: string;
}

/** How results are bounded. */
export interface SanitizeOptions {
  /** The most UTF-8 bytes of structured plus text content; default MAX_RESULT_BYTES. */
  readonly maxBytes?: number;
  /** The output was already cut short before it reached the core (the adapter caps what it reads). */
  readonly inputTruncated?: boolean;
}

function bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Replaces lone surrogates with U+FFFD, so the text is valid Unicode and canonical JSON accepts it. */
function wellFormed(text: string): string {
  // Round-tripping through UTF-8 is exactly that replacement, and linear.
  return /[\uD800-\uDFFF]/.test(text) ? Buffer.from(text, 'utf8').toString('utf8') : text;
}

function describe(value: unknown): string {
  return typeof value === 'string' ? value.slice(0, 100) : 'unknown';
}

/** The text of MCP content blocks: text and embedded text resources verbatim, everything else as a short note. */
export function contentText(content: unknown): string | undefined {
  if (!Array.isArray(content) || content.length === 0) return undefined;
  const parts: string[] = [];
  for (const block of content as unknown[]) {
    if (typeof block !== 'object' || block === null) continue;
    const b = block as Record<string, unknown>;
    if (b.type === 'text' && typeof b.text === 'string') parts.push(b.text);
    else if (b.type === 'resource' && typeof b.resource === 'object' && b.resource !== null) {
      const resource = b.resource as Record<string, unknown>;
      if (typeof resource.text === 'string') parts.push(resource.text);
      else parts.push(`[binary resource ${describe(resource.uri)} omitted]`);
    } else if (b.type === 'image' || b.type === 'audio') parts.push(`[${b.type} (${describe(b.mimeType)}) omitted]`);
    else if (b.type === 'resource_link') parts.push(`[resource link ${describe(b.uri)}]`);
    else parts.push(`[content of type ${describe(b.type)} omitted]`);
  }
  return parts.join('\n');
}

type Frame = { readonly source: unknown; readonly assign: (value: unknown) => void };

/**
 * A copy of a JSON value with every string (keys included) redacted and repaired, and numbers whose spelling
 * contains a secret replaced by the marker. Iterative: a hostile value cannot exhaust the stack.
 */
function redactJson(value: unknown, redactor: SecretRedactor): { value: unknown; redactions: number } {
  let redactions = 0;
  const text = (s: string): string => {
    const redacted = redactor.redact(wellFormed(s));
    redactions += redacted.redactions;
    return redacted.text;
  };
  let root: unknown;
  const stack: Frame[] = [{ source: value, assign: (v) => (root = v) }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const { source, assign } = frame;
    if (typeof source === 'string') assign(text(source));
    else if (typeof source === 'number') {
      assign(!redactor.empty && redactor.containsSecret(String(source)) ? text(String(source)) : source);
    } else if (Array.isArray(source)) {
      const copy: unknown[] = new Array<unknown>(source.length);
      assign(copy);
      source.forEach((item, i) => stack.push({ source: item, assign: (v) => (copy[i] = v) }));
    } else if (typeof source === 'object' && source !== null) {
      const copy: Record<string, unknown> = {};
      assign(copy);
      for (const [key, item] of Object.entries(source)) {
        const redactedKey = text(key);
        let name = redactedKey;
        // Two keys redacted to the same text must both survive.
        for (let n = 2; Object.hasOwn(copy, name); n++) name = `${redactedKey}#${n}`;
        copy[name] = undefined;
        stack.push({ source: item, assign: (v) => (copy[name] = v) });
      }
    } else assign(source);
  }
  return { value: root, redactions };
}

/** Cuts text to at most `maxBytes` UTF-8 bytes, on a character boundary. */
function cutToBytes(text: string, maxBytes: number): string {
  if (bytes(text) <= maxBytes) return text;
  const encoded = Buffer.from(text, 'utf8');
  let end = Math.max(0, maxBytes);
  while (end > 0 && ((encoded[end] ?? 0) & 0xc0) === 0x80) end--;
  return encoded.subarray(0, end).toString('utf8');
}

/** The marker that ends a cut text, saying how much was kept. */
export function truncationMarker(shownBytes: number, totalBytes: number): string {
  return `\n[truncated by Toolplane: ${shownBytes} of ${totalBytes} bytes shown]`;
}

/**
 * Normalizes, redacts and bounds a provider's output. Order matters: secrets are removed from the whole output
 * before anything is cut, so a cut can never leave part of a secret behind; structured content that does not fit is
 * dropped (its JSON text is kept as text if nothing else is), and text is cut with an explicit marker.
 */
export function sanitizeResult(output: ProviderOutput, secrets: readonly string[], options: SanitizeOptions = {}): SanitizedResult {
  const maxBytes = options.maxBytes ?? MAX_RESULT_BYTES;
  const redactor = new SecretRedactor(secrets);
  let redactions = 0;
  let truncated = options.inputTruncated === true;

  let structured: JsonObject | undefined;
  let droppedNote: string | undefined;
  const raw = output.structuredContent;
  if (raw !== undefined && raw !== null) {
    const problem = typeof raw !== 'object' || Array.isArray(raw) ? 'it is not a JSON object' : jsonProblem(raw);
    if (problem === undefined) {
      const redacted = redactJson(raw, redactor);
      redactions += redacted.redactions;
      structured = redacted.value as JsonObject;
    } else {
      droppedNote = `[structured content dropped: ${problem.slice(0, 200)}]`;
      truncated = true;
    }
  }

  let text = contentText(output.content);
  if (text !== undefined) {
    const redacted = redactor.redact(wellFormed(text), options.inputTruncated === true);
    redactions += redacted.redactions;
    text = redacted.text;
  }
  if (droppedNote !== undefined) text = text === undefined ? droppedNote : `${text}\n${droppedNote}`;

  const structuredJson = structured === undefined ? undefined : canonicalJson(structured);
  const total = (structuredJson === undefined ? 0 : bytes(structuredJson)) + (text === undefined ? 0 : bytes(text));
  if (total > maxBytes) {
    truncated = true;
    if (structuredJson !== undefined && (text === undefined || text === '')) text = structuredJson;
    structured = undefined;
    if (text !== undefined && bytes(text) > maxBytes) {
      const textBytes = bytes(text);
      const marker = truncationMarker(maxBytes, textBytes);
      const kept = cutToBytes(text, maxBytes - bytes(marker));
      text = `${kept}${truncationMarker(bytes(kept), textBytes)}`;
    }
  }

  const content = { structuredContent: structured, textContent: text, truncated };
  const resultJson = canonicalJson(content);
  return {
    ...(structured === undefined ? {} : { structuredContent: structured }),
    ...(text === undefined ? {} : { textContent: text }),
    truncated,
    redactions,
    resultJson,
    resultHash: sha256Hex(resultJson),
  };
}

/**
 * A provider failure with leased secrets removed from its message and error type, its fields in the contract's
 * order (the events that carry it are sent as the core built them, not parsed into that order again).
 */
export function sanitizeFailure(failure: ToolFailure, secrets: readonly string[]): ToolFailure {
  const redactor = new SecretRedactor(secrets);
  if (redactor.empty) {
    const { code, message, retryable, providerErrorType } = failure;
    return { code, message, retryable, ...(providerErrorType === undefined ? {} : { providerErrorType }) };
  }
  const message = redactor.redact(wellFormed(failure.message)).text.slice(0, 4096);
  const type = failure.providerErrorType === undefined ? undefined : redactor.redact(wellFormed(failure.providerErrorType)).text.slice(0, 256);
  return { code: failure.code, message, retryable: failure.retryable, ...(type === undefined ? {} : { providerErrorType: type }) };
}

/** The content of a stored result (its `resultJson`), for replies and replays. */
export function storedResultContent(resultJson: string): { structuredContent?: JsonObject; textContent?: string; truncated: boolean } {
  const parsed = JSON.parse(resultJson) as { structuredContent?: JsonObject; textContent?: string; truncated?: boolean };
  return {
    ...(parsed.structuredContent === undefined ? {} : { structuredContent: parsed.structuredContent }),
    ...(parsed.textContent === undefined ? {} : { textContent: parsed.textContent }),
    truncated: parsed.truncated === true,
  };
}
