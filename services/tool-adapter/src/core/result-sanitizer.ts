import {
  ContentAnnotations,
  MAX_RESULT_BYTES,
  MAX_RESULT_CONTENT_BLOCKS,
  canonicalJson,
  jsonProblem,
  sha256Hex,
  type JsonObject,
  type ToolContentBlock,
  type ToolFailure,
} from '@toolplane/contracts';
import { SecretRedactor } from './secret-redaction.js';

// Sanitization turns what a provider returned into the normalized result a model may see: MCP content blocks of every
// type and structured content, leased secret values removed in every form, base64 payloads checked, annotations
// validated, lone surrogates repaired (so it can be hashed), bounded to MAX_RESULT_BYTES with explicit markers, and
// tagged as untrusted tool data by the reply.
//
// The bound counts the UTF-8 bytes of what is stored and hashed: the canonical JSON of the content blocks, the
// structured content and the truncation flag. The text view (`textContent`) is derived from the blocks, never stored.
// When the whole does not fit, in this order:
//   1. structured content is kept if it fits beside the text (text blocks, text resources, links and notes, uncut);
//      otherwise it is dropped: its JSON becomes the text when there is no other, else a note says it was dropped;
//   2. each binary block (image, audio, blob resource) is kept whole, in order, while it fits in the room left;
//      one that does not is replaced by a text block saying what was dropped and why;
//   3. the blocks are then laid out in order: the first that would cross the bound is cut with the truncation marker
//      when it is text (a text block or text resource), and it (if it is not text) and every block after it are
//      replaced by one note counting them.
// Nothing is cut silently: every cut or drop leaves a marker and sets `truncated`.

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
  /** The content blocks, sanitized and bounded; absent when the provider returned none. */
  readonly content?: readonly ToolContentBlock[];
  readonly structuredContent?: JsonObject;
  /**
   * The structured content redacted and repaired but not bounded, when the provider returned a JSON object: what the
   * tool's output schema is checked against (see output-contract.ts). Never stored.
   */
  readonly sanitizedStructuredContent?: JsonObject;
  /** The text view of `content` (see {@link contentText}); derived, not stored. */
  readonly textContent?: string;
  /** True when content was cut or dropped to respect the size bound. */
  readonly truncated: boolean;
  /** How many secret occurrences were removed. */
  readonly redactions: number;
  /** The canonical JSON of `{ content, structuredContent, truncated }`: what is stored and replayed. */
  readonly resultJson: string;
  /** SHA-256 of `resultJson`: the receipt's result hash, covering every block. */
  readonly resultHash: string;
}

/** How results are bounded. */
export interface SanitizeOptions {
  /** The most UTF-8 bytes of the stored result's canonical JSON; default MAX_RESULT_BYTES. */
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

/**
 * The text of MCP content blocks: text and embedded text resources verbatim, everything else as a short note. This is
 * a result's `textContent`, for consumers that read text only.
 */
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

/** The marker that ends a cut text, saying how much was kept. */
export function truncationMarker(shownBytes: number, totalBytes: number): string {
  return `\n[truncated by Toolplane: ${shownBytes} of ${totalBytes} bytes shown]`;
}

/** What a metadata field longer than its bound ends with. */
const FIELD_CUT_MARKER = '[truncated by Toolplane]';

const STANDARD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const LENIENT_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Base64 text in its standard padded form, or undefined when it is not base64. Line breaks and missing padding (which
 * MCP SDKs accept) are normalized; anything outside the standard alphabet is refused.
 */
function canonicalBase64(text: string): string | undefined {
  if (STANDARD_BASE64.test(text)) return text;
  const compact = text.replace(/[\t\n\f\r ]/g, '');
  if (!LENIENT_BASE64.test(compact)) return undefined;
  const unpadded = compact.replace(/=+$/, '');
  if (unpadded.length % 4 === 1 || (compact.length !== unpadded.length && compact.length % 4 !== 0)) return undefined;
  return Buffer.from(unpadded, 'base64').toString('base64');
}

function decodedLength(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return (base64.length / 4) * 3 - padding;
}

function textBlock(text: string): ToolContentBlock {
  return { type: 'text', text };
}

/** The bounds of a content block's fields, as the contract has them. */
const FIELD_BOUNDS = { uri: 2048, name: 1024, title: 1024, description: 16_384, mimeType: 256 } as const;

/** Sanitizes the blocks of one result: one redactor, one redaction count, one truncation flag. */
class BlockSanitizer {
  redactions = 0;
  truncated = false;

