import { z } from 'zod';
import { InvocationReceipt } from './invocation-receipt.js';
import { MAX_RESULT_BYTES, MAX_RESULT_CONTENT_BLOCKS } from './limits.js';
import { JsonObject } from './primitives.js';
import type { TerminalInvocationState } from './states.js';
import { replyEnvelope } from './reply.js';

/** How an invocation ended, in the words a runtime shows to a model. */
export const InvocationStatus = z.enum(['SUCCESS', 'FAILED', 'DENIED', 'UNCERTAIN', 'CANCELLED']);
export type InvocationStatus = z.infer<typeof InvocationStatus>;

/** The status a result reports for each terminal state. */
export const invocationStatusByState = {
  Observed: 'SUCCESS',
  Failed: 'FAILED',
  Denied: 'DENIED',
  Uncertain: 'UNCERTAIN',
  Cancelled: 'CANCELLED',
} as const satisfies Record<TerminalInvocationState, InvocationStatus>;

// The content blocks of a tool result: MCP 2025-11-25's ContentBlock without `_meta` (and without icons), as the
// adapter's sanitizer leaves them: leased secrets removed, base64 checked, annotations validated, bounded.

/** Who a content block is meant for, how important it is (0 least, 1 most) and when it last changed: hints, never policy. */
export const ContentAnnotations = z.strictObject({
  audience: z.array(z.enum(['user', 'assistant'])).min(1).max(2).optional(),
  priority: z.number().min(0).max(1).optional(),
  /** ISO 8601, as MCP has it: a date-time with an offset, or a date. */
  lastModified: z.union([z.iso.datetime({ offset: true }), z.iso.date()]).optional(),
});
export type ContentAnnotations = z.infer<typeof ContentAnnotations>;

const Base64 = z.base64().max(MAX_RESULT_BYTES);
const MimeType = z.string().max(256);
const ContentUri = z.string().min(1).max(2048);

/** An embedded resource's contents: text, or a base64 blob. */
export const EmbeddedResourceContents = z.union([
  z.strictObject({ uri: ContentUri, mimeType: MimeType.optional(), text: z.string().max(MAX_RESULT_BYTES) }),
  z.strictObject({ uri: ContentUri, mimeType: MimeType.optional(), blob: Base64 }),
]);
export type EmbeddedResourceContents = z.infer<typeof EmbeddedResourceContents>;

/** One block of a tool result's content: text, an image or audio clip (base64), a link to a resource, or an embedded resource. */
export const ToolContentBlock = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text'), text: z.string().max(MAX_RESULT_BYTES), annotations: ContentAnnotations.optional() }),
  z.strictObject({ type: z.literal('image'), data: Base64, mimeType: MimeType, annotations: ContentAnnotations.optional() }),
  z.strictObject({ type: z.literal('audio'), data: Base64, mimeType: MimeType, annotations: ContentAnnotations.optional() }),
  z.strictObject({
    type: z.literal('resource_link'),
    uri: ContentUri,
    name: z.string().max(1024),
    title: z.string().max(1024).optional(),
    description: z.string().max(16_384).optional(),
    mimeType: MimeType.optional(),
    /** The resource's size in bytes, as the server says. */
    size: z.number().int().nonnegative().optional(),
    annotations: ContentAnnotations.optional(),
  }),
  z.strictObject({ type: z.literal('resource'), resource: EmbeddedResourceContents, annotations: ContentAnnotations.optional() }),
]);
export type ToolContentBlock = z.infer<typeof ToolContentBlock>;

/** How many bytes base64 text decodes to. */
function decodedBytes(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((base64.length * 3) / 4) - padding);
}

/**
 * One line naming a content block without its payload: type, media type, size and URI, e.g.
 * `[image image/png 1432 bytes]` or `[resource_link text/csv 12 bytes file:///r.csv]`. Untrusted text: escape it for the medium.
 */
