/** What one NATS message of Toolplane may weigh, headers included: the nats-server default `max_payload`. */
export const MAX_MESSAGE_BYTES = 1_048_576;

/** Room kept for headers (Nats-Msg-Id, tracing) so that a body at its limit still fits in one message. */
export const HEADER_ALLOWANCE_BYTES = 16_384;

/** The largest invocation request body (UTF-8 bytes) a runtime may publish; publishers check before sending. */
export const MAX_REQUEST_BYTES = MAX_MESSAGE_BYTES - HEADER_ALLOWANCE_BYTES;

/** The largest sanitized tool result (structured plus text content, UTF-8 bytes) a reply carries; larger ones are truncated. */
export const MAX_RESULT_BYTES = 262_144;

/** The largest lifecycle event body; events hold ids and hashes, never payloads, so anything bigger is malformed. */
export const MAX_EVENT_BYTES = 65_536;

/** How deep a JSON value (arguments, results) may nest; deeper values are refused instead of risking stack exhaustion. */
export const MAX_JSON_DEPTH = 64;

/** The longest deadline a single invocation may ask for. */
export const MAX_INVOCATION_TIMEOUT_MS = 15 * 60 * 1000;