  constructor(private readonly redactor: SecretRedactor) {}

  /** A string repaired and with leased secrets removed (`cutAtEnd`: the output was cut short right after it). */
  text(value: string, cutAtEnd = false): string {
    const redacted = this.redactor.redact(wellFormed(value), cutAtEnd);
    this.redactions += redacted.redactions;
    return redacted.text;
  }

  /** An optional metadata string: redacted, cut to its bound with a marker; undefined when absent or not a string. */
  field(value: unknown, bound: number): string | undefined {
    if (typeof value !== 'string') return undefined;
    const text = this.text(value);
    if (text.length <= bound) return text;
    this.truncated = true;
    let end = bound - FIELD_CUT_MARKER.length;
    if (/[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end--;
    return `${text.slice(0, end)}${FIELD_CUT_MARKER}`;
  }

  /** The well-formed annotations of a block: each malformed one is dropped, the others kept. */
  annotations(value: unknown): ContentAnnotations | undefined {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    const raw = value as Record<string, unknown>;
    const kept: { audience?: ('user' | 'assistant')[]; priority?: number; lastModified?: string } = {};
    if (Array.isArray(raw.audience)) {
      const audience = [...new Set(raw.audience as unknown[])];
      if (audience.length > 0 && audience.every((role) => role === 'user' || role === 'assistant')) kept.audience = audience;
    }
    const priority = ContentAnnotations.shape.priority.safeParse(raw.priority);
    if (priority.success && priority.data !== undefined) kept.priority = priority.data;
    const lastModified = ContentAnnotations.shape.lastModified.safeParse(raw.lastModified);
    // A date cannot hold a secret unless it is one: then it goes.
    if (lastModified.success && lastModified.data !== undefined && this.redactor.redact(lastModified.data).redactions === 0) kept.lastModified = lastModified.data;
    return Object.keys(kept).length === 0 ? undefined : kept;
  }

  /** A note that replaces a block Toolplane would not pass on. */
  replaced(note: string): ToolContentBlock {
    this.truncated = true;
    return textBlock(note);
  }

  /**
   * Checked base64, or the note the block is replaced with: not base64, or carrying a leased secret (in its base64
   * text at any byte offset, or in its bytes, raw or encoded).
   */
  binary(data: unknown, what: string): { readonly data: string } | { readonly note: string } {
    const canonical = typeof data === 'string' ? canonicalBase64(data) : undefined;
    if (canonical === undefined) return { note: `[${what} dropped by Toolplane: its data is not valid base64]` };
    if (!this.redactor.empty) {
      const found = this.redactor.redact(canonical).redactions + this.redactor.redact(Buffer.from(canonical, 'base64').toString('latin1')).redactions;
      if (found > 0) {
        this.redactions += found;
        return { note: `[${what}, ${decodedLength(canonical)} bytes, dropped by Toolplane: it holds a leased secret]` };
      }
    }
    return { data: canonical };
  }

  /** One sanitized block (or the note replacing it); undefined for an entry that is not a block at all. */
  block(value: unknown, last: boolean, inputTruncated: boolean): ToolContentBlock | undefined {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    const raw = value as Record<string, unknown>;
    const annotations = this.annotations(raw.annotations);
    const annotated = (block: ToolContentBlock): ToolContentBlock => (annotations === undefined ? block : { ...block, annotations });
    switch (raw.type) {
      case 'text':
        if (typeof raw.text !== 'string') return this.replaced('[text block dropped by Toolplane: it has no text]');
        return annotated({ type: 'text', text: this.text(raw.text, last && inputTruncated) });
      case 'image':
      case 'audio': {
        const type = raw.type;
        const mimeType = this.field(raw.mimeType, FIELD_BOUNDS.mimeType);
        if (mimeType === undefined) return this.replaced(`[${type} dropped by Toolplane: it has no media type]`);
        const checked = this.binary(raw.data, `${type} (${mimeType.slice(0, 100)})`);
        if ('note' in checked) return this.replaced(checked.note);
        return annotated({ type, data: checked.data, mimeType });
      }
      case 'resource_link': {
        const uri = typeof raw.uri === 'string' ? this.text(raw.uri) : undefined;
        const name = this.field(raw.name, FIELD_BOUNDS.name);
        if (uri === undefined || uri === '' || name === undefined) return this.replaced('[resource link dropped by Toolplane: it has no URI or name]');
        if (uri.length > FIELD_BOUNDS.uri) return this.replaced(`[resource link dropped by Toolplane: its URI is longer than ${FIELD_BOUNDS.uri} characters]`);
        const title = this.field(raw.title, FIELD_BOUNDS.title);
        const description = this.field(raw.description, FIELD_BOUNDS.description);
        const mimeType = this.field(raw.mimeType, FIELD_BOUNDS.mimeType);
        const size = typeof raw.size === 'number' && Number.isSafeInteger(raw.size) && raw.size >= 0 ? raw.size : undefined;
        return annotated({
          type: 'resource_link',
          uri,
          name,
          ...(title === undefined ? {} : { title }),
          ...(description === undefined ? {} : { description }),
          ...(mimeType === undefined ? {} : { mimeType }),
          ...(size === undefined ? {} : { size }),
        });
      }
      case 'resource': {
        const resource = typeof raw.resource === 'object' && raw.resource !== null ? (raw.resource as Record<string, unknown>) : {};
        const uri = typeof resource.uri === 'string' ? this.text(resource.uri) : undefined;
        if (uri === undefined || uri === '') return this.replaced('[resource dropped by Toolplane: it has no URI]');
        if (uri.length > FIELD_BOUNDS.uri) return this.replaced(`[resource dropped by Toolplane: its URI is longer than ${FIELD_BOUNDS.uri} characters]`);
        const mimeType = this.field(resource.mimeType, FIELD_BOUNDS.mimeType);
        const typed = mimeType === undefined ? {} : { mimeType };
        if (typeof resource.text === 'string') return annotated({ type: 'resource', resource: { uri, ...typed, text: this.text(resource.text, last && inputTruncated) } });
        if (resource.blob === undefined) return this.replaced(`[resource ${uri.slice(0, 100)} dropped by Toolplane: it has neither text nor blob]`);
        const checked = this.binary(resource.blob, `resource ${uri.slice(0, 100)} (${mimeType?.slice(0, 100) ?? 'no media type'})`);
        if ('note' in checked) return this.replaced(checked.note);
        return annotated({ type: 'resource', resource: { uri, ...typed, blob: checked.data } });
      }
      default:
        return textBlock(`[content of type ${this.text(describe(raw.type))} omitted]`);
    }
  }
}

/** Whether a block carries a binary payload (image, audio, blob resource), kept whole or dropped. */
function isBinary(block: ToolContentBlock): boolean {
  return block.type === 'image' || block.type === 'audio' || (block.type === 'resource' && 'blob' in block.resource);
}

/** Whether a block is text that may be cut (a text block, a text resource). */
function isText(block: ToolContentBlock): boolean {
  return block.type === 'text' || (block.type === 'resource' && 'text' in block.resource);
}

function textOf(block: ToolContentBlock): string {
  if (block.type === 'text') return block.text;
  return block.type === 'resource' && 'text' in block.resource ? block.resource.text : '';
}

function withText(block: ToolContentBlock, text: string): ToolContentBlock {
  if (block.type === 'text') return { ...block, text };
  if (block.type === 'resource' && 'text' in block.resource) return { ...block, resource: { ...block.resource, text } };
  return block;
}

/** The UTF-8 bytes of a block's canonical JSON. */
function sizeOf(block: ToolContentBlock): number {
  return bytes(canonicalJson(block));
}

/** What a code unit of a well-formed string costs in JSON.stringify's output (a surrogate pair: 2 per unit). */
function jsonCharBytes(code: number): number {
  if (code === 0x22 || code === 0x5c || code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d) return 2;
  if (code < 0x20) return 6;
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (code >= 0xd800 && code <= 0xdfff) return 2;
  return 3;
}

/** The longest prefix of `text` (never splitting a surrogate pair) whose JSON string content fits in `budget` bytes. */
function jsonPrefix(text: string, budget: number): string {
  let used = 0;
  let end = 0;
  while (end < text.length) {
    const code = text.charCodeAt(end);
    const pair = code >= 0xd800 && code <= 0xdbff && end + 1 < text.length;
    const cost = pair ? 4 : jsonCharBytes(code);
    if (used + cost > budget) break;
    used += cost;
    end += pair ? 2 : 1;
  }
  return text.slice(0, end);
}

/** The JSON bytes a string adds inside a JSON string (without the quotes). */
function jsonTextBytes(text: string): number {
  return bytes(JSON.stringify(text)) - 2;
}

/** `text` cut to fit a block of `budget` bytes with the truncation marker; undefined when not even the marker fits. */
function cutText(block: ToolContentBlock, budget: number): ToolContentBlock | undefined {
  const text = textOf(block);
  const totalBytes = bytes(text);
  const room = budget - sizeOf(withText(block, '')) - jsonTextBytes(truncationMarker(totalBytes, totalBytes));
  if (room < 0) return undefined;
  const kept = jsonPrefix(text, room);
  return withText(block, `${kept}${truncationMarker(bytes(kept), totalBytes)}`);
}

function droppedBinaryNote(block: ToolContentBlock, maxBytes: number): ToolContentBlock {
  let what: string;
  if (block.type === 'image' || block.type === 'audio') what = `${block.type} (${block.mimeType.slice(0, 100)}, ${decodedLength(block.data)} bytes)`;
  else if (block.type === 'resource' && 'blob' in block.resource) {
    what = `resource ${block.resource.uri.slice(0, 100)} (${block.resource.mimeType?.slice(0, 100) ?? 'no media type'}, ${decodedLength(block.resource.blob)} bytes)`;
  } else what = block.type;
  return textBlock(`[${what} dropped by Toolplane: the result is bounded to ${maxBytes} bytes]`);
}

function droppedBlocksNote(count: number, maxBytes: number): ToolContentBlock {
  return textBlock(`[${count} more content block${count === 1 ? '' : 's'} dropped by Toolplane: the result is bounded to ${maxBytes} bytes]`);
}

/** The canonical JSON of a stored result with no blocks and no structured content, and what structured content adds. */
const EMPTY_RESULT_BYTES = bytes(canonicalJson({ content: [], truncated: false }));
const STRUCTURED_KEY_BYTES = bytes(',"structuredContent":');

/** The blocks and structured content bounded as the header says (steps 1–3), when they do not fit as they are. */
function bound(blocks: readonly ToolContentBlock[], structured: JsonObject | undefined, maxBytes: number): { blocks: ToolContentBlock[]; structured: JsonObject | undefined } {
  const sizes = blocks.map(sizeOf);
  const structuredBytes = structured === undefined ? 0 : STRUCTURED_KEY_BYTES + bytes(canonicalJson(structured));
  const tailNote = sizeOf(droppedBlocksNote(blocks.length + 1, maxBytes)) + 1;
  let laid = [...blocks];

  // 1. Structured content, if it fits beside the text (with binary blocks as their notes).
  const notes = laid.map((block) => (isBinary(block) ? droppedBinaryNote(block, maxBytes) : undefined));
  const textBytes = laid.reduce((sum, block, i) => sum + (notes[i] === undefined ? (sizes[i] ?? 0) : sizeOf(notes[i])) + 1, 0);
  let kept = structured;
  let structuredNote: ToolContentBlock | undefined;
  if (structured !== undefined && EMPTY_RESULT_BYTES + structuredBytes + textBytes + tailNote > maxBytes) {
    kept = undefined;
    if (laid.some((block) => isText(block) && textOf(block) !== '')) {
      structuredNote = textBlock(`[structured content (${structuredBytes - STRUCTURED_KEY_BYTES} bytes) dropped by Toolplane: the result is bounded to ${maxBytes} bytes]`);
    } else {
      const json = textBlock(canonicalJson(structured));
      laid.push(json);
      sizes.push(sizeOf(json));
      notes.push(undefined);
    }
  }
  const reserved = EMPTY_RESULT_BYTES + (kept === undefined ? 0 : structuredBytes) + tailNote + (structuredNote === undefined ? 0 : sizeOf(structuredNote) + 1);

  // 2. Binary blocks whole, in order, in the room the rest leaves.
  let room = maxBytes - reserved - laid.reduce((sum, block, i) => sum + (notes[i] === undefined ? (sizes[i] ?? 0) : sizeOf(notes[i])) + 1, 0);
  laid = laid.map((block, i) => {
    const note = notes[i];
    if (note === undefined) return block;
    const extra = (sizes[i] ?? 0) - sizeOf(note);
    if (extra <= room) {
      room -= extra;
      return block;
    }
    sizes[i] = sizeOf(note);
    return note;
  });

  // 3. Lay out in order; cut the first text that crosses the bound, and replace what follows by one note.
  let budget = maxBytes - reserved;
  const out: ToolContentBlock[] = [];
  for (let i = 0; i < laid.length; i++) {
    const block = laid[i] as ToolContentBlock;
    const size = (sizes[i] ?? 0) + 1;
    if (size <= budget) {
      out.push(block);
      budget -= size;
      continue;
    }
    const cut = isText(block) ? cutText(block, budget - 1) : undefined;
    if (cut !== undefined) out.push(cut);
    const dropped = laid.length - i - (cut === undefined ? 0 : 1);
    if (dropped > 0) out.push(droppedBlocksNote(dropped, maxBytes));
    break;
  }
  if (structuredNote !== undefined) out.push(structuredNote);
  return { blocks: out, structured: kept };
}

/**
 * Normalizes, redacts, checks and bounds a provider's output. Order matters: secrets are removed from every block and
 * from the structured content before anything is cut, so a cut can never leave part of a secret behind; then the
 * result is bounded as the header of this file says.
 */
export function sanitizeResult(output: ProviderOutput, secrets: readonly string[], options: SanitizeOptions = {}): SanitizedResult {
  const maxBytes = options.maxBytes ?? MAX_RESULT_BYTES;
  const redactor = new SecretRedactor(secrets);
  const sanitizer = new BlockSanitizer(redactor);
  let truncated = options.inputTruncated === true;

  let structured: JsonObject | undefined;
  let droppedNote: ToolContentBlock | undefined;
  const raw = output.structuredContent;
  if (raw !== undefined && raw !== null) {
    const problem = typeof raw !== 'object' || Array.isArray(raw) ? 'it is not a JSON object' : jsonProblem(raw);
    if (problem === undefined) {
      const redacted = redactJson(raw, redactor);
      sanitizer.redactions += redacted.redactions;
      structured = redacted.value as JsonObject;
    } else {
      droppedNote = textBlock(`[structured content dropped: ${sanitizer.text(problem.slice(0, 200))}]`);
      truncated = true;
    }
  }

  // One slot is kept for what replaces structured content (its note, or its JSON as text), so the count stays bounded.
  const entries: readonly unknown[] = Array.isArray(output.content) ? (output.content as unknown[]) : [];
  const room = MAX_RESULT_CONTENT_BLOCKS - (structured !== undefined || droppedNote !== undefined ? 1 : 0);
  const taken = entries.length <= room ? entries : entries.slice(0, room - 1);
  let blocks: ToolContentBlock[] = [];
  taken.forEach((entry, i) => {
    const block = sanitizer.block(entry, i === entries.length - 1, options.inputTruncated === true);
    if (block !== undefined) blocks.push(block);
  });
  if (taken.length < entries.length) {
    blocks.push(textBlock(`[${entries.length - taken.length} more content blocks dropped by Toolplane: a result holds at most ${MAX_RESULT_CONTENT_BLOCKS} blocks]`));
    truncated = true;
  }
  if (droppedNote !== undefined) blocks.push(droppedNote);
  truncated ||= sanitizer.truncated;

  const sanitizedStructuredContent = structured;
  const total = EMPTY_RESULT_BYTES + blocks.reduce((sum, block) => sum + sizeOf(block) + 1, 0) + (structured === undefined ? 0 : STRUCTURED_KEY_BYTES + bytes(canonicalJson(structured)));
  if (total > maxBytes) {
    truncated = true;
    ({ blocks, structured } = bound(blocks, structured, maxBytes));
  }

  const content = blocks.length === 0 ? undefined : blocks;
  const resultJson = canonicalJson({ content, structuredContent: structured, truncated });
  const textContent = contentText(content);
  return {
    ...(content === undefined ? {} : { content }),
    ...(structured === undefined ? {} : { structuredContent: structured }),
    ...(sanitizedStructuredContent === undefined ? {} : { sanitizedStructuredContent }),
    ...(textContent === undefined ? {} : { textContent }),
    truncated,
    redactions: sanitizer.redactions,
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

/** A stored result as replies and replays carry it: its blocks, their text view, structured content, truncation. */
export interface StoredResultContent {
  readonly content?: ToolContentBlock[];
  readonly structuredContent?: JsonObject;
  readonly textContent?: string;
  readonly truncated: boolean;
}

function annotationsInOrder(annotations: ContentAnnotations | undefined): { annotations?: ContentAnnotations } {
  if (annotations === undefined) return {};
  const { audience, priority, lastModified } = annotations;
  return { annotations: { ...(audience === undefined ? {} : { audience }), ...(priority === undefined ? {} : { priority }), ...(lastModified === undefined ? {} : { lastModified }) } };
}

/**
 * A stored block (canonical JSON sorts its keys) with its keys in the contract's order again: replies are sent as the
 * core builds them, so they must already be what parsing them with the contract would make of them.
 */
function inContractOrder(block: ToolContentBlock): ToolContentBlock {
  const annotated = annotationsInOrder(block.annotations);
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text, ...annotated };
    case 'image':
    case 'audio':
      return { type: block.type, data: block.data, mimeType: block.mimeType, ...annotated };
    case 'resource_link': {
      const { uri, name, title, description, mimeType, size } = block;
      return {
        type: 'resource_link',
        uri,
        name,
        ...(title === undefined ? {} : { title }),
        ...(description === undefined ? {} : { description }),
        ...(mimeType === undefined ? {} : { mimeType }),
        ...(size === undefined ? {} : { size }),
        ...annotated,
      };
    }
    case 'resource': {
      const { resource } = block;
      const typed = resource.mimeType === undefined ? {} : { mimeType: resource.mimeType };
      const contents = 'text' in resource ? { uri: resource.uri, ...typed, text: resource.text } : { uri: resource.uri, ...typed, blob: resource.blob };
      return { type: 'resource', resource: contents, ...annotated };
    }
  }
}

/**
 * The content of a stored result (its `resultJson`), for replies and replays. Reads both shapes: content blocks (the
 * text view derived from them) and, for calls recorded before blocks were stored, the text alone.
 */
export function storedResultContent(resultJson: string): StoredResultContent {
  const parsed = JSON.parse(resultJson) as { content?: ToolContentBlock[]; structuredContent?: JsonObject; textContent?: string; truncated?: boolean };
  const textContent = Array.isArray(parsed.content) ? contentText(parsed.content) : parsed.textContent;
  return {
    ...(Array.isArray(parsed.content) ? { content: parsed.content.map(inContractOrder) } : {}),
    ...(parsed.structuredContent === undefined ? {} : { structuredContent: parsed.structuredContent }),
    ...(textContent === undefined ? {} : { textContent }),
    truncated: parsed.truncated === true,
  };
}
