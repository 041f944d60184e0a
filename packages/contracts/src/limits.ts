/** What one NATS message of Toolplane may weigh, headers included: the nats-server default `max_payload`. */
export const MAX_MESSAGE_BYTES = 1_048_576;

/** Room kept for headers (Nats-Msg-Id, tracing) so that a body at its limit still fits in one message. */
export const HEADER_ALLOWANCE_BYTES = 16_384;

/** The largest invocation request body (UTF-8 bytes) a runtime may publish; publishers check before sending. */
export const MAX_REQUEST_BYTES = MAX_MESSAGE_BYTES - HEADER_ALLOWANCE_BYTES;

/**
 * The largest sanitized tool result: the UTF-8 bytes of the canonical JSON the adapter stores and hashes (content
 * blocks, structured content and the truncation flag). A reply carries it, its text view (derived from the blocks, at
 * most as large) and the receipt, and a call's record carries it as one JSON string (at most twice as large escaped):
 * each within one NATS message. Larger results are cut, explicitly.
 */
export const MAX_RESULT_BYTES = 262_144;

/** The most content blocks a result holds; blocks past it are dropped with a note. */
export const MAX_RESULT_CONTENT_BLOCKS = 1000;

/** The largest lifecycle event body; events hold ids and hashes, never payloads, so anything bigger is malformed. */
export const MAX_EVENT_BYTES = 65_536;

/** How deep a JSON value (arguments, results) may nest; deeper values are refused instead of risking stack exhaustion. */
export const MAX_JSON_DEPTH = 64;

/** The longest deadline a single invocation may ask for. */
export const MAX_INVOCATION_TIMEOUT_MS = 15 * 60 * 1000;

/** The most values one completion answers with: MCP's own cap on `completion/complete` results. */
export const MAX_COMPLETION_VALUES = 100;

/** The longest completion value (and partial value) in characters: a value a client inserts into an argument. */
export const MAX_COMPLETION_VALUE_CHARS = 1024;

/**
 * The most UTF-8 bytes a completion's values take together. A completion's result holds them twice (structured, and
 * as its text view), so at this bound it always fits MAX_RESULT_BYTES whole: its values are never cut by the sanitizer.
 */
export const MAX_COMPLETION_BYTES = 65_536;