export function contentBlockSummary(block: ToolContentBlock): string {
  const parts: string[] = [block.type];
  switch (block.type) {
    case 'text':
      parts.push(`${Buffer.byteLength(block.text, 'utf8')} bytes`);
      break;
    case 'image':
    case 'audio':
      parts.push(block.mimeType, `${decodedBytes(block.data)} bytes`);
      break;
    case 'resource_link':
      if (block.mimeType !== undefined) parts.push(block.mimeType);
      if (block.size !== undefined) parts.push(`${block.size} bytes`);
      parts.push(block.uri);
      break;
    case 'resource': {
      const { resource } = block;
      if (resource.mimeType !== undefined) parts.push(resource.mimeType);
      parts.push(`${'text' in resource ? Buffer.byteLength(resource.text, 'utf8') : decodedBytes(resource.blob)} bytes`, resource.uri);
      break;
    }
  }
  return `[${parts.join(' ')}]`;
}

/**
 * The normalized answer to an invocation: the sanitized content (only on SUCCESS) and the signed receipt. The
 * content is tool output, i.e. untrusted data: `provenance` says so, and a runtime must present it to a model
 * as data, never as instructions. `content` holds the tool's blocks; `textContent` is their text view (text and
 * text resources verbatim, a short note for every other block), for consumers that read text only.
 */
export const InvocationResult = z
  .strictObject({
    status: InvocationStatus,
    content: z.array(ToolContentBlock).max(MAX_RESULT_CONTENT_BLOCKS).optional(),
    structuredContent: JsonObject.optional(),
    textContent: z.string().max(MAX_RESULT_BYTES).optional(),
    /** True when the adapter cut the content to its size bound. */
    truncated: z.boolean(),
    provenance: z.literal('untrusted-tool-data'),
    receipt: InvocationReceipt,
  })
  .superRefine((result, ctx) => {
    if (result.status !== invocationStatusByState[result.receipt.state]) {
      ctx.addIssue({ code: 'custom', path: ['status'], message: `status ${result.status} does not match receipt state ${result.receipt.state}` });
    }
    if (result.status !== 'SUCCESS' && (result.content !== undefined || result.structuredContent !== undefined || result.textContent !== undefined)) {
      ctx.addIssue({ code: 'custom', path: ['status'], message: 'only a successful invocation has content' });
    }
  });
export type InvocationResult = z.infer<typeof InvocationResult>;

/**
 * The reply to an invocation request, sent to `tp.v1.rpl.{tenant}.{workspace}.{replyInbox}`: a result with its
 * receipt (also when the call failed or was denied), or an error when no invocation could be recorded at all
 * (undecodable body, unverifiable token).
 */
export const InvocationReply = replyEnvelope(InvocationResult).meta({
  description: 'The reply to an invocation request: { ok: true, data: InvocationResult } or { ok: false, error: WireError }.',
});
export type InvocationReply = z.infer<typeof InvocationReply>;

/** One item of a bound resource's contents, as a read through the pipeline returns it: text, or a base64 blob. */
export const ResourceContent = z.strictObject({
  uri: z.string().max(2048),
  mimeType: z.string().max(256).optional(),
  text: z.string().optional(),
  blob: z.string().optional(),
});
export type ResourceContent = z.infer<typeof ResourceContent>;

/** The structured content of a successful resource read: the contents as the server returned them, sanitized. */
export const ResourceReadContent = z.object({ contents: z.array(ResourceContent).max(1000) });
export type ResourceReadContent = z.infer<typeof ResourceReadContent>;

/** One message of a fetched prompt: a role and one MCP content block (untrusted data, never instructions of the runtime's own). */
export const PromptMessage = z.object({ role: z.enum(['user', 'assistant']), content: z.looseObject({ type: z.string() }) });
export type PromptMessage = z.infer<typeof PromptMessage>;

/** The structured content of a successful prompt fetch: its description and messages, sanitized. */
export const PromptContent = z.object({ description: z.string().optional(), messages: z.array(PromptMessage).max(1000) });
export type PromptContent = z.infer<typeof PromptContent>;
